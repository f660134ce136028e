// compile_program: optimize (pipeline.h), compile every fusion to a native kernel
// (codegen/kernel.h), and turn the program into steps over value slots.
//
// Memory: each slot is released right after its last reader ran. A kernel's output
// buffer is recycled for a later kernel output of the same size when nothing else holds
// it (a runtime call may have returned a view of it, which keeps it alive and out of
// reuse), and the buffers of one run are kept for the next, so a steady-state call
// allocates only the arrays it returns.
#include "jit/executable.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <unordered_map>

#include "backend/backend.h"
#include "core/array_internal.h"
#include "core/subprogram.h"
#include "jit/codegen/kernel.h"
#include "jit/dump.h"
#include "jit/fusion_primitive.h"
#include "jit/pipeline.h"
#include "jx/config.h"
#include "jx/error.h"
#include "lax/data_movement.h"

namespace jx::compiler {
namespace {

// Where a step reads an operand from: a slot, or a constant (literal) held here.
struct Operand {
  int slot = -1;
  Array constant;
};

struct Step {
  const Equation* eqn = nullptr;
  std::unique_ptr<Kernel> kernel;  // null: a runtime call of the primitive's impl
  std::vector<Operand> inputs;
  std::vector<int> outputs;
  std::vector<Aval> out_avals;
  std::vector<int> release;  // slots whose last reader is this step
  bool runs_subprograms = false;  // a runtime call of a control-flow primitive
};

// The sub-programs (loop bodies, predicates, branches) of one compiled program's
// control-flow equations, each compiled on first use into a program of its own and kept
// for later runs (core/subprogram.h). Only the programs of those equations' params are
// compiled: any other program a rule interprets at run time stays interpreted.
class CompiledSubprograms final : public detail::SubprogramRunner {
 public:
  explicit CompiledSubprograms(CompileOptions options) : options_(std::move(options)) {}
  void allow(const ClosedJaxpr* program) { compiled_.emplace(program, nullptr); }
  bool empty() const { return compiled_.empty(); }

  std::vector<Array> run(const ClosedJaxpr& program, std::span<const Array> args) const override {
    auto it = compiled_.find(&program);
    if (it == compiled_.end()) return eval_jaxpr(program, args);
    std::shared_ptr<const Executable> exe;
    {
      std::lock_guard lock(mu_);
      if (!it->second) {
        CompileOptions o = options_;
        o.name += ".body" + std::to_string(num_compiled_++);
        it->second = compile_program(program, o);
      }
      exe = it->second;
    }
    return exe->run(args);
  }

 private:
  CompileOptions options_;
  mutable std::mutex mu_;
  mutable int num_compiled_ = 0;
  // The keys are fixed at construction (so lookups need no lock); values fill lazily.
  mutable std::unordered_map<const ClosedJaxpr*, std::shared_ptr<const Executable>> compiled_;
};

// Recycled kernel output buffers, by byte size.
class BufferPool {
 public:
  Array take(const Aval& aval) {
    size_t nbytes = static_cast<size_t>(aval.size() * itemsize(aval.dtype));
    auto it = free_.find(nbytes);
    if (it != free_.end() && !it->second.empty()) {
      std::shared_ptr<detail::Storage> s = std::move(it->second.back());
      it->second.pop_back();
      return wrap(std::move(s), aval);
    }
    return detail::alloc_array(aval);
  }
  // Releases values[slot], keeping its storage for reuse if nothing else holds it: no
  // view (which would share the storage: its count is then above this slot's and `s`)
  // and no other slot (a runtime call may return its input itself, sharing the whole
  // array: the impl's count is then above one). Both are counts, so releasing is O(1).
  void give(std::vector<Array>& values, int slot) {
    Array& x = values[slot];
    if (!x.valid()) return;
    std::shared_ptr<detail::Storage> s = x.impl().storage;
    const bool shared = !s || s.use_count() != 2 || x.impl_ptr().use_count() != 1 || x.impl().offset != 0 ||
                        x.nbytes() == 0;
    x = Array();
    if (!shared && s.use_count() == 1) free_[s->nbytes].push_back(std::move(s));
  }
  void clear() { free_.clear(); }
  // Buffers kept from a run on another device (or committed differently) are not this
  // run's to reuse.
  void use_placement(detail::Placement p) {
    if (p.device != placement_.device || p.committed != placement_.committed) free_.clear();
    placement_ = p;
  }

