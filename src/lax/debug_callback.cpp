// The debug_callback primitive and what jx/debug.h builds on it: debug::callback,
// debug::print, jx::check, and debug_nans' checks (eager, and the re-run of a jitted
// program that returned a NaN).
//
// debug_callback has no results and the trait kSideEffects, which DCE, CSE, constant
// folding and simplify respect; it has no lowering, so fusion leaves it alone and jit's
// executable runs it as a runtime call of its impl, in program order, on every call.
#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/config_internal.h"
#include "core/hot_tls.h"
#include "jx/debug.h"
#include "jx/error.h"
#include "jx/jaxpr.h"
#include "jx/lax.h"
#include "jx/primitive.h"
#include "lax/debug_internal.h"

namespace jx {

extern const Primitive debug_callback_p;

namespace {

// ---- the registry of host functions (the `callback` param is an id into it) ----
struct Registry {
  std::mutex mu;
  std::unordered_map<int64_t, std::shared_ptr<const detail::HostCallback>> fns;
  int64_t next = 1;
};
Registry& registry() {
  static auto* r = new Registry;  // never destroyed: programs may outlive main
  return *r;
}
int64_t register_callback(detail::HostCallback fn) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  const int64_t id = r.next++;
  r.fns.emplace(id, std::make_shared<const detail::HostCallback>(std::move(fn)));
  return id;
}
std::shared_ptr<const detail::HostCallback> lookup(const Params& params) {
  if (!params.has("callback")) detail::fail("debug_callback", "needs a callback=<id> param");
  const int64_t id = params.get_int("callback");
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.fns.find(id);
  if (it == r.fns.end())
    detail::fail("debug_callback", "callback=", id,
                 " names no host function registered in this process (a host callback cannot be rebuilt from "
                 "IR text)");
  return it->second;
}

// Set while debug_nans re-runs a jitted program: its callbacks already ran once, and its
// own NaN checks are done by the re-run.
thread_local bool t_rerunning = false;

// ---- jx::check's deferral (DeferredChecks) ----
// The innermost DeferredChecks' slot for the first failing check's message; null outside
// any (a failing check raises at once). A plain pointer with the initial-exec model:
// every jitted call opens a scope, and a thread-local std::optional<std::string> (its
// destructor registered on first use) cost a __tls_get_addr call per access, 9 a call.
JX_INITIAL_EXEC_TLS thread_local std::optional<std::string>* t_deferred_check = nullptr;

// vmap: once per lane, in lane order, on the lane's values (JAX's sequential rule).
BatchResult debug_callback_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                                 const BatchAxis& axis) {
  for (int64_t lane = 0; lane < axis.size; ++lane) {
    std::vector<Array> xs;
    xs.reserve(args.size());
    for (size_t k = 0; k < args.size(); ++k) {
      if (dims[k] == kNotMapped) {
        xs.push_back(args[k]);
        continue;
      }
      const Shape& shape = args[k].shape();
      std::vector<int64_t> start(shape.size(), 0), limit(shape.begin(), shape.end());
      start[dims[k]] = lane;
      limit[dims[k]] = lane + 1;
      xs.push_back(lax::squeeze(lax::slice(args[k], start, limit), {dims[k]}));
    }
    jx::bind(debug_callback_p, xs, params);
  }
  return {};
}

}  // namespace

const Primitive debug_callback_p(
    "debug_callback",
    {.traits = kSideEffects | kNotDifferentiable,  // grad: runs once, on the primals
     .num_outputs = 0,
     .abstract_eval =
         [](std::span<const Aval>, const Params& params) {
           lookup(params);  // an id parsed from text must name a live function
           return std::vector<Aval>{};
         },
     .impl =
         [](std::span<const Array> in, const Params& params, std::span<const Aval>) {
           auto fn = lookup(params);
           if (!t_rerunning) (*fn)(in);
           return std::vector<Array>{};
         },
     .batch = debug_callback_batch});

