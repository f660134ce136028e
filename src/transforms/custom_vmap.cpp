// custom_vmap_call: jx::custom_vmap's primitive (include/jx/custom_derivatives.h), JAX's
// custom_vmap_call. Params: `jaxpr`, the function's program (the constants it closed over
// lifted to its first `num_consts` inputs); `rule`, the handle of the user's batching rule
// in a process-wide registry (a C++ callable cannot be a Params value); `name`. Shape rule,
// eager evaluation and jit (inline_calls inlines every kCall) are a call's: the function
// runs. vmap calls the rule on the arguments with their batch axes at 0 and checks its
// outputs against the function's types.
//
// jvp is JAX's custom_vmap_jvp: another custom_vmap_call, of the function's jvp program,
// whose batching rule is the jvp of the user's rule; so unbatched, jvp differentiates the
// function, and vmap(jvp(f)) differentiates the rule, as jvp(vmap(f)) and grad(vmap(f))
// do. (A function that closes over a value being differentiated is differentiated inline.)
// Reverse mode splits that call (partial evaluation) into a known call and a closed_call of
// the tangent work: grad(f) is f's derivative (JAX refuses it), but the rule cannot be
// split, so the known call is marked `linearized` and batching it raises: vmap(grad(f))
// would otherwise batch f's derivative instead of differentiating the rule (JAX raises
// too). No dce rule: dropping operands would shift the `num_consts` layout, so the
// equation stays whole.
#include <mutex>

#include "jx/custom_derivatives.h"
#include "jx/error.h"
#include "jx/numpy.h"
#include "transforms/ad_util.h"
#include "transforms/call_rules.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/staging.h"

