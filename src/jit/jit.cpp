// jx::jit's runtime side: the per-function compile cache keyed on the call signature and
// compile logging. Under another transformation (or inside another jit) a call becomes
// one `jit` equation (src/jit/jit_primitive.cpp).
#include "jx/jit.h"
#include "core/axis_env.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <list>
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "core/array_internal.h"
#include "core/config_internal.h"
#include "core/eager_hook.h"
#include "jit/executable.h"
#include "jit/jit_primitive.h"
#include "lax/debug_internal.h"
#include "jx/config.h"
#include "jx/error.h"

namespace jx {
namespace detail {

struct JitEntry {
  std::string name;
  JitOptions options;
  std::vector<Aval> in_avals;
  tree::TreeDef out_def;
  // Per leaf: whether its argument is in donate_argnums (empty: nothing donated).
  std::vector<bool> donated;
  // The staged program, and the same with its constants lifted to leading inputs (the
  // `jit` equation's body: sub-programs hold no constvars).
  std::shared_ptr<const ClosedJaxpr> traced;
  JaxprRef body;
  // Compiled on first native run (under mu); `ready` publishes it, so a cached call
  // reads it without the lock.
  mutable std::mutex mu;
  mutable std::shared_ptr<const compiler::Executable> exe;
  mutable std::atomic<const compiler::Executable*> ready{nullptr};
};

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string avals_list(std::span<const Aval> avals) {
  std::string s = "(";
  for (size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + avals[i].str();
  return s + ")";
}

compiler::CompileOptions compile_options(const JitOptions& o) {
  compiler::CompileOptions options = compiler::compile_options_from_config(o.name);
  options.optimize = o.optimize;
  options.disk_cache = options.disk_cache && o.disk_cache;
  return options;
}

// The entry's executable, compiled on first use with the kernels of `args`' layout (views
// read in place; row-major when empty).
const compiler::Executable& executable(const JitEntry& e, std::span<const Array> args = {}) {
  if (const compiler::Executable* compiled = e.ready.load(std::memory_order_acquire)) return *compiled;
  std::lock_guard lock(e.mu);
  if (!e.exe) {
    // Native code needs every constant's value (the constants of an entry that captured a
    // tracer are operands of a `jit` equation instead, never compiled in).
    for (const Array& c : e.traced->consts) {
      check_not_leaked(c, "jit");
      if (c.impl().tracer)
        fail("jit", "cannot compile '", e.name, "' on its own: it captures a value of type ", c.aval().str(),
             " traced by an enclosing transformation; call it inside that transformation instead");
    }
    auto t0 = std::chrono::steady_clock::now();
    // The body takes the constants as leading inputs; the executable holds them.
    compiler::CompileOptions options = compile_options(e.options);
    options.donated = e.donated;
    e.exe = compiler::compile_program(*e.traced, options, args);
    if (config::get().log_compiles)
      std::fprintf(stderr, "jx: compiled '%s' for %s in %.2f ms (%d native kernels)\n", e.name.c_str(),
                   avals_list(e.in_avals).c_str(), ms_since(t0), e.exe->num_kernels());
    e.ready.store(e.exe.get(), std::memory_order_release);
  }
  return *e.exe;
}

}  // namespace

// ---- the per-function cache ----

namespace {
struct Key {
  std::vector<Aval> avals;
  tree::TreeDef def;
  std::shared_ptr<const StaticValues> statics;
  // The named axes in scope (pmap, shard_map, vmap's axis_name): a traced program bakes
  // in the sizes of the axes its collectives name.
  std::vector<std::pair<std::string, int64_t>> axes;
  size_t hash = 0;

