// compile_kernel: plan (kernel_plan.cpp) -> IR (loop_emitter.cpp) -> optimized object
// (llvm_session.cpp), with an in-process table of loaded kernels and the disk cache
// (object_cache.cpp) in front of LLVM; plus the kernel_support predicates for index ops
// and reductions.
#include "jit/codegen/loop_kernel.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "backend/cpu/thread_pool.h"
#include "backend/cpu/vector_math.h"
#include "jit/codegen/loop_emitter.h"
#include "jit/codegen/module_target.h"
#include "jit/codegen/object_cache.h"
#include "jit/codegen/scalar_ops.h"
#include "jit/kernel_support.h"
#include "jx/error.h"

#ifndef JX_VERSION_STRING
#define JX_VERSION_STRING "unknown"
#endif

namespace jx::compiler {
namespace codegen {
namespace {

using jx::detail::fail;

std::atomic<int64_t> g_llvm_compiles{0};


bool refuse(std::string* why_not, std::string why) {
  if (why_not) *why_not = std::move(why);
  return false;
}

// The library this code is in, by path, size and modification time: a rebuilt libjx
// (whose emitters may have changed without a version bump) never reuses old entries.
std::string library_identity() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<const void*>(&library_identity), &info) || !info.dli_fname) return "unknown";
  struct stat st;
  if (::stat(info.dli_fname, &st) != 0) return info.dli_fname;
  return std::string(info.dli_fname) + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) +
         "." + std::to_string(st.st_mtim.tv_nsec);
}

// Everything besides the plan that decides the object code: the target, jx's and
// codegen's versions, the vector math functions the vectorizer may call.
const std::string& environment_text() {
  static const std::string text = [] {
    const HostTarget& host = host_target();
    std::ostringstream s;
    s << "jx " JX_VERSION_STRING " codegen " << kCodegenVersion << "\nlibrary " << library_identity() << "\ntarget "
      << host.triple << " " << host.cpu << " " << host.features << "\nvector math";
    for (const llvm::VecDesc& d : vector_math_library())
      s << " " << d.getScalarFnName().str() << "=" << d.getVectorFnName().str() << "/" << d.getVectorizationFactor().getKnownMinValue();
    s << "\n";
    return s.str();
  }();
  return text;
}

// The environment's text hashed once: keys hash this digest and the plan, not the whole
// text (its list of vector math functions is a few kilobytes, which hashed again for
// every kernel was a fifth of the retrace of a program of 6000 small kernels).
const std::string& environment_digest() {
  static const std::string digest = object_cache_key(environment_text()) + "\n";
  return digest;
}

// The disk cache's key of an outlined math function (llvm_session.h).
std::string outlined_math_key(std::string_view symbol) {
  return object_cache_key(environment_digest() + "outlined math " + std::string(symbol) + "\n");
}

// An outlined math function's object from the disk cache in `dir`, or compiled and
// stored there.
std::string outlined_math_object(const std::string& dir, std::string_view symbol) {
  const std::string key = outlined_math_key(symbol);
  if (std::optional<std::string> cached = object_cache_load(dir, key)) return *cached;
  std::string object = compile_outlined_math(symbol).object;
  object_cache_store(dir, key, object);
  return object;
}

// Stores the outlined functions a kernel just stored calls, where the cache lacks them:
// this process may have linked them before (for a kernel without the cache, or with
// another), and a later process loading the kernel should find them beside it.
void store_outlined_math(const std::string& dir, const std::vector<std::string>& symbols) {
  for (const std::string& symbol : symbols) {
    const std::string key = outlined_math_key(symbol);
    std::error_code ignored;
    if (std::filesystem::exists(object_cache_path(dir, key), ignored)) continue;
    if (std::optional<std::string> object = OutlinedMathSource::linked(symbol)) object_cache_store(dir, key, *object);
  }
}

void write_file(const std::string& path, const std::string& text) {
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail("jit", "cannot write the dump file ", path);
  out << text;
}

// Identical plans compiled in one process share one loaded object.
std::mutex g_loaded_mu;
std::unordered_map<std::string, std::weak_ptr<const CompiledLoop>> g_loaded;
size_t g_loaded_pruned_size = 0;

}  // namespace

int64_t llvm_compile_count() { return g_llvm_compiles.load(); }

