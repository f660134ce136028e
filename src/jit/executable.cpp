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
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <llvm/ADT/SmallVector.h>

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"
#include "core/array_internal.h"
#include "core/subprogram.h"
#include "jit/codegen/kernel.h"
#include "jit/dump.h"
#include "jit/fusion_primitive.h"
#include "jit/pipeline.h"
#include "transforms/effects.h"
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

// Runs independent compile tasks (each one kernel through LLVM, single-threaded) on the
// thread pool's threads, the calling one among them, each thread taking the next task
// when it finishes one: a program of several kernels compiles in about the time of its
// largest ones. The first error a task raised is rethrown.
void compile_concurrently(const std::vector<std::function<void()>>& tasks) {
  if (tasks.size() <= 1) {
    for (const auto& t : tasks) t();
    return;
  }
  std::atomic<size_t> next{0};
  const auto workers = static_cast<int64_t>(std::min<size_t>(tasks.size(), static_cast<size_t>(cpu::num_threads())));
  cpu::parallel_for(workers, 1, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w)
      for (size_t i = next++; i < tasks.size(); i = next++) tasks[i]();
  });
}

// A fusion step's kernel for row-major operands, compiled when a call first needs it:
// with the program for the layout of the call that compiles it, else by the first call
// (or loop body run on buffers) that reads the step's arguments row-major. So a first
// call on views (jnp::ones) compiles only the kernels of its own layout.
// `over`: outputs it writes into donated inputs (the step's donating kernel).
class RowMajorKernel {
 public:
  RowMajorKernel(const Jaxpr& body, std::string kind, KernelOptions options, OutputsOverInputs over = {})
      : body_(body), kind_(std::move(kind)), options_(std::move(options)), over_(std::move(over)) {}
  const Kernel& get() const {
    if (const Kernel* k = ready_.load(std::memory_order_acquire)) return *k;
    std::lock_guard lock(mu_);
    if (!kernel_) {
      kernel_ = compile_kernel(body_, kind_, options_, {}, over_);
      ready_.store(kernel_.get(), std::memory_order_release);
    }
    return *kernel_;
  }
  const Jaxpr& body() const { return body_; }
  const std::string& kind() const { return kind_; }
  const KernelOptions& options() const { return options_; }
  const OutputsOverInputs& over() const { return over_; }

 private:
  const Jaxpr& body_;  // the fusion equation's, which the executable's program holds
  std::string kind_;
  KernelOptions options_;  // layout variants reuse them
  OutputsOverInputs over_;
  mutable std::mutex mu_;
  mutable std::unique_ptr<Kernel> kernel_;
  mutable std::atomic<const Kernel*> ready_{nullptr};
};

// An output of a kernel step written into the buffer of a donated argument.
struct Donation {
  int output = -1;
  int arg = -1;
};

struct Step {
  const Equation* eqn = nullptr;
  std::unique_ptr<RowMajorKernel> kernel;  // null: a runtime call of the primitive's impl
  // Where the step reads donated arguments last: the outputs it writes over them, and the
  // kernel compiled to (run when every one of those buffers is the call's to give).
  std::vector<Donation> donations;
  std::unique_ptr<RowMajorKernel> donating;
  std::vector<Operand> inputs;
  std::vector<int> arg_of_input;   // per input: the program argument it is, or -1
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
    const Executable* exe = executable(program);
    return exe ? exe->run(args) : eval_jaxpr(program, args);
  }
  const detail::BufferProgram* buffer_program(const ClosedJaxpr& program) const override {
    const Executable* exe = executable(program);
    return exe ? exe->buffer_program() : nullptr;
  }

 private:
  // The compiled form of one of this program's sub-programs (null: not one of them).
  const Executable* executable(const ClosedJaxpr& program) const {
    auto it = compiled_.find(&program);
    if (it == compiled_.end()) return nullptr;
    std::lock_guard lock(mu_);
    if (!it->second) {
      CompileOptions o = options_;
      o.name += ".body" + std::to_string(num_compiled_++);
      it->second = compile_program(program, o);
    }
    // Entries are never replaced once set, so the executable outlives this call.
    return it->second.get();
  }

  CompileOptions options_;
  mutable std::mutex mu_;
  mutable int num_compiled_ = 0;
  // The keys are fixed at construction (so lookups need no lock); values fill lazily.
  mutable std::unordered_map<const ClosedJaxpr*, std::shared_ptr<const Executable>> compiled_;
};