  bool operator==(const Key& o) const {
    if (hash != o.hash || avals != o.avals || !(def == o.def) || axes != o.axes) return false;
    if (!statics || !o.statics) return !statics && !o.statics;
    return statics->equals(*o.statics);
  }
  // The same test against a call's parts, before any Key is built (a cached call then
  // copies no aval).
  bool matches(size_t h, std::span<const Array> leaves, const tree::TreeDef& d, const StaticValues* s,
               const std::vector<std::pair<std::string, int64_t>>& a) const {
    if (hash != h || avals.size() != leaves.size() || axes != a) return false;
    for (size_t i = 0; i < leaves.size(); ++i)
      if (!(avals[i] == leaves[i].aval())) return false;
    if (!(def == d)) return false;
    if (!statics || !s) return !statics && !s;
    return statics->equals(*s);
  }
};

size_t hash_avals(std::span<const Array> leaves) {
  size_t h = leaves.size();
  for (const Array& x : leaves) {
    const Aval& a = x.aval();
    h = h * 1000003u ^ (static_cast<size_t>(a.dtype) * 2 + a.weak_type);
    for (int64_t d : a.shape) h = h * 31 + static_cast<size_t>(d);
  }
  return h;
}
}  // namespace

struct JitFunction::Cache {
  std::mutex mu;
  // Most recent first: the log compares a new signature with the latest one.
  std::list<std::pair<Key, std::shared_ptr<JitEntry>>> entries;
};

JitFunction::JitFunction(JitOptions options) : options_(std::move(options)), cache_(std::make_unique<Cache>()) {}
JitFunction::~JitFunction() = default;

size_t JitFunction::cache_size() const {
  std::lock_guard lock(cache_->mu);
  return cache_->entries.size();
}

namespace {
// Why a new signature was traced, compared with the most recent one.
std::string retrace_reason(const Key& key, const std::list<std::pair<Key, std::shared_ptr<JitEntry>>>& entries,
                           std::span<const size_t> positions) {
  if (entries.empty()) return "first call";
  const Key& last = entries.front().first;
  if (!(key.def == last.def)) return "argument structure changed from " + last.def.str() + " to " + key.def.str();
  for (size_t i = 0; i < key.avals.size() && i < last.avals.size(); ++i)
    if (!(key.avals[i] == last.avals[i])) {
      std::string where = "argument " + std::to_string(i < positions.size() ? positions[i] : i);
      return where + " changed from " + last.avals[i].str() + " to " + key.avals[i].str();
    }
  auto s = [](const std::shared_ptr<const StaticValues>& v) { return v ? v->str() : std::string(); };
  return "static arguments changed from (" + s(last.statics) + ") to (" + s(key.statics) + ")";
}
}  // namespace

std::shared_ptr<const JitEntry> JitFunction::lookup(std::span<const Array> leaves, const tree::TreeDef& in_def,
                                                    std::shared_ptr<const StaticValues> statics,
                                                    FunctionRef<std::vector<size_t>()> arg_positions,
                                                    JitTraceFn trace) {
  for (size_t i = 0; i < leaves.size(); ++i)
    if (!leaves[i].valid()) fail("jit", "argument leaf ", i, " is a null jx::Array");
  size_t hash = hash_avals(leaves) ^ (statics ? statics->hash() * 0x9e3779b97f4a7c15ull : 0);
  std::vector<std::pair<std::string, int64_t>> axes;
  for (const AxisFrame& a : traced_axes()) {
    axes.emplace_back(a.name, a.size);
    hash = hash * 31 + std::hash<std::string>()(a.name) + static_cast<size_t>(a.size);
  }
  {
    std::lock_guard lock(cache_->mu);
    for (auto it = cache_->entries.begin(); it != cache_->entries.end(); ++it)
      if (it->first.matches(hash, leaves, in_def, statics.get(), axes)) {
        if (it != cache_->entries.begin()) cache_->entries.splice(cache_->entries.begin(), cache_->entries, it);
        return cache_->entries.front().second;
      }
  }
  Key key;
  key.avals.reserve(leaves.size());
  for (const Array& x : leaves) key.avals.push_back(x.aval());
  key.hash = hash;
  key.def = in_def;
  key.statics = std::move(statics);
  key.axes = std::move(axes);
  // Trace outside the lock: f may call other jitted functions (or this one).
  auto t0 = std::chrono::steady_clock::now();
  auto entry = std::make_shared<JitEntry>();
  entry->name = options_.name;
  entry->options = options_;
  entry->in_avals = key.avals;
  if (!options_.donate_argnums.empty()) {
    const std::vector<size_t> positions = arg_positions();
    entry->donated.resize(positions.size());
    for (size_t i = 0; i < positions.size(); ++i)
      entry->donated[i] = std::find(options_.donate_argnums.begin(), options_.donate_argnums.end(),
                                    static_cast<int>(positions[i])) != options_.donate_argnums.end();
  }
  tree::TreeDef out_def;
  FlatFn f = [&](std::span<const Array> xs) { return trace(xs, out_def); };
  std::vector<Array> consts;
  JaxprRef body = stage_body(f, key.avals, &consts);
  entry->out_def = std::move(out_def);
  entry->body = body;
  auto traced = std::make_shared<ClosedJaxpr>();
  traced->jaxpr = body->jaxpr;
  size_t n_consts = consts.size();
  traced->jaxpr.constvars.assign(body->jaxpr.invars.begin(), body->jaxpr.invars.begin() + n_consts);
  traced->jaxpr.invars.assign(body->jaxpr.invars.begin() + n_consts, body->jaxpr.invars.end());
  // A program that captured a value traced by an enclosing transformation (f closes over
  // grad's x) holds that tracer as a constant: it is valid only while that trace runs, so
  // it serves this call and is never cached (a later call traces again, as JAX does).
  const bool captures_tracers =
      std::any_of(consts.begin(), consts.end(), [](const Array& c) { return c.impl().tracer != nullptr; });
  traced->consts = std::move(consts);
  entry->traced = traced;
  if (captures_tracers) return entry;
  std::lock_guard lock(cache_->mu);
  // Another thread may have traced the same signature meanwhile: keep the first entry,
  // so every caller shares one program (and one compile).
  for (const auto& [k, e] : cache_->entries)
    if (k == key) return e;
  if (config::get().log_compiles)
    std::fprintf(stderr, "jx: tracing '%s' for %s%s%s%s: %s (%.2f ms)\n", options_.name.c_str(),
                 avals_list(key.avals).c_str(), key.statics ? " static (" : "",
                 key.statics ? key.statics->str().c_str() : "", key.statics ? ")" : "",
                 retrace_reason(key, cache_->entries, arg_positions()).c_str(), ms_since(t0));
  cache_->entries.emplace_front(std::move(key), entry);
  return entry;
}

namespace {
bool all_concrete(std::span<const Array> xs) {
  for (const Array& x : xs)
    if (!x.impl().storage) return false;
  return true;
}
}  // namespace

std::vector<Array> JitFunction::call(const JitEntry& entry, std::span<const Array> leaves) {
  if (current_trace() == nullptr && all_concrete(leaves)) {
    std::vector<Array> outs;
    {
      const compiler::Executable& exe = executable(entry, leaves);
      // Donated arguments are deleted once the program ran, even if it raised: their
      // buffers may already hold results. A result that is a donated argument itself
      // (f returns it) gets its own handle to the buffer.
      struct DeleteDonated {
        const JitEntry& entry;
        std::span<const Array> leaves;
        std::vector<Array>& outs;
        ~DeleteDonated() {
          for (size_t i = 0; i < entry.donated.size(); ++i) {
            if (!entry.donated[i]) continue;
            for (Array& o : outs)
              if (o.impl_ptr() == leaves[i].impl_ptr()) o = make_view(o, o.aval(), o.impl().strides, o.impl().offset);
            mark_deleted(leaves[i]);
          }
        }
      } delete_donated{entry, leaves, outs};
      DeferredChecks checks;  // jx::check failures raise once the program returned
      outs = exe.run(leaves, entry.donated);
      checks.raise_pending();
    }
    if (active_nan_check()) check_jit_nans(*entry.traced, leaves, outs, entry.name);
    return outs;
  }
  std::vector<Array> operands = entry.traced->consts;
  operands.insert(operands.end(), leaves.begin(), leaves.end());
  return jx::bind(jit_primitive(), operands, {{"jaxpr", entry.body}, {"name", entry.name}});
}

std::vector<Array> JitFunction::call_checked(const JitEntry& entry, std::span<const Array> leaves) {
  if (leaves.size() != entry.in_avals.size())
    fail("jit", "the compiled '", entry.name, "' takes ", entry.in_avals.size(), " array arguments, got ",
         leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].valid()) fail("jit", "argument leaf ", i, " is a null jx::Array");
    const Aval& a = leaves[i].aval();
    if (a.shape != entry.in_avals[i].shape || a.dtype != entry.in_avals[i].dtype)
      fail("jit", "the compiled '", entry.name, "' was compiled for ", avals_list(entry.in_avals),
           " but argument leaf ", i, " is ", a.str(), "; call the jitted function (which retraces) instead");
  }
  return call(entry, leaves);
}