std::shared_ptr<const CompiledLoop> CompiledLoop::compile(const KernelPlan& plan, const KernelOptions& options) {
  std::vector<DType> output_dtypes;
  for (const PlanOutput& o : plan.outputs) output_dtypes.push_back(o.dtype);
  LoopSchedule schedule = plan.schedule;
  // Elementwise loop nests take the short pipeline; reductions and rows kernels, whose
  // block loops and accumulators need O2's whole simplification, the full one.
  const Optimization optimization =
      plan.kind == KernelPlan::Kind::Loop ? Optimization::kElementwiseLoop : Optimization::kFull;
  return compile_emitted(plan.str(), schedule, std::move(output_dtypes), options, optimization,
                         [&](llvm::Module& module, std::string_view key) { emit_loop_kernel(module, plan, key); });
}

std::shared_ptr<const CompiledLoop> CompiledLoop::compile_emitted(const std::string& plan_text, const LoopSchedule& schedule,
                                                                  std::vector<DType> output_dtypes,
                                                                  const KernelOptions& options,
                                                                  Optimization optimization, const Emit& emit) {
  // The emitted transcendentals name the options' vector ISA (scalar_ops.h), so it is part
  // of the key: kernels compiled for another ISA are other kernels.
  const std::string key = object_cache_key(environment_digest() + "vector isa " +
                                           cpu::vector_isa_name(options.vector_isa) + "\n" + plan_text);
  const bool use_disk_cache = options.disk_cache && !options.cache_dir.empty();
  const bool dumping = !options.dump_dir.empty();
  if (!dumping) {
    std::lock_guard<std::mutex> lock(g_loaded_mu);
    if (auto it = g_loaded.find(key); it != g_loaded.end())
      if (auto loaded = it->second.lock()) return loaded;
  }
  const std::string name = options.name.empty() ? "kernel" : options.name;
  auto loop = std::make_shared<CompiledLoop>();
  auto link = [&](const std::string& object) {
    // The outlined math this object calls, if the process has not linked it yet, comes
    // from the same disk cache.
    OutlinedMathSource outlined([&](std::string_view symbol) {
      return use_disk_cache ? outlined_math_object(options.cache_dir, symbol) : compile_outlined_math(symbol).object;
    });
    loop->object_ = load_object(object, name);
    loop->fn_ = reinterpret_cast<Fn>(loop->object_->lookup(kernel_symbol(key)));
    if (schedule.mode == LoopSchedule::Mode::FullReduce || schedule.row_parts > 1 || !schedule.totals.empty())
      loop->finish_ = reinterpret_cast<FinishFn>(loop->object_->lookup(finish_symbol(key)));
  };
  bool linked = false;
  if (use_disk_cache && !dumping) {
    if (std::optional<std::string> cached = object_cache_load(options.cache_dir, key)) {
      try {
        link(*cached);
        linked = true;
      } catch (const Error&) {
        // A well-formed entry holding bad object code: compile afresh, and overwrite it.
        loop->object_.reset();
        object_cache_count_unlinkable();
      }
    }
  }
  if (!linked) {
    llvm::LLVMContext context;
    auto module = std::make_unique<llvm::Module>(name, context);
    set_module_vector_isa(*module, options.vector_isa);
    emit(*module, key);
    CompiledModule compiled = compile_module(*module, optimization, dumping);
    ++g_llvm_compiles;
    if (dumping) {
      write_file(options.dump_dir + "/" + name + ".ll", compiled.ir);
      write_file(options.dump_dir + "/" + name + ".s", compiled.assembly);
      write_file(options.dump_dir + "/" + name + ".plan", plan_text);
      write_file(options.dump_dir + "/" + name + ".remarks", compiled.remarks);
    }
    if (use_disk_cache) {
      object_cache_store(options.cache_dir, key, compiled.object);
      store_outlined_math(options.cache_dir, compiled.outlined);
    }
    link(compiled.object);
  }
  loop->schedule_ = schedule;
  loop->output_dtypes_ = std::move(output_dtypes);
  // Threading: a unit holds elements_per_unit points of `cost` (transcendentals count
  // several times a plain op). A chunk must hold about 2 * kParallelGrain plain element
  // operations and never fewer than kMinChunkElements points. Workers spin briefly
  // between regions (thread_pool.cpp), so splitting a kernel issued after another costs
  // about a microsecond: a 16000-element sin + cos takes 11.8 µs on 2 threads against
  // 16.7 µs on one (it took 4x longer split when every split woke a sleeping worker).
  constexpr int64_t kMinChunkElements = 4096;
  const int64_t per_unit = std::max<int64_t>(1, schedule.elements_per_unit);
  const int64_t work = per_unit * std::max<int64_t>(1, schedule.cost);
  loop->grain_ = std::max<int64_t>({1, 2 * cpu::kParallelGrain / work, (kMinChunkElements + per_unit - 1) / per_unit});
  std::lock_guard<std::mutex> lock(g_loaded_mu);
  if (g_loaded.size() >= 2 * g_loaded_pruned_size + 64) {  // forget unloaded kernels now and then
    std::erase_if(g_loaded, [](const auto& entry) { return entry.second.expired(); });
    g_loaded_pruned_size = g_loaded.size();
  }
  g_loaded[key] = loop;
  return loop;
}