// Recycled kernel output buffers, by byte size.
class BufferPool {
 public:
  // A kept buffer of the size, the most recently kept first, passing over those within
  // aliasing reach of the buffers the kernel reads (detail::ReadBuffersScope), else a
  // fresh one.
  Array take(const Aval& aval) {
    size_t nbytes = static_cast<size_t>(aval.size() * itemsize(aval.dtype));
    auto it = free_.find(nbytes);
    if (it != free_.end())
      for (size_t i = it->second.size(); i-- > 0;)
        if (!detail::aliases_read_buffers(it->second[i]->data)) {
          std::shared_ptr<detail::Storage> s = std::move(it->second[i]);
          it->second.erase(it->second.begin() + static_cast<std::ptrdiff_t>(i));
          return wrap(std::move(s), aval);
        }
    return detail::alloc_array(aval);
  }
  // Releases a slot's value, keeping its storage for reuse if nothing else holds it: no
  // view (which would share the storage: its count is then above this slot's and `s`)
  // and no other slot (a runtime call may return its input itself, sharing the whole
  // array: the impl's count is then above one). Both are counts, so releasing is O(1).
  void give(Array& x) {
    if (!x.valid()) return;
    std::shared_ptr<detail::Storage> s = x.impl().storage;
    const bool shared = !s || s.use_count() != 2 || x.impl_ptr().use_count() != 1 || x.impl().offset != 0 ||
                        x.nbytes() == 0;
    x = Array();
    if (!shared && s.use_count() == 1) free_[s->nbytes].push_back(std::move(s));
  }
  // A buffer the run may reuse (a donated argument's).
  void put(std::shared_ptr<detail::Storage> s) { free_[s->nbytes].push_back(std::move(s)); }
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

// Kernels compiled for one layout of the program's arguments: per step, a kernel that
// reads the arguments that are views in place (null: the step reads no such argument, or
// cannot read it in place, and runs its own kernel on contiguous copies).
struct LayoutKernels {
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::vector<std::unique_ptr<Kernel>> donating;  // per step with donations: the layout's donating kernel
};

// The layouts a program keeps kernels for: each is compiled on its first call, and a
// program called with ever new views (slices at moving offsets keep their strides, so
// this is rare) copies the views of layouts past this many, as it did before.
constexpr size_t kMaxLayouts = 8;

// The arguments' layout, as a key: per argument -1 when row-major, else its rank and
// element strides (the offset is the pointer's business).
std::vector<int64_t> layout_key(std::span<const Array> args) {
  std::vector<int64_t> key;
  for (const Array& x : args) {
    if (detail::is_contiguous(x)) {
      key.push_back(-1);
      continue;
    }
    const std::vector<int64_t>& st = detail::strides(x);
    key.push_back(static_cast<int64_t>(st.size()));
    key.insert(key.end(), st.begin(), st.end());
  }
  return key;
}

bool all_contiguous(std::span<const Array> args) {
  return std::all_of(args.begin(), args.end(), [](const Array& x) { return detail::is_contiguous(x); });
}

std::atomic<int64_t> g_kernel_input_copies{0};

Array contiguous_input(const Array& x) {
  const std::vector<int64_t>& strides = detail::strides(x);
  if (std::all_of(strides.begin(), strides.end(), [](int64_t st) { return st == 0; })) {
    Array out = detail::alloc_array(x.aval());
    lax::movement::fill_contiguous(x.itemsize(), detail::mutable_data<void>(out), x.size(), detail::raw_data(x));
    return out;
  }
  return detail::contiguous(x);
}

// A program whose every step is a native kernel, run on caller buffers (BufferProgram).
// Each value lives in one place fixed when the program is compiled: a caller input or
// output, a constant held here, or an offset in the workspace, where a value's bytes
// are reused by later values once its last reader ran. The workspace starts with the
// pointer arrays the kernels are called with, so a run touches no allocator.
class KernelStepsProgram final : public detail::BufferProgram {
 public:
  enum class Where : uint8_t { Input, Output, Constant, Workspace };
  struct Place {
    Where where = Where::Workspace;
    size_t index = 0;  // input/output/constant number, or workspace byte offset
  };
  struct KernelCall {
    const RowMajorKernel* source = nullptr;
    const Kernel* kernel = nullptr;  // source's, set by compile_kernels
    std::vector<Place> inputs, outputs;
  };
  struct Copy {  // an output that is an input, a constant or another output's value
    size_t output = 0;
    Place from;
    size_t nbytes = 0;
  };

  size_t workspace_bytes() const override { return workspace_bytes_; }