// ---- JX_JIT_EVERY_OP=1: every eager operation as a compiled one-equation program ----

namespace {
struct OpKey {
  const Primitive* p;
  Params params;
  std::vector<Aval> avals;
  bool operator==(const OpKey& o) const { return p == o.p && avals == o.avals && params == o.params; }
};
struct OpKeyHash {
  size_t operator()(const OpKey& k) const {
    size_t h = std::hash<const void*>{}(k.p) ^ k.params.hash() * 31;
    for (const Aval& a : k.avals) {
      h = h * 1000003u ^ (static_cast<size_t>(a.dtype) * 2 + a.weak_type);
      for (int64_t d : a.shape) h = h * 31 + static_cast<size_t>(d);
    }
    return h;
  }
};

std::vector<Array> jit_one_op(const Primitive& p, std::span<const Array> in, const Params& params) {
  // Sub-program primitives and anything not concrete evaluate as usual.
  bool concrete = all_concrete(in);
  if (!concrete || p.has(kCallsSubprogram)) return p.eval(in, params);
  OpKey key{&p, params, {}};
  for (const Array& x : in) key.avals.push_back(x.aval());
  static std::mutex mu;
  static auto* cache = new std::unordered_map<OpKey, std::shared_ptr<const compiler::Executable>, OpKeyHash>;
  std::shared_ptr<const compiler::Executable> exe;
  {
    std::lock_guard lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) exe = it->second;
  }
  if (!exe) {
    std::vector<Aval> outs = p.abstract_eval(key.avals, params);  // eager's errors, unchanged
    ClosedJaxpr program;
    int64_t id = 0;
    Equation e{&p, {}, {}, params};
    for (const Aval& a : key.avals) {
      program.jaxpr.invars.push_back(Var{id++, a});
      e.inputs.push_back(program.jaxpr.invars.back());
    }
    for (const Aval& a : outs) {
      e.outputs.push_back(Var{id++, a});
      program.jaxpr.outvars.push_back(e.outputs.back());
    }
    program.jaxpr.eqns.push_back(std::move(e));
    exe = compiler::compile_program(program, compiler::compile_options_from_config("op_" + p.name()), in);
    std::lock_guard lock(mu);
    cache->emplace(std::move(key), exe);
  }
  return exe->run(in);
}

// Registered, not installed: config's jit_every_op (JX_JIT_EVERY_OP) turns it on.
const bool g_every_op_hook = [] {
  set_jit_every_op_hook(&jit_one_op);
  return true;
}();
}  // namespace

void check_donate_argnums(const JitOptions& options, size_t num_args, std::initializer_list<size_t> statics) {
  for (int d : options.donate_argnums) {
    if (d < 0 || static_cast<size_t>(d) >= num_args)
      fail("jit", "donate_argnums ", d, " of '", options.name, "' is out of range: the function was called with ",
           num_args, " arguments");
    if (std::find(statics.begin(), statics.end(), static_cast<size_t>(d)) != statics.end())
      fail("jit", "donate_argnums ", d, " of '", options.name, "' is a static argument; only arrays can be donated");
  }
}

std::string JitFunction::optimized_text(const JitEntry& entry) { return executable(entry).text(); }

const tree::TreeDef& jit_entry_out_def(const JitEntry& entry) { return entry.out_def; }
std::string jit_entry_traced_text(const JitEntry& entry) { return entry.traced->str(); }

}  // namespace detail
}  // namespace jx