 private:
  static Array wrap(std::shared_ptr<detail::Storage> storage, const Aval& aval) {
    return detail::adopt_storage(std::move(storage), aval);
  }
  std::unordered_map<size_t, std::vector<std::shared_ptr<detail::Storage>>> free_;
  detail::Placement placement_;
};

Array contiguous_input(const Array& x) {
  const std::vector<int64_t>& strides = detail::strides(x);
  if (std::all_of(strides.begin(), strides.end(), [](int64_t st) { return st == 0; })) {
    Array out = detail::alloc_array(x.aval());
    lax::movement::fill_contiguous(x.itemsize(), detail::mutable_data<void>(out), x.size(), detail::raw_data(x));
    return out;
  }
  return detail::contiguous(x);
}

class ProgramExecutable final : public Executable {
 public:
  ProgramExecutable(ClosedJaxpr program, const CompileOptions& options, const Dump& dump);

  std::vector<Array> run(std::span<const Array> args) const override;
  const std::string& text() const override { return text_; }
  const std::vector<Aval>& in_avals() const override { return in_avals_; }
  int num_kernels() const override { return num_kernels_; }

 private:
  int slot_of(const Var& v) const {
    auto it = slots_.find(v.id);
    if (it == slots_.end()) detail::fail("jit", "internal: variable ", v.id, " has no slot");
    return it->second;
  }
  Operand operand_of(const Atom& a) const {
    if (a.is_var()) return Operand{slot_of(a.var()), {}};
    return Operand{-1, a.literal().value};
  }

  ClosedJaxpr program_;
  std::string text_;
  std::vector<Aval> in_avals_;
  std::unordered_map<int64_t, int> slots_;
  int num_slots_ = 0;
  std::vector<int> const_slots_, arg_slots_;
  std::vector<Step> steps_;
  std::vector<Operand> outputs_;
  std::vector<bool> kernel_owned_;  // slot holds a buffer a kernel step allocated
  int num_kernels_ = 0;
  mutable std::mutex pool_mu_;
  mutable BufferPool pool_;
  CompiledSubprograms subprograms_;
};

}  // namespace
}  // namespace jx::compiler