  void run(const void* const* inputs, void* const* outputs, void* workspace) const override {
    char* ws = static_cast<char*>(workspace);
    const void** in_ptrs = reinterpret_cast<const void**>(ws);
    void** out_ptrs = reinterpret_cast<void**>(ws + max_inputs_ * sizeof(void*));
    auto at = [&](const Place& p) -> void* {
      switch (p.where) {
        case Where::Input: return const_cast<void*>(inputs[p.index]);
        case Where::Output: return outputs[p.index];
        case Where::Constant: return const_cast<void*>(detail::raw_data(constants_[p.index]));
        case Where::Workspace: break;
      }
      return ws + p.index;
    };
    for (const KernelCall& c : calls_) {
      for (size_t i = 0; i < c.inputs.size(); ++i) in_ptrs[i] = at(c.inputs[i]);
      for (size_t i = 0; i < c.outputs.size(); ++i) out_ptrs[i] = at(c.outputs[i]);
      c.kernel->run(in_ptrs, out_ptrs);
    }
    for (const Copy& c : copies_)
      if (c.nbytes) std::memcpy(outputs[c.output], at(c.from), c.nbytes);
  }

  // Building (ProgramExecutable's constructor).
  size_t add_constant(const Array& x) {
    constants_.push_back(detail::is_contiguous(x) ? x : contiguous_input(x));
    return constants_.size() - 1;
  }
  // The most inputs and outputs any kernel call has: fixes where the intermediates start.
  void set_max_arity(size_t inputs, size_t outputs) {
    max_inputs_ = inputs;
    max_outputs_ = outputs;
  }
  void add_call(KernelCall c) {
    if (c.inputs.size() > max_inputs_ || c.outputs.size() > max_outputs_)
      detail::fail("jit", "internal: a kernel call has more operands than its program planned for");
    calls_.push_back(std::move(c));
  }
  void add_copy(Copy c) { copies_.push_back(c); }
  // Once the plan is complete (a program that cannot run on buffers compiles nothing).
  void compile_kernels() {
    std::vector<std::function<void()>> tasks;
    for (KernelCall& c : calls_) tasks.emplace_back([&c] { c.kernel = &c.source->get(); });
    compile_concurrently(tasks);
  }
  const Array& constant(size_t index) const { return constants_[index]; }
  // Pointer arrays first, then `intermediate_bytes` of values at 64-byte aligned offsets
  // from offset_of_intermediates() on.
  size_t offset_of_intermediates() const { return round_up((max_inputs_ + max_outputs_) * sizeof(void*)); }
  void finish(size_t intermediate_bytes) { workspace_bytes_ = offset_of_intermediates() + intermediate_bytes; }
  static size_t round_up(size_t n) { return (n + 63) / 64 * 64; }

 private:
  std::vector<KernelCall> calls_;
  std::vector<Copy> copies_;
  std::vector<Array> constants_;
  size_t max_inputs_ = 0, max_outputs_ = 0, workspace_bytes_ = 0;
};

class ProgramExecutable final : public Executable {
 public:
  // Compiles the kernels a call with arguments laid out as first_args runs (row-major
  // ones when empty); other layouts compile theirs on first use.
  ProgramExecutable(ClosedJaxpr program, const CompileOptions& options, const Dump& dump,
                    std::span<const Array> first_args);

  std::vector<Array> run(std::span<const Array> args, const std::vector<bool>& donated) const override;
  // Printed on first request: a long program's text cost ~5% of its trace and compile.
  const std::string& text() const override {
    std::call_once(text_once_, [this] { text_ = program_.str(); });
    return text_;
  }
  const std::vector<Aval>& in_avals() const override { return in_avals_; }
  int num_kernels() const override { return num_kernels_; }
  const detail::BufferProgram* buffer_program() const override;

 private:
  void prepare(std::span<const Array> args) const;
  // The buffer form of the program, when every step is a kernel (else null).
  std::unique_ptr<KernelStepsProgram> plan_buffer_program() const;

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
  mutable std::once_flag text_once_;
  mutable std::string text_;
  std::vector<Aval> in_avals_;
  std::unordered_map<int64_t, int> slots_;
  int num_slots_ = 0;
  std::vector<int> const_slots_, arg_slots_;
  std::vector<Step> steps_;
  // Donation: per step, the arguments it reads last (their buffers are free after it);
  // per argument, whether no step reads it, and whether it is itself an output.
  std::vector<std::vector<int>> args_last_read_;
  std::vector<bool> arg_unread_, arg_is_output_;
  std::vector<Operand> outputs_;
  std::vector<bool> output_moves_;  // output k is its slot's last use among the outputs: moved out
  std::vector<bool> kernel_owned_;  // slot holds a buffer a kernel step allocated
  bool recycles_ = false;           // some kernel-owned slot is released before the end
  int num_kernels_ = 0;
  // Plans each kernel step's donations (Step::donations) for the donated arguments.
  void plan_donations(const std::vector<bool>& donated);
  // Kernels for the argument layouts seen so far (views read in place), by layout_key.
  const LayoutKernels* kernels_for_layout(std::span<const Array> args) const;
  mutable std::mutex layouts_mu_;
  mutable std::map<std::vector<int64_t>, std::unique_ptr<const LayoutKernels>> layouts_;
  mutable std::mutex pool_mu_;
  mutable BufferPool pool_;
  CompiledSubprograms subprograms_;
  // Planned on first use (a loop runs this program's body on buffers), which compiles
  // every row-major kernel.
  mutable std::once_flag buffer_program_planned_;
  mutable std::unique_ptr<KernelStepsProgram> buffer_program_;
};

}  // namespace
}  // namespace jx::compiler