namespace {

// ---- formatting ----
std::ostream* g_sink = nullptr;
std::mutex g_sink_mu;

size_t count_placeholders(std::string_view fmt, std::string_view op) {
  size_t n = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') ++i;
    else if (fmt[i] == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
    else if (fmt[i] == '{' && i + 1 < fmt.size() && fmt[i + 1] == '}') ++n, ++i;
    else if (fmt[i] == '{' || fmt[i] == '}')
      detail::fail(op, "the format string '", fmt, "' has an unmatched '", fmt[i], "' at position ", i,
                   " (placeholders are {}, literal braces {{ and }})");
  }
  return n;
}

void check_format(std::string_view fmt, size_t num_args, std::string_view op) {
  const size_t n = count_placeholders(fmt, op);
  if (n != num_args)
    detail::fail(op, "the format string '", fmt, "' has ", n, " placeholder(s) but ", num_args,
                 " argument(s) were given");
}

std::string format_checked(std::string_view fmt, std::span<const Array> args) {
  std::string out;
  size_t k = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i], next = i + 1 < fmt.size() ? fmt[i + 1] : '\0';
    if ((c == '{' && next == '{') || (c == '}' && next == '}')) {
      out += c;
      ++i;
    } else if (c == '{' && next == '}') {
      out += str(args[k++]);
      ++i;
    } else {
      out += c;
    }
  }
  return out;
}

// Eager calls run the host function directly (registering nothing); under a
// transformation the primitive is bound, so the function is registered for the program.
void run_or_bind(detail::HostCallback fn, std::vector<Array> args) {
  if (detail::current_trace() == nullptr) {
    for (const Array& a : args)
      if (!a.valid()) detail::fail("debug_callback", "an argument is a null jx::Array");
    fn(args);
    return;
  }
  jx::bind(debug_callback_p, args, {{"callback", register_callback(std::move(fn))}});
}

// ---- debug_nans ----
bool has_nan(const Array& a) {
  if (!is_inexact(a.dtype()) || a.size() == 0) return false;
  std::vector<int64_t> axes(a.ndim());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  return lax::reduce_or(lax::ne(a, a), axes).item<bool>();
}
bool any_nan(std::span<const Array> xs) {
  for (const Array& x : xs)
    if (has_nan(x)) return true;
  return false;
}

thread_local bool t_in_nan_check = false;
struct NanCheckGuard {
  bool saved = t_in_nan_check;
  NanCheckGuard() { t_in_nan_check = true; }
  ~NanCheckGuard() { t_in_nan_check = saved; }
};

std::string avals_text(std::span<const Array> xs) {
  std::string s;
  for (const Array& x : xs) s += (s.empty() ? "" : ", ") + x.aval().str();
  return s.empty() ? "no operands" : s;
}

void eager_nan_check(const Primitive& p, std::span<const Array> in, std::span<const Array> out) {
  if (t_in_nan_check || t_rerunning) return;  // the check's own ops; a re-run checks itself
  NanCheckGuard guard;
  if (!any_nan(out) || any_nan(in)) return;
  detail::fail(p.name(), "produced a NaN (debug_nans is on): result ", avals_text(out), " from ",
               avals_text(in));
}

[[maybe_unused]] const bool g_registered = (detail::register_nan_check(&eager_nan_check), true);

// One equation's line in the IR text.
std::string equation_text(const Equation& e) {
  Jaxpr j;
  std::unordered_set<int64_t> seen;
  for (const Atom& a : e.inputs)
    if (a.is_var() && seen.insert(a.var().id).second) j.invars.push_back(a.var());
  j.eqns.push_back(e);
  for (const Var& v : e.outputs) j.outvars.push_back(v);
  const std::string text = j.str();
  const size_t begin = text.find("let\n"), end = text.rfind("\n  in (");
  if (begin == std::string::npos || end == std::string::npos || end < begin + 4) return text;
  std::string line = text.substr(begin + 4, end - begin - 4);
  return line.substr(line.find_first_not_of(' '));
}

}  // namespace