namespace jx::compiler {
namespace {

ProgramExecutable::ProgramExecutable(ClosedJaxpr program, const CompileOptions& options, const Dump& dump)
    : program_(std::move(program)), text_(program_.str()), in_avals_(program_.in_avals()), subprograms_(options) {
  const Jaxpr& j = program_.jaxpr;
  auto new_slot = [&](const Var& v) {
    slots_[v.id] = num_slots_++;
    kernel_owned_.push_back(false);
    return num_slots_ - 1;
  };
  for (const Var& v : j.constvars) const_slots_.push_back(new_slot(v));
  for (const Var& v : j.invars) arg_slots_.push_back(new_slot(v));
  std::unordered_map<int, size_t> last_use;  // slot -> step index
  for (const Equation& e : j.eqns) {
    Step s;
    s.eqn = &e;
    for (const Atom& a : e.inputs) {
      s.inputs.push_back(operand_of(a));
      if (a.is_var()) last_use[s.inputs.back().slot] = steps_.size();
    }
    for (const Var& v : e.outputs) {
      s.outputs.push_back(new_slot(v));
      s.out_avals.push_back(v.aval);
    }
    if (e.primitive == &fusion_primitive()) {
      const JaxprRef& body = e.params.get_jaxpr("jaxpr");
      KernelOptions ko{.name = options.name + "." + e.params.get_string("name"),
                       .dump_dir = dump.dir(),
                       .disk_cache = options.disk_cache,
                       .cache_dir = options.cache_dir,
                       .vector_isa = options.vector_isa};
      s.kernel = compile_kernel(body->jaxpr, e.params.get_string("kind"), ko);
      ++num_kernels_;
      for (int o : s.outputs) kernel_owned_[o] = true;
    } else if (e.primitive->has(kCallsSubprogram) && !e.primitive->has(kCall)) {
      // Control flow (plain calls were inlined): its bodies run compiled.
      for (const auto& [name, value] : e.params.items())
        if (const auto* sub = std::get_if<JaxprRef>(&value); sub && *sub) subprograms_.allow(sub->get());
      s.runs_subprograms = true;
    }
    steps_.push_back(std::move(s));
  }
  // Program outputs and arguments are never released early nor recycled.
  std::vector<bool> pinned(num_slots_, false);
  for (int sl : const_slots_) pinned[sl] = true;
  for (int sl : arg_slots_) pinned[sl] = true;
  for (const Atom& a : j.outvars) {
    outputs_.push_back(operand_of(a));
    if (a.is_var()) pinned[outputs_.back().slot] = true;
  }
  for (auto [slot, step] : last_use)
    if (!pinned[slot]) steps_[step].release.push_back(slot);
}

std::vector<Array> ProgramExecutable::run(std::span<const Array> args) const {
  if (args.size() != arg_slots_.size())
    detail::fail("jit", "the program takes ", arg_slots_.size(), " arguments, got ", args.size());
  std::vector<Array> values(num_slots_);
  for (size_t i = 0; i < const_slots_.size(); ++i) values[const_slots_[i]] = program_.consts[i];
  for (size_t i = 0; i < args.size(); ++i) {
    const Aval& want = in_avals_[i];
    if (args[i].shape() != want.shape || args[i].dtype() != want.dtype)
      detail::fail("jit", "argument ", i, " is ", args[i].aval().str(), " but the program was compiled for ",
                   want.str());
    values[arg_slots_[i]] = args[i];
  }
  // The program runs on its arguments' device (constants, made when it was traced, are
  // host memory every CPU device reads); its buffers are allocated there.
  detail::Placement placement = detail::placement_of("jit", args);
  if (!placement.device) placement = {detail::current_device(), detail::current_device_committed()};
  // Its kernels are host code reading host pointers: a platform with device memory needs
  // its own executable (the GPU backend's), so it is refused here, not misread.
  if (!placement.device->backend->host_memory())
    detail::fail("jit", "compiled programs run on host-memory platforms; ", Device(placement.device).str(),
                 " has device memory and no jit backend yet");
  detail::DeviceScope device_scope(placement);
  // Take the recycled buffers for this run (a concurrent run allocates its own).
  BufferPool pool;
  {
    std::unique_lock lock(pool_mu_, std::try_to_lock);
    if (lock.owns_lock()) std::swap(pool, pool_);
  }
  pool.use_placement(placement);
  std::vector<Array> ins;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (const Step& s : steps_) {
    ins.clear();
    for (const Operand& o : s.inputs) ins.push_back(o.slot >= 0 ? values[o.slot] : o.constant);
    if (s.kernel) {
      detail::AllocScope scope(s.eqn->primitive->name());  // out-of-memory errors name the fusion
      in_ptrs.clear();
      out_ptrs.clear();
      for (Array& x : ins) {
        // Kernels read row-major inputs: views are copied (a broadcast scalar, like
        // jnp::ones, by a fill).
        if (!detail::is_contiguous(x)) x = contiguous_input(x);
        in_ptrs.push_back(detail::raw_data(x));
      }
      for (size_t k = 0; k < s.outputs.size(); ++k) {
        values[s.outputs[k]] = pool.take(s.out_avals[k]);
        out_ptrs.push_back(const_cast<void*>(detail::raw_data(values[s.outputs[k]])));
      }
      s.kernel->run(in_ptrs.data(), out_ptrs.data());
    } else {
      detail::SubprogramScope compiled_bodies(s.runs_subprograms ? &subprograms_ : nullptr);
      std::vector<Array> outs = s.eqn->primitive->run_impl(ins, s.eqn->params, s.out_avals);
      for (size_t k = 0; k < s.outputs.size(); ++k) values[s.outputs[k]] = std::move(outs[k]);
    }
    ins.clear();
    for (int sl : s.release) {
      if (kernel_owned_[sl]) pool.give(values, sl);
      else values[sl] = Array();
    }
  }
  std::vector<Array> outs;
  outs.reserve(outputs_.size());
  for (const Operand& o : outputs_) outs.push_back(o.slot >= 0 ? values[o.slot] : o.constant);
  {
    std::unique_lock lock(pool_mu_, std::try_to_lock);
    if (lock.owns_lock()) std::swap(pool, pool_);
  }
  return outs;
}

}  // namespace

CompileOptions compile_options_from_config(std::string name) {
  const Config c = config::get();
  return CompileOptions{.name = std::move(name),
                        .disk_cache = c.disk_cache,
                        .cache_dir = c.cache_dir,
                        .dump_dir = c.dump_dir,
                        .verify_passes = c.verify_passes,
                        .vector_isa = cpu::vector_isa()};
}

std::shared_ptr<const Executable> compile_program(const ClosedJaxpr& program, const CompileOptions& options) {
  Dump dump(options.name, options.dump_dir);
  ClosedJaxpr optimized = optimize_program(
      program, PipelineOptions{.optimize = options.optimize, .verify = options.verify_passes}, dump);
  return std::make_shared<ProgramExecutable>(std::move(optimized), options, dump);
}

}  // namespace jx::compiler