namespace jx::compiler {
namespace {

ProgramExecutable::ProgramExecutable(ClosedJaxpr program, const CompileOptions& options, const Dump& dump,
                                     std::span<const Array> first_args)
    : program_(std::move(program)), in_avals_(program_.in_avals()), subprograms_(options) {
  const Jaxpr& j = program_.jaxpr;
  auto new_slot = [&](const Var& v) {
    slots_[v.id] = num_slots_++;
    kernel_owned_.push_back(false);
    return num_slots_ - 1;
  };
  for (const Var& v : j.constvars) const_slots_.push_back(new_slot(v));
  for (const Var& v : j.invars) arg_slots_.push_back(new_slot(v));
  std::unordered_map<int, size_t> last_use;  // slot -> step index
  std::unordered_map<int, int> arg_of_slot;
  for (size_t i = 0; i < arg_slots_.size(); ++i) arg_of_slot[arg_slots_[i]] = static_cast<int>(i);
  for (const Equation& e : j.eqns) {
    Step s;
    s.eqn = &e;
    for (const Atom& a : e.inputs) {
      s.inputs.push_back(operand_of(a));
      auto arg = a.is_var() ? arg_of_slot.find(s.inputs.back().slot) : arg_of_slot.end();
      s.arg_of_input.push_back(arg == arg_of_slot.end() ? -1 : arg->second);
      if (a.is_var()) last_use[s.inputs.back().slot] = steps_.size();
    }
    for (const Var& v : e.outputs) {
      s.outputs.push_back(new_slot(v));
      s.out_avals.push_back(v.aval);
    }
    if (e.primitive == &fusion_primitive()) {
      const JaxprRef& body = e.params.get_jaxpr("jaxpr");
      s.kernel = std::make_unique<RowMajorKernel>(body->jaxpr, e.params.get_string("kind"),
                                                  KernelOptions{.name = options.name + "." + e.params.get_string("name"),
                                                                .dump_dir = dump.dir(),
                                                                .disk_cache = options.disk_cache,
                                                                .cache_dir = options.cache_dir,
                                                                .vector_isa = options.vector_isa});
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
  output_moves_.assign(outputs_.size(), false);
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const int sl = outputs_[k].slot;
    output_moves_[k] = sl >= 0 && std::none_of(outputs_.begin() + static_cast<std::ptrdiff_t>(k) + 1, outputs_.end(),
                                               [sl](const Operand& o) { return o.slot == sl; });
  }
  for (auto [slot, step] : last_use)
    if (!pinned[slot]) {
      steps_[step].release.push_back(slot);
      recycles_ = recycles_ || kernel_owned_[slot];
    }
  args_last_read_.resize(steps_.size());
  arg_unread_.assign(arg_slots_.size(), true);
  arg_is_output_.assign(arg_slots_.size(), false);
  for (size_t i = 0; i < arg_slots_.size(); ++i) {
    if (auto it = last_use.find(arg_slots_[i]); it != last_use.end()) {
      args_last_read_[it->second].push_back(static_cast<int>(i));
      arg_unread_[i] = false;
    }
    for (const Operand& o : outputs_) arg_is_output_[i] = arg_is_output_[i] || o.slot == arg_slots_[i];
  }
  plan_donations(options.donated);
  prepare(first_args);
}

// Each donated argument read last by a kernel step that may write an output over it
// (outputs_over_inputs_allowed), in argument order, gives its buffer to one such output
// of no larger size: the earliest among the program's results, else an intermediate.
// As in JAX, the donated arguments and the results then pair in order (p, m, v of an
// Adam update in p', m', v'). An argument bound to several of the step's inputs is not
// given: the kernel's other reads of it would alias the stores unseen.
void ProgramExecutable::plan_donations(const std::vector<bool>& donated) {
  if (std::none_of(donated.begin(), donated.end(), [](bool d) { return d; })) return;
  std::unordered_map<int, size_t> first_result;  // slot -> index of the first result it is
  for (size_t k = outputs_.size(); k-- > 0;)
    if (outputs_[k].slot >= 0) first_result[outputs_[k].slot] = k;
  auto result_index = [&](int slot) {
    auto it = first_result.find(slot);
    return it == first_result.end() ? outputs_.size() : it->second;
  };
  for (size_t step = 0; step < steps_.size(); ++step) {
    Step& s = steps_[step];
    if (!s.kernel) continue;
    OutputsOverInputs allowed, over;
    bool planned = false;
    std::vector<bool> taken(s.outputs.size(), false);
    for (int a : args_last_read_[step]) {
      if (static_cast<size_t>(a) >= donated.size() || !donated[static_cast<size_t>(a)] || arg_is_output_[a]) continue;
      const auto input = std::find(s.arg_of_input.begin(), s.arg_of_input.end(), a);
      if (input == s.arg_of_input.end() || std::count(s.arg_of_input.begin(), s.arg_of_input.end(), a) != 1) continue;
      if (!planned) {
        allowed = outputs_over_inputs_allowed(s.kernel->body(), s.kernel->kind());
        planned = true;
      }
      const int j = static_cast<int>(input - s.arg_of_input.begin());
      const Aval& arg = in_avals_[static_cast<size_t>(a)];
      int best = -1;
      for (size_t k = 0; k < s.outputs.size(); ++k) {
        const Aval& out = s.out_avals[k];
        if (taken[k] || out.size() * itemsize(out.dtype) > arg.size() * itemsize(arg.dtype) ||
            std::find(allowed.begin(), allowed.end(), OutputOverInput{static_cast<int>(k), j}) == allowed.end())
          continue;
        if (best < 0 || result_index(s.outputs[k]) < result_index(s.outputs[static_cast<size_t>(best)]))
          best = static_cast<int>(k);
      }
      if (best < 0) continue;
      taken[static_cast<size_t>(best)] = true;
      over.push_back({best, j});
      s.donations.push_back({best, a});
    }
    if (!over.empty())
      s.donating = std::make_unique<RowMajorKernel>(s.kernel->body(), s.kernel->kind(), s.kernel->options(), std::move(over));
  }
}

void ProgramExecutable::prepare(std::span<const Array> args) const {
  const bool row_major = args.size() != arg_slots_.size() || all_contiguous(args);
  const LayoutKernels* layout = row_major ? nullptr : kernels_for_layout(args);
  std::vector<std::function<void()>> tasks;
  // A step that writes over donated arguments compiles its donating kernel now and its
  // plain one only if a call cannot give it those buffers.
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& s = steps_[k];
    if (!s.kernel || (layout && (layout->kernels[k] || layout->donating[k]))) continue;
    const RowMajorKernel* kernel = s.donating ? s.donating.get() : s.kernel.get();
    tasks.emplace_back([kernel] { kernel->get(); });
  }
  compile_concurrently(tasks);
}

const detail::BufferProgram* ProgramExecutable::buffer_program() const {
  std::call_once(buffer_program_planned_, [&] { buffer_program_ = plan_buffer_program(); });
  return buffer_program_.get();
}

std::unique_ptr<KernelStepsProgram> ProgramExecutable::plan_buffer_program() const {
  using Place = KernelStepsProgram::Place;
  using Where = KernelStepsProgram::Where;
  auto program = std::make_unique<KernelStepsProgram>();
  size_t max_inputs = 0, max_outputs = 0;
  for (const Step& s : steps_) {
    max_inputs = std::max(max_inputs, s.inputs.size());
    max_outputs = std::max(max_outputs, s.outputs.size());
  }
  program->set_max_arity(max_inputs, max_outputs);
  std::vector<std::optional<Place>> place(num_slots_);
  std::vector<size_t> slot_bytes(num_slots_, 0);
  for (size_t i = 0; i < const_slots_.size(); ++i)
    place[const_slots_[i]] = Place{Where::Constant, program->add_constant(program_.consts[i])};
  for (size_t i = 0; i < arg_slots_.size(); ++i) place[arg_slots_[i]] = Place{Where::Input, i};
  // A kernel writes an output of the program straight into the caller's buffer; outputs
  // that are inputs, constants, literals or repeats are copied once the kernels ran.
  const Jaxpr& j = program_.jaxpr;
  std::vector<std::optional<size_t>> output_of_slot(num_slots_);
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const int sl = outputs_[k].slot;
    if (sl >= 0 && !place[sl] && !output_of_slot[sl]) output_of_slot[sl] = k;
  }
  // Workspace offsets (after the pointer arrays), reused by size once freed.
  const size_t base = program->offset_of_intermediates();
  std::unordered_map<size_t, std::vector<size_t>> free_offsets;
  size_t intermediate_bytes = 0;
  for (const Step& s : steps_) {
    if (!s.kernel) {
      // A runtime call of constants only (a broadcast literal the fusion pass left
      // alone, an iota) is a constant of the buffer program, computed now. Any other
      // runtime call needs arrays.
      const bool constant = detail::compile_time_evaluable(*s.eqn) && std::all_of(s.inputs.begin(), s.inputs.end(), [&](const Operand& o) {
        return o.slot < 0 || place[o.slot]->where == Where::Constant;
      });
      if (!constant) return nullptr;
      std::vector<Array> ins;
      for (const Operand& o : s.inputs) ins.push_back(o.slot < 0 ? o.constant : program->constant(place[o.slot]->index));
      std::vector<Array> outs = s.eqn->primitive->run_impl(ins, s.eqn->params, s.out_avals);
      for (size_t k = 0; k < s.outputs.size(); ++k) {
        place[s.outputs[k]] = Place{Where::Constant, program->add_constant(outs[k])};
        output_of_slot[s.outputs[k]].reset();  // an output of the program: copied at the end
      }
      continue;
    }
    KernelStepsProgram::KernelCall call;
    call.source = s.kernel.get();
    for (const Operand& o : s.inputs)
      call.inputs.push_back(o.slot >= 0 ? *place[o.slot] : Place{Where::Constant, program->add_constant(o.constant)});
    for (size_t k = 0; k < s.outputs.size(); ++k) {
      const int sl = s.outputs[k];
      const size_t nbytes = static_cast<size_t>(s.out_avals[k].size()) * static_cast<size_t>(itemsize(s.out_avals[k].dtype));
      slot_bytes[sl] = nbytes;
      if (output_of_slot[sl]) {
        place[sl] = Place{Where::Output, *output_of_slot[sl]};
      } else {
        const size_t rounded = KernelStepsProgram::round_up(nbytes);
        std::vector<size_t>& reusable = free_offsets[rounded];
        size_t offset;
        if (!reusable.empty()) {
          offset = reusable.back();
          reusable.pop_back();
        } else {
          offset = base + intermediate_bytes;
          intermediate_bytes += rounded;
        }
        place[sl] = Place{Where::Workspace, offset};
      }
      call.outputs.push_back(*place[sl]);
    }
    // Freed after this step's outputs are placed: a kernel's outputs never alias its inputs.
    for (int sl : s.release)
      if (place[sl]->where == Where::Workspace) free_offsets[KernelStepsProgram::round_up(slot_bytes[sl])].push_back(place[sl]->index);
    program->add_call(std::move(call));
  }
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const Operand& o = outputs_[k];
    const Aval& aval = j.outvars[k].aval();
    const size_t nbytes = static_cast<size_t>(aval.size()) * static_cast<size_t>(itemsize(aval.dtype));
    if (o.slot < 0) {
      program->add_copy({k, Place{Where::Constant, program->add_constant(o.constant)}, nbytes});
    } else if (output_of_slot[o.slot] != k) {
      program->add_copy({k, *place[o.slot], nbytes});
    }
  }
  program->finish(intermediate_bytes);
  program->compile_kernels();
  return program;
}