namespace detail {

void debug_callback_flat(HostCallback fn, std::vector<Array> args) {
  if (!fn) fail("debug.callback", "the host function is empty");
  run_or_bind(std::move(fn), std::move(args));
}

void debug_print_flat(std::string fmt, std::vector<Array> args) {
  check_format(fmt, args.size(), "debug.print");
  run_or_bind(
      [fmt = std::move(fmt)](std::span<const Array> xs) {
        const std::string line = format_checked(fmt, xs) + "\n";
        std::lock_guard lock(g_sink_mu);
        std::ostream& os = g_sink ? *g_sink : std::cout;
        os << line;
        os.flush();
      },
      std::move(args));
}

void check_flat(const Array& pred, std::string fmt, std::vector<Array> args) {
  if (!pred.valid()) fail("check", "the predicate is a null jx::Array");
  if (pred.dtype() != DType::Bool)
    fail("check", "the predicate must be a bool array, got ", pred.aval().str());
  check_format(fmt, args.size(), "check");
  args.insert(args.begin(), pred);
  run_or_bind(
      [fmt = std::move(fmt)](std::span<const Array> xs) {
        const Array& p = xs[0];
        std::vector<int64_t> axes(p.ndim());
        for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
        if (lax::reduce_and(p, axes).item<bool>()) return;
        std::string message = format_checked(fmt, xs.subspan(1));
        if (!t_deferred_check) fail("check", message);
        if (!*t_deferred_check) *t_deferred_check = std::move(message);
      },
      std::move(args));
}

DeferredChecks::DeferredChecks() : outer_(t_deferred_check) { t_deferred_check = &pending_; }

DeferredChecks::~DeferredChecks() { t_deferred_check = outer_; }

void DeferredChecks::raise_pending() {
  if (!pending_) return;
  std::string message = std::move(*pending_);
  pending_.reset();
  fail("check", message);
}

void check_jit_nans(const ClosedJaxpr& program, std::span<const Array> args, std::span<const Array> outs,
                    const std::string& name) {
  {
    NanCheckGuard guard;
    if (!any_nan(outs)) return;
  }
  struct Rerun {
    bool saved = t_rerunning;
    Rerun() { t_rerunning = true; }
    ~Rerun() { t_rerunning = saved; }
  } rerun;
  const Jaxpr& j = program.jaxpr;
  std::unordered_map<int64_t, Array> env;
  for (size_t i = 0; i < j.constvars.size(); ++i) env[j.constvars[i].id] = program.consts[i];
  for (size_t i = 0; i < j.invars.size(); ++i) env[j.invars[i].id] = args[i];
  for (const Equation& e : j.eqns) {
    std::vector<Array> in;
    in.reserve(e.inputs.size());
    for (const Atom& a : e.inputs) in.push_back(a.is_var() ? env.at(a.var().id) : a.literal().value);
    std::vector<Array> res = jx::bind(*e.primitive, in, e.params);
    NanCheckGuard guard;
    if (any_nan(res) && !any_nan(in))
      fail("jit", "debug_nans: '", name, "' returned a NaN; re-run eagerly, it first comes from `",
           e.primitive->name(), "` in the equation\n  ", equation_text(e));
    for (size_t k = 0; k < res.size(); ++k) env[e.outputs[k].id] = std::move(res[k]);
  }
}

}  // namespace detail

namespace debug {

void set_print_sink(std::ostream* sink) {
  std::lock_guard lock(g_sink_mu);
  g_sink = sink;
}

std::string format(std::string_view fmt, std::span<const Array> args) {
  check_format(fmt, args.size(), "debug.format");
  return format_checked(fmt, args);
}

}  // namespace debug
}  // namespace jx