void CompiledLoop::run(const void* const* inputs, void* const* outputs) const {
  const int64_t units = schedule_.units;
  if (!schedule_.totals.empty()) {
    run_totaling_rows(inputs, outputs);
    return;
  }
  if (schedule_.row_parts > 1) {
    // A column reduction in parts of rows: each part's partial results (8 bytes hold any
    // accumulator), combined by the finish function.
    const size_t per_output = static_cast<size_t>(schedule_.row_parts * schedule_.kept_elements);
    std::vector<uint64_t> storage(per_output * output_dtypes_.size());
    std::vector<void*> partials(output_dtypes_.size());
    for (size_t m = 0; m < partials.size(); ++m) partials[m] = storage.data() + m * per_output;
    if (units <= grain_)
      fn_(inputs, partials.data(), 0, units);
    else
      cpu::parallel_for(units, grain_, [&](int64_t b, int64_t e) { fn_(inputs, partials.data(), b, e); });
    finish_(partials.data(), outputs, schedule_.row_parts);
    return;
  }
  if (schedule_.mode != LoopSchedule::Mode::FullReduce) {
    // Small kernels (most loop bodies) call the function directly: the std::function
    // parallel_for takes would cost an allocation per call.
    if (units <= grain_) {
      if (units > 0) fn_(inputs, outputs, 0, units);
      return;
    }
    cpu::parallel_for(units, grain_, [&](int64_t b, int64_t e) { fn_(inputs, outputs, b, e); });
    return;
  }
  // One partial per chunk and output (8 bytes holds any kernel dtype), combined in chunk
  // order by the finish function.
  // A small reduction (a loop body's, say) keeps them on the stack.
  constexpr size_t kOnStack = 64;
  const size_t num_partials = static_cast<size_t>(units) * output_dtypes_.size();
  const size_t num_outputs = output_dtypes_.size();
  uint64_t stack_partials[kOnStack];
  void* stack_ptrs[kOnStack / 4];
  std::vector<uint64_t> heap_partials;
  std::vector<void*> heap_ptrs;
  uint64_t* storage = stack_partials;
  void** partials = stack_ptrs;
  if (num_partials > kOnStack || num_outputs > kOnStack / 4) {
    heap_partials.resize(num_partials + 1);
    heap_ptrs.resize(num_outputs + 1);
    storage = heap_partials.data();
    partials = heap_ptrs.data();
  }
  for (size_t m = 0; m < num_outputs; ++m) partials[m] = storage + m * static_cast<size_t>(units);
  if (units > 0 && units <= grain_) {
    fn_(inputs, partials, 0, units);
  } else {
    cpu::parallel_for(units, grain_, [&](int64_t b, int64_t e) { fn_(inputs, partials, b, e); });
  }
  finish_(partials, outputs, units);
}

// A rows kernel with totals (LoopSchedule::totals): the kernel stores each total as one
// partial per block of chunk_rows rows (8 bytes hold any accumulator), at the block's
// index, so every range it runs starts at a block's start; the finish function combines
// the partials in block order, whatever the threads were.
void CompiledLoop::run_totaling_rows(const void* const* inputs, void* const* outputs) const {
  const int64_t rows = schedule_.units, block = std::max<int64_t>(1, schedule_.chunk_rows);
  const int64_t blocks = (rows + block - 1) / block;
  const size_t num_outputs = output_dtypes_.size();
  std::vector<uint64_t> storage(static_cast<size_t>(blocks) * schedule_.totals.size());
  std::vector<void*> into(outputs, outputs + num_outputs), partials(num_outputs, nullptr);
  for (size_t t = 0; t < schedule_.totals.size(); ++t) {
    const size_t m = static_cast<size_t>(schedule_.totals[t]);
    into[m] = partials[m] = storage.data() + t * static_cast<size_t>(blocks);
  }
  auto run_blocks = [&](int64_t b, int64_t e) { fn_(inputs, into.data(), b * block, std::min(e * block, rows)); };
  const int64_t grain = (grain_ + block - 1) / block;
  if (blocks <= grain) {
    if (blocks > 0) run_blocks(0, blocks);
  } else {
    cpu::parallel_for(blocks, grain, run_blocks);
  }
  finish_(partials.data(), outputs, blocks);
}