const LayoutKernels* ProgramExecutable::kernels_for_layout(std::span<const Array> args) const {
  std::vector<int64_t> key = layout_key(args);
  std::lock_guard lock(layouts_mu_);
  if (auto it = layouts_.find(key); it != layouts_.end()) return it->second.get();
  if (layouts_.size() >= kMaxLayouts) return nullptr;
  auto layout = std::make_unique<LayoutKernels>();
  layout->kernels.resize(steps_.size());
  layout->donating.resize(steps_.size());
  std::vector<std::function<void()>> tasks;
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& s = steps_[k];
    if (!s.kernel) continue;
    InputStrides strides(s.inputs.size());
    bool strided = false;
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      const int arg = s.arg_of_input[i];
      if (arg < 0 || detail::is_contiguous(args[static_cast<size_t>(arg)])) continue;
      strides[i] = detail::strides(args[static_cast<size_t>(arg)]);
      strided = true;
    }
    if (!strided || s.kernel->kind() == "dot") continue;  // BLAS reads row-major operands: copied
    KernelOptions options = s.kernel->options();
    options.name += ".strided" + std::to_string(layouts_.size());
    // A step with donations compiles only its donating kernel for the layout: a call that
    // cannot donate runs the row-major kernel on copies of the views.
    const bool donating = s.donating != nullptr;
    tasks.emplace_back([&s, &kernel = donating ? layout->donating[k] : layout->kernels[k], options = std::move(options),
                        strides = std::move(strides), donating] {
      try {
        kernel = compile_kernel(s.kernel->body(), s.kernel->kind(), options, strides,
                                donating ? s.donating->over() : OutputsOverInputs{});
      } catch (const Error&) {
        // A reshape of a view that no strides express (a merged slice), or a donated
        // argument that is a view: this step copies the views, as every step did before
        // layouts were compiled.
      }
    });
  }
  compile_concurrently(tasks);
  return layouts_.emplace(std::move(key), std::move(layout)).first->second.get();
}

