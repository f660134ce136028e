// The process-wide LLVM ORC session: one LLJIT for the host, created lazily (and
// thread-safely) the first time a kernel is compiled, plus the optimize-and-codegen step
// every kernel module goes through. Kernels are loaded as object files (freshly compiled
// or from the disk cache, object_cache.h), each into its own JITDylib, so a kernel is
// unloaded when its last user goes away (its symbols are named after its cache key, so
// object code is only ever found by the plan it was compiled for). Undefined
// symbols (libm, libmvec's _ZGV* vector math, memcpy, jx's jx_rt_* helpers) resolve
// against the process (LLJIT's process-symbols JITDylib, plus the helpers by address),
// and the outlined inline math of long kernels (jx_outline.*, scalar_ops.h) against
// functions a generator compiles the first time an object names them.
//
// Cost on the 2-core Zen 4 (CPU time; wall time is several times more when the machine
// is shared): creating the LLJIT ~1 ms once; a small fused loop (sin(x)+cos(y), 512-bit
// vectorized through libmvec) ~7 ms, of which the O2 pipeline ~2.3 ms and the code
// generator ~4 ms; a 20-op chain ~10 ms (kElementwiseLoop below cuts the pipeline's part
// to about a third); loading a kernel from the disk cache in a fresh process ~0.5 ms
// (~0.15 ms once the process has loaded one).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llvm {
class Function;
class Module;
}  // namespace llvm

namespace jx::compiler::codegen {

// The machine kernels are compiled for (part of the disk cache's key).
struct HostTarget {
  std::string triple, cpu, features;
};
const HostTarget& host_target();
// Bytes of the widest vector register the host's features allow (64 with AVX-512, 32
// with AVX, else 16).
int64_t host_vector_bytes();
// Whether the host masks vector lanes in registers (AVX-512's k registers), where a
// masked store costs a plain one. AVX2's masked store (vmaskmovps) cost 7.7 ns on the
// 2-core Zen 3 (znver3), against 1.5 for a plain store.
bool host_masks_vectors();

// Object code loaded into the JIT. Unloaded on destruction.
class LoadedObject {
 public:
  LoadedObject(void* dylib, std::string name) : dylib_(dylib), name_(std::move(name)) {}
  ~LoadedObject();
  LoadedObject(const LoadedObject&) = delete;
  LoadedObject& operator=(const LoadedObject&) = delete;
  // The address of a symbol the object defines; raises jx::Error("[jit] ...") if absent.
  void* lookup(std::string_view symbol) const;

 private:
  void* dylib_;  // llvm::orc::JITDylib*
  std::string name_;
};

// Links an object file into the JIT (its undefined symbols resolve against libm,
// libmvec, jx's runtime helpers and the rest of the process). Raises jx::Error on a
// malformed object.
std::shared_ptr<LoadedObject> load_object(std::string_view object, std::string_view name);

struct CompiledModule {
  std::string object;    // an ELF relocatable for the host
  std::string ir;        // optimized IR, when dumps were asked for
  std::string assembly;  // the same code as assembly, when dumps were asked for
  std::string remarks;   // the loop vectorizer's remarks (one a line), when dumps were asked for
  std::vector<std::string> outlined;  // the outlined math functions it calls (scalar_ops.h)
};
// The optimization a module gets before code generation.
enum class Optimization {
  // LLVM's O2. Reductions, rows kernels and scalar loops need its whole simplification
  // pipeline: their block loops are unrolled fully, their stack accumulators promoted to
  // registers after that (SROA), their counted loops given closed forms (indvars).
  kFull,
  // Elementwise loop kernels: the emitter writes them in SSA form, one loop nest, nothing
  // to inline or promote but the body function. Canonicalize the loops, vectorize them
  // through the vector math table, clean up: the passes O2 runs that change these
  // kernels' code, at a third of O2's time (O2 runs InstCombine eight times).
  kElementwiseLoop,
};

// Runs the optimization pipeline (with the vector math table, so loops vectorize through
// libmvec) and the host's code generator on `module`. Thread-safe: each call leases a
// target machine of its own (a module's LLVMContext must be the caller's alone).
CompiledModule compile_module(llvm::Module& module, Optimization optimization, bool want_dumps);

// One outlined inline-math function (scalar_ops.h's is_outlined_math_symbol) in a module
// of its own, optimized like an elementwise loop: what the session's generator links
// the first time a kernel names it. Raises jx::InternalError for a malformed name.
CompiledModule compile_outlined_math(std::string_view symbol);

// Where the session's generator gets an outlined function's object: while a scope is
// alive on a thread, lookups made on that thread (linking a kernel) ask `source` (which
// may read it from the disk cache) instead of compiling it afresh.
class OutlinedMathSource {
 public:
  using Source = std::function<std::string(std::string_view symbol)>;
  explicit OutlinedMathSource(Source source);
  ~OutlinedMathSource();
  OutlinedMathSource(const OutlinedMathSource&) = delete;
  OutlinedMathSource& operator=(const OutlinedMathSource&) = delete;
  // The innermost scope's source on this thread, or compile_outlined_math's object.
  static std::string object_for(std::string_view symbol);
  // The object the session linked for `symbol`, if it has linked it.
  static std::optional<std::string> linked(std::string_view symbol);

 private:
  Source source_;
  const OutlinedMathSource* outer_;
};

// Gives a kernel function the host's target-cpu / target-features and the preferred
// vector width (see kPreferVectorWidth in llvm_session.cpp).
void set_host_attributes(llvm::Function& f);

// What the one-time creation of the LLJIT took (0 before it was created).
double jit_creation_seconds();

}  // namespace jx::compiler::codegen