namespace jx {
extern const Primitive custom_vmap_call_p;
extern const Primitive closed_call_p;

namespace detail {
namespace {

// Rules live as long as the process: a program that holds a call may be batched at any
// later time (a jit cache, make_jaxpr's result).
class RuleRegistry {
 public:
  int64_t add(FlatVmapRule rule) {
    std::lock_guard<std::mutex> lock(mu_);
    rules_.push_back(std::make_shared<const FlatVmapRule>(std::move(rule)));
    return static_cast<int64_t>(rules_.size()) - 1;
  }
  std::shared_ptr<const FlatVmapRule> get(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    if (id < 0 || id >= static_cast<int64_t>(rules_.size()))
      fail("custom_vmap_call", "has no batching rule with handle ", id);
    return rules_[static_cast<size_t>(id)];
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<const FlatVmapRule>> rules_;
};
RuleRegistry& registry() {
  static RuleRegistry r;
  return r;
}

const JaxprRef& body_of(const Params& params) { return call_body(params, "custom_vmap_call"); }

BatchResult custom_vmap_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                              const BatchAxis& axis) {
  const std::string& name = params.get_string("name");
  const size_t k = static_cast<size_t>(params.get_int("num_consts"));
  if (params.has("linearized")) {
    // The tangent half batched over tangents alone is f's linear map per lane: exact.
    bool primals_batched = params.get_string("linearized") == "primal";
    for (size_t i = 0; i < k; ++i) primals_batched |= dims[i] != kNotMapped;
    if (!primals_batched) return batch_of_call(body_of(params), args, dims, axis);
    fail("custom_vmap", "'", name, "': vmap of a reverse-mode derivative (grad, vjp, jacrev, linearize) of a ",
         "custom_vmap function is not supported, since the batching rule cannot be split into its primal and ",
         "tangent parts (JAX refuses it too); apply vmap first: grad(vmap(f)) differentiates the rule");
  }
  for (size_t i = 0; i < k; ++i)
    if (dims[i] != kNotMapped)
      fail("custom_vmap", "'", name, "' closes over a value being batched (", args[i].aval().str(),
           "); pass it as an argument so the batching rule sees it");
  std::vector<bool> in_batched;
  std::vector<Array> xs;
  for (size_t i = k; i < args.size(); ++i) {
    in_batched.push_back(dims[i] != kNotMapped);
    xs.push_back(dims[i] == kNotMapped || dims[i] == 0 ? args[i] : numpy::moveaxis(args[i], dims[i], 0));
  }
  auto [outs, out_batched] = (*registry().get(params.get_int("rule")))(axis.size, in_batched, xs);
  const auto& outvars = body_of(params)->jaxpr.outvars;
  if (outs.size() != outvars.size() || out_batched.size() != outs.size())
    fail("custom_vmap", "'", name, "': the batching rule returned ", outs.size(), " outputs and ", out_batched.size(),
         " out_batched flags for the function's ", outvars.size(), " outputs");
  BatchResult r{outs, {}};
  for (size_t i = 0; i < outs.size(); ++i) {
    Aval want = outvars[i].aval();
    if (out_batched[i]) want.shape.insert(want.shape.begin(), axis.size);
    const Aval got = outs[i].aval();
    if (got.shape != want.shape || got.dtype != want.dtype)
      fail("custom_vmap", "'", name, "': the batching rule's output ", i, " is ", got.str(), " but ",
           out_batched[i] ? "batched" : "unbatched", " it must be ", want.str());
    r.dims.push_back(out_batched[i] ? 0 : kNotMapped);
  }
  return r;
}

// The batching rule of the jvp program [primals (n), tangents (n)] -> [outs, tangent outs]:
// the jvp of `rule`. A primal and its tangent have one type, so when only one of a pair is
// batched the other is broadcast to the batch (JAX vmaps over such "extra" batched values
// instead: the same numbers).
FlatVmapRule jvp_of_rule(std::shared_ptr<const FlatVmapRule> rule, size_t n, std::string name) {
  return [rule = std::move(rule), n, name = std::move(name)](int64_t size, const std::vector<bool>& in_batched,
                                                             std::span<const Array> xs) {
    std::vector<bool> batched(n);
    std::vector<Array> ps, ts;
    auto to_batch = [size](const Array& x) {
      Shape s = x.shape();
      s.insert(s.begin(), size);
      return numpy::broadcast_to(x, s);
    };
    for (size_t i = 0; i < n; ++i) {
      batched[i] = in_batched[i] || in_batched[n + i];
      ps.push_back(batched[i] && !in_batched[i] ? to_batch(xs[i]) : xs[i]);
      ts.push_back(batched[i] && !in_batched[n + i] ? to_batch(xs[n + i]) : xs[n + i]);
    }
    std::vector<bool> out_batched;
    FlatFn batched_f = [&](std::span<const Array> p) {
      auto [outs, flags] = (*rule)(size, batched, p);
      out_batched = std::move(flags);
      return outs;
    };
    auto [outs, touts] = jvp_flat(batched_f, ps, ts, "custom_vmap");
    if (touts.size() != outs.size() || out_batched.size() != outs.size())
      fail("custom_vmap", "'", name, "': the batching rule returned ", outs.size(), " outputs and ",
           out_batched.size(), " out_batched flags");
    outs.insert(outs.end(), touts.begin(), touts.end());
    std::vector<bool> flags = out_batched;
    flags.insert(flags.end(), out_batched.begin(), out_batched.end());
    return std::pair{std::move(outs), std::move(flags)};
  };
}

JvpResult custom_vmap_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  const JaxprRef& body = body_of(params);
  const auto k = static_cast<size_t>(params.get_int("num_consts"));
  for (size_t i = 0; i < k; ++i)
    if (tangents[i].valid()) return jvp_of_call(body, primals, tangents);
  const size_t n = primals.size() - k, m = body->jaxpr.outvars.size();
  std::vector<bool> nonzero(k, false);
  nonzero.resize(k + n, true);
  auto jvp = jvp_of_body(body, nonzero, std::vector<bool>(m, true));
  std::vector<Array> operands = jvp->consts;
  operands.insert(operands.end(), primals.begin(), primals.end());
  for (size_t i = k; i < primals.size(); ++i)
    operands.push_back(ad::instantiate(tangents[i], tangent_aval(primals[i].aval())));
  const std::string& name = params.get_string("name");
  Params p{{"jaxpr", jvp->body}, {"name", name}, {"num_consts", static_cast<int64_t>(jvp->consts.size() + k)}};
  if (params.has("linearized")) {
    p.set("linearized", std::string("primal"));
    p.set("rule", int64_t{-1});
  } else {
    p.set("rule", registry().add(jvp_of_rule(registry().get(params.get_int("rule")), n, name)));
  }
  std::vector<Array> outs = jx::bind(custom_vmap_call_p, operands, p);
  JvpResult r;
  r.primals_out.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(m));
  r.tangents_out.assign(outs.begin() + static_cast<std::ptrdiff_t>(m), outs.end());
  return r;
}

// Reverse mode's tangent half (and any call applied to tangents) is linear in its linear
// operands when its body is: transpose_jaxpr of the body, evaluated inline.
std::vector<Array> custom_vmap_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                         const Params& params) {
  std::vector<bool> linear, ct_nonzero;
  std::vector<Array> in;
  for (const TransposeOperand& o : operands) linear.push_back(o.is_linear());
  for (const Array& ct : cts) ct_nonzero.push_back(ct.valid());
  auto t = transpose_of_body(body_of(params), linear, ct_nonzero);
  in = t->consts;
  for (const TransposeOperand& o : operands)
    if (!o.is_linear()) in.push_back(o.value);
  for (const Array& ct : cts)
    if (ct.valid()) in.push_back(ct);
  std::vector<Array> lin_cts = eval_jaxpr(t->body->jaxpr, {}, in);
  std::vector<Array> out(operands.size());
  for (size_t i = 0, j = 0; i < operands.size(); ++i)
    if (operands[i].is_linear()) out[i] = lin_cts[j++];
  return out;
}

}  // namespace