// The buffers of donated arguments a run may take: contiguous, from offset 0, on the
// run's device, and held by no other array (a view), argument or output.
std::vector<std::shared_ptr<detail::Storage>> donated_buffers(std::span<const Array> args,
                                                              const std::vector<bool>& donated,
                                                              const std::vector<bool>& arg_is_output,
                                                              const detail::DeviceState* device) {
  std::vector<std::shared_ptr<detail::Storage>> buffers(args.size());
  for (size_t i = 0; i < donated.size(); ++i) {
    if (!donated[i] || arg_is_output[i]) continue;
    const detail::ArrayImpl& impl = args[i].impl();
    const std::shared_ptr<detail::Storage>& s = impl.storage;
    if (!s || s.use_count() != 1 || s->owner || s->device != Device(device) || impl.offset != 0 ||
        !detail::is_contiguous(args[i]) || args[i].nbytes() == 0)
      continue;
    bool shared = false;
    for (size_t j = 0; j < args.size() && !shared; ++j) shared = j != i && args[j].impl().storage == s;
    if (!shared) buffers[i] = s;
  }
  return buffers;
}

std::vector<Array> ProgramExecutable::run(std::span<const Array> args, const std::vector<bool>& donated) const {
  if (args.size() != arg_slots_.size())
    detail::fail("jit", "the program takes ", arg_slots_.size(), " arguments, got ", args.size());
  if (!donated.empty() && donated.size() != args.size())
    detail::fail("jit", "internal: ", donated.size(), " donation flags for ", args.size(), " arguments");
  // Inline storage keeps a small program's values off the heap.
  llvm::SmallVector<Array, 16> values(static_cast<size_t>(num_slots_));
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
  // Take the recycled buffers for this run (a concurrent run allocates its own). A
  // program that frees no intermediate buffer (a single kernel) has none to share.
  BufferPool pool;
  const bool share_pool = recycles_ || !donated.empty();
  if (share_pool) {
    std::unique_lock lock(pool_mu_, std::try_to_lock);
    if (lock.owns_lock()) std::swap(pool, pool_);
  }
  pool.use_placement(placement);
  // Arguments that are views (jnp::ones, broadcast_to, transposes, slices) are read in
  // place by kernels compiled for their layout.
  const LayoutKernels* layout = all_contiguous(args) ? nullptr : kernels_for_layout(args);
  // Donated buffers: a kernel that reads the argument last may write its output over it
  // (a parameter update allocates nothing); otherwise the buffer joins the pool once its
  // last reader ran.
  std::vector<std::shared_ptr<detail::Storage>> donated_buffer =
      donated.empty() ? std::vector<std::shared_ptr<detail::Storage>>() : donated_buffers(args, donated, arg_is_output_, placement.device);
  const bool donating = std::any_of(donated_buffer.begin(), donated_buffer.end(), [](const auto& b) { return b != nullptr; });
  if (donating)
    for (size_t i = 0; i < donated_buffer.size(); ++i)
      if (donated_buffer[i] && arg_unread_[i]) pool.put(std::move(donated_buffer[i]));
  // Per step, reused across steps; inline storage keeps a small program's call off the
  // heap for these. A step's inputs are read where they are (values never grows, so the
  // pointers hold): copying each Array cost two atomic count updates.
  llvm::SmallVector<const Array*, 8> ins;
  llvm::SmallVector<Array, 2> copies;  // contiguous copies of inputs a kernel cannot read in place
  llvm::SmallVector<const void*, 16> in_ptrs;
  llvm::SmallVector<void*, 8> out_ptrs;
  for (size_t step = 0; step < steps_.size(); ++step) {
    const Step& s = steps_[step];
    ins.clear();
    for (const Operand& o : s.inputs) ins.push_back(o.slot >= 0 ? &values[o.slot] : &o.constant);
    if (s.kernel) {
      detail::AllocScope scope(s.eqn->primitive->name());  // out-of-memory errors name the fusion
      // Donating: every buffer this step writes over is the call's to give.
      const bool donates = donating && !s.donations.empty() &&
                           std::all_of(s.donations.begin(), s.donations.end(), [&](const Donation& d) {
                             const auto& buffer = donated_buffer[static_cast<size_t>(d.arg)];
                             const Aval& out = s.out_avals[static_cast<size_t>(d.output)];
                             return buffer && buffer->nbytes >= static_cast<size_t>(out.size()) * itemsize(out.dtype);
                           });
      const std::vector<std::unique_ptr<Kernel>>* layout_kernels =
          !layout ? nullptr : donates ? &layout->donating : &layout->kernels;
      const bool in_place = layout_kernels && (*layout_kernels)[step];
      const Kernel* kernel = in_place ? (*layout_kernels)[step].get() : donates ? &s.donating->get() : &s.kernel->get();
      in_ptrs.clear();
      out_ptrs.clear();
      copies.clear();
      for (size_t i = 0; i < ins.size(); ++i) {
        const Array* x = ins[i];
        // The layout's kernel reads the arguments as they are; any other view (one a
        // runtime step returned, or an argument this step cannot read in place) is
        // copied (a broadcast scalar, like jnp::ones, by a fill).
        if (!(in_place && s.arg_of_input[i] >= 0) && !detail::is_contiguous(*x)) {
          copies.push_back(contiguous_input(*x));
          x = &copies.back();  // (its data pointer, taken next, outlives copies' growth)
          g_kernel_input_copies.fetch_add(1, std::memory_order_relaxed);
        }
        in_ptrs.push_back(detail::raw_data(*x));
      }
      detail::ReadBuffersScope read_scope(in_ptrs);  // fresh and recycled outputs clear of them
      for (size_t k = 0; k < s.outputs.size(); ++k) {
        std::shared_ptr<detail::Storage> over;
        if (donates)
          for (const Donation& d : s.donations)
            if (d.output == static_cast<int>(k)) over = std::move(donated_buffer[static_cast<size_t>(d.arg)]);
        values[s.outputs[k]] = over ? detail::adopt_storage(std::move(over), s.out_avals[k]) : pool.take(s.out_avals[k]);
        out_ptrs.push_back(const_cast<void*>(detail::raw_data(values[s.outputs[k]])));
      }
      kernel->run(in_ptrs.data(), out_ptrs.data());
    } else {
      detail::SubprogramScope compiled_bodies(s.runs_subprograms ? &subprograms_ : nullptr);
      llvm::SmallVector<Array, 8> operands;
      for (const Array* x : ins) operands.push_back(*x);
      std::vector<Array> outs = s.eqn->primitive->run_impl(operands, s.eqn->params, s.out_avals);
      for (size_t k = 0; k < s.outputs.size(); ++k) values[s.outputs[k]] = std::move(outs[k]);
    }
    ins.clear();
    for (int sl : s.release) {
      if (kernel_owned_[sl]) pool.give(values[sl]);
      else values[sl] = Array();
    }
    if (donating)
      for (int a : args_last_read_[step])
        if (donated_buffer[static_cast<size_t>(a)]) pool.put(std::move(donated_buffer[static_cast<size_t>(a)]));
  }
  std::vector<Array> outs;
  outs.reserve(outputs_.size());
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const Operand& o = outputs_[k];
    if (o.slot < 0) outs.push_back(o.constant);
    else if (output_moves_[k]) outs.push_back(std::move(values[o.slot]));
    else outs.push_back(values[o.slot]);
  }
  if (share_pool) {
    std::unique_lock lock(pool_mu_, std::try_to_lock);
    if (lock.owns_lock()) std::swap(pool, pool_);
  }
  return outs;
}

}  // namespace

int64_t kernel_input_copy_count() { return g_kernel_input_copies.load(std::memory_order_relaxed); }

CompileOptions compile_options_from_config(std::string name) {
  const Config c = config::get();
  return CompileOptions{.name = std::move(name),
                        .disk_cache = c.disk_cache,
                        .cache_dir = c.cache_dir,
                        .dump_dir = c.dump_dir,
                        .verify_passes = c.verify_passes,
                        .vector_isa = cpu::vector_isa()};
}

std::shared_ptr<const Executable> compile_program(const ClosedJaxpr& program, const CompileOptions& options,
                                                 std::span<const Array> first_args) {
  Dump dump(options.name, options.dump_dir);
  ClosedJaxpr optimized = optimize_program(
      program, PipelineOptions{.optimize = options.optimize, .verify = options.verify_passes}, dump);
  return std::make_shared<ProgramExecutable>(std::move(optimized), options, dump, first_args);
}

}  // namespace jx::compiler