namespace {

class LoopKernel final : public Kernel {
 public:
  explicit LoopKernel(std::shared_ptr<const CompiledLoop> loop) : loop_(std::move(loop)) {}
  void run(const void* const* inputs, void* const* outputs) const override { loop_->run(inputs, outputs); }

 private:
  std::shared_ptr<const CompiledLoop> loop_;
};

}  // namespace
}  // namespace codegen

bool index_op_supported(const Equation& eqn, std::string* why_not) {
  if (!codegen::is_index_op(*eqn.primitive)) return codegen::refuse(why_not, eqn.primitive->name() + " is not an index map");
  for (const Var& v : eqn.outputs)
    if (!native_kernel_dtype(v.aval.dtype))
      return codegen::refuse(why_not, "loop kernels do not handle dtype " + std::string(dtype_name(v.aval.dtype)));
  for (const Atom& a : eqn.inputs)
    if (!native_kernel_dtype(a.aval().dtype))
      return codegen::refuse(why_not, "loop kernels do not handle dtype " + std::string(dtype_name(a.aval().dtype)));
  return true;
}

bool reduction_supported(const Equation& eqn, std::string* why_not) {
  const std::string& name = eqn.primitive->name();
  const lowering::Reducer& reducer = eqn.primitive->rules().lowering.reducer;
  if (!reducer) return codegen::refuse(why_not, name + " is not a reduction a loop kernel can end in");
  if (eqn.inputs.size() != 1 || eqn.outputs.size() != 1) return codegen::refuse(why_not, name + " takes one operand");
  const DType dtype = eqn.inputs[0].aval().dtype;
  if (!native_kernel_dtype(dtype) || eqn.outputs[0].aval.dtype != dtype)
    return codegen::refuse(why_not, "loop kernels do not reduce dtype " + std::string(dtype_name(dtype)));
  if (!reducer.native(dtype))
    return codegen::refuse(why_not, name + " of " + std::string(dtype_name(dtype)) + " runs eagerly");
  return true;
}

bool rows_fusion_supported(const Jaxpr& fused, std::string* why_not) {
  try {
    (void)codegen::plan_kernel(fused, "rows");
    return true;
  } catch (const Error& e) {
    return codegen::refuse(why_not, e.what());
  }
}

std::unique_ptr<Kernel> compile_kernel(const Jaxpr& fused, std::string_view kind, const KernelOptions& options,
                                       const InputStrides& input_strides, const OutputsOverInputs& over) {
  if (kind == "dot") {
    for (const std::vector<int64_t>& s : input_strides)
      if (!s.empty()) detail::fail("jit", "a dot kernel reads row-major operands; its inputs cannot be strided views");
    return codegen::compile_dot_kernel(fused, options, over);
  }
  if (kind == "scalar_loop") {
    for (const std::vector<int64_t>& s : input_strides)
      if (!s.empty()) detail::fail("jit", "a scalar_loop kernel reads row-major operands; its inputs cannot be strided views");
    if (!over.empty()) detail::fail("jit", "internal: a scalar_loop kernel writes no output over an input");
    return codegen::compile_scalar_loop_kernel(fused, options);
  }
  codegen::KernelPlan plan = codegen::plan_kernel(fused, kind, input_strides, options.vector_isa, over);
  return std::make_unique<codegen::LoopKernel>(codegen::CompiledLoop::compile(plan, options));
}

OutputsOverInputs outputs_over_inputs_allowed(const Jaxpr& fused, std::string_view kind) {
  if (kind == "dot") return codegen::dot_outputs_over_inputs_allowed(fused);
  if (kind != "loop" && kind != "rows") return {};
  const codegen::KernelPlan plan = codegen::plan_kernel(fused, kind);
  return codegen::writable_pairs(plan, [](int) { return true; });
}

}  // namespace jx::compiler