std::vector<Array> custom_vmap_flat(const std::string& name, const FlatFn& f, FlatVmapRule rule,
                                    std::span<const Array> args) {
  if (current_trace() == nullptr) return f(args);
  std::vector<Aval> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  std::vector<Array> operands;
  JaxprRef body = body_with_consts_first(stage_flat(f, avals, "custom_vmap"), &operands);
  const auto num_consts = static_cast<int64_t>(operands.size());
  operands.insert(operands.end(), args.begin(), args.end());
  return jx::bind(custom_vmap_call_p, operands,
                  {{"jaxpr", body},
                   {"rule", registry().add(std::move(rule))},
                   {"name", name},
                   {"num_consts", num_consts}});
}

void custom_vmap_structure_error(const std::string& name, const std::string& got, const std::string& expected) {
  fail("custom_vmap", "'", name, "': the batching rule's output has structure ", got,
       " but the function's output has ", expected);
}

}  // namespace detail

const Primitive custom_vmap_call_p(
    "custom_vmap_call",
    {.traits = kCallsSubprogram | kCall | kLinear,
     .num_outputs = -1,
     .abstract_eval = [](std::span<const Aval> in,
                         const Params& params) { return detail::call_out_avals("custom_vmap_call", in, params); },
     .impl = [](std::span<const Array> in, const Params& params,
                std::span<const Aval>) { return eval_jaxpr(detail::body_of(params)->jaxpr, {}, in); },
     .jvp = detail::custom_vmap_jvp,
     .transpose = detail::custom_vmap_transpose,
     .batch = detail::custom_vmap_batch,
     .partial_eval =
         [](const std::vector<bool>& unknowns, const Params& params) {
           auto split = detail::partial_eval_of_body(detail::body_of(params), unknowns);
           const std::string& name = params.get_string("name");
           Params known{{"name", name}, {"num_consts", int64_t{0}}, {"rule", int64_t{-1}}, {"linearized", std::string("primal")}};
           const auto lead = static_cast<int64_t>(split->unknown_consts.size() + split->num_residuals);
           Params unknown{{"name", name}, {"num_consts", lead}, {"rule", int64_t{-1}}, {"linearized", std::string("tangent")}};
           return detail::split_call(*split, custom_vmap_call_p, known, custom_vmap_call_p, unknown);
         }});

}  // namespace jx
