// A compiled program: the optimized jaxpr turned into a list of steps over planned
// buffers. A step is a native kernel (one per fusion equation, src/jit/codegen/) or a
// runtime call of a primitive's eager implementation (BLAS, LAPACK, sort, gather...),
// so every primitive runs under jit. Intermediates a later step no longer reads are
// released as soon as their last reader ran, and kernel outputs reuse planned buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/vector_math.h"
#include "core/subprogram.h"
#include "jx/jaxpr.h"

namespace jx::compiler {

// Everything a compile depends on besides the program. Filled from jx::config when a
// jit entry compiles (compile_options_from_config); nothing below reads the config.
struct CompileOptions {
  std::string name = "jit";     // kernel symbols, dumps
  bool optimize = true;         // run the pass pipeline
  bool disk_cache = true;       // kernels' object code in the on-disk cache
  std::string cache_dir;        // the disk cache's directory ("": none)
  std::string dump_dir;         // "": no dumps (dump.h)
  bool verify_passes = false;   // type-check the program after every changing pass
  cpu::VectorIsa vector_isa = cpu::vector_isa();  // the math library's ISA: eager's by default
  // Per argument, whether calls may give its buffer to the program's results
  // (JitOptions::donate_argnums): the kernels that read it last are compiled to write
  // their outputs over it where they can.
  std::vector<bool> donated;
};

// The options the configuration gives a program named `name` now (config.h).
CompileOptions compile_options_from_config(std::string name);

class Executable {
 public:
  virtual ~Executable() = default;
  // args: one concrete array per input of the program (its constants are held inside).
  std::vector<Array> run(std::span<const Array> args) const { return run(args, {}); }
  // donated (empty, or one flag per argument): arguments whose buffers the run may take
  // for its outputs and intermediates (jx::JitOptions::donate_argnums). The caller must
  // treat those arguments as consumed (jx::jit deletes them); a buffer is taken only
  // when no other array, argument or output shares it.
  virtual std::vector<Array> run(std::span<const Array> args, const std::vector<bool>& donated) const = 0;
  // The optimized program as text.
  virtual const std::string& text() const = 0;
  virtual const std::vector<Aval>& in_avals() const = 0;
  // Native kernels this program runs (tests check fusion decisions through it).
  virtual int num_kernels() const = 0;
  // The program on raw buffers when every step is a native kernel, else null (loops run
  // such bodies without arrays: core/subprogram.h).
  virtual const detail::BufferProgram* buffer_program() const { return nullptr; }
};

// Inputs of kernel steps this process copied to row-major buffers before the kernel ran
// (views a kernel could not read in place), for tests.
int64_t kernel_input_copy_count();

// Optimizes, fuses and compiles a traced program. Its kernels are compiled for arguments
// laid out as first_args (row-major when empty: Lowered::compile); a call with another
// layout (views read in place) compiles the kernels it needs on first use.
std::shared_ptr<const Executable> compile_program(const ClosedJaxpr& program, const CompileOptions& options,
                                                 std::span<const Array> first_args = {});

}  // namespace jx::compiler
