// custom_jvp_call: a call primitive holding two sub-programs, the function (`jaxpr`,
// over all operands) and its derivative rule (`jvp`, over all operands then the tangents
// of the operands after the first `num_consts`). The leading `num_consts` operands are
// constants the two programs closed over (sub-programs hold no constvars); they carry no
// tangent. Shape rule and eager evaluation are closed_call's; jvp evaluates the rule's
// program; vmap batches both programs and binds the primitive again.
#include "transforms/custom_jvp.h"

#include <algorithm>

#include "core/array_internal.h"
#include "jx/error.h"
#include "transforms/ad_util.h"
#include "transforms/call_rules.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/staging.h"

namespace jx {
extern const Primitive custom_jvp_call_p;

namespace detail {
namespace {

std::vector<Aval> avals_of(std::span<const Array> xs) {
  std::vector<Aval> a;
  a.reserve(xs.size());
  for (const Array& x : xs) a.push_back(x.aval());
  return a;
}

int64_t max_var_id(const Jaxpr& j) {
  int64_t m = -1;
  for (const Var& v : j.constvars) m = std::max(m, v.id);
  for (const Var& v : j.invars) m = std::max(m, v.id);
  for (const Equation& e : j.eqns)
    for (const Var& v : e.outputs) m = std::max(m, v.id);
  return m;
}
}  // namespace

void insert_unused_inputs(ClosedJaxpr& body, size_t at, std::span<const Array> xs) {
  int64_t next = max_var_id(body.jaxpr) + 1;
  std::vector<Var> vars;
  for (const Array& x : xs) vars.push_back(Var{next++, x.aval()});
  auto& in = body.jaxpr.invars;
  in.insert(in.begin() + static_cast<std::ptrdiff_t>(at), vars.begin(), vars.end());
}

namespace {

// Binds one custom_jvp_call of the function program `f` (over `operands`) and the rule
// program `jvp` (over `operands` and the tangents of those after `num_consts`). The
// constants either program holds lead the operands (the function's, then the rule's);
// each program takes both sets.
std::vector<Array> bind_custom_jvp_programs(const std::string& name, ClosedJaxpr f, ClosedJaxpr jvp,
                                            std::span<const Array> operands, int64_t num_consts) {
  std::vector<Array> f_consts, jvp_consts;
  auto f_body = std::const_pointer_cast<ClosedJaxpr>(body_with_consts_first(std::move(f), &f_consts));
  auto jvp_body = std::const_pointer_cast<ClosedJaxpr>(body_with_consts_first(std::move(jvp), &jvp_consts));
  const size_t num_out = f_body->jaxpr.outvars.size();
  if (jvp_body->jaxpr.outvars.size() != 2 * num_out)
    fail("custom_jvp_call", "'", name, "': the rule gives ", jvp_body->jaxpr.outvars.size() / 2,
         " outputs but the function ", num_out);
  insert_unused_inputs(*f_body, f_consts.size(), jvp_consts);
  insert_unused_inputs(*jvp_body, 0, f_consts);
  std::vector<Array> all = f_consts;
  all.insert(all.end(), jvp_consts.begin(), jvp_consts.end());
  all.insert(all.end(), operands.begin(), operands.end());
  const int64_t n = static_cast<int64_t>(f_consts.size() + jvp_consts.size()) + num_consts;
  return jx::bind(custom_jvp_call_p, all,
                  {{"jaxpr", JaxprRef(f_body)}, {"jvp", JaxprRef(jvp_body)}, {"name", name}, {"num_consts", n}});
}

// Stages f and its rule jvp, then binds them.
std::vector<Array> bind_custom_jvp(const std::string& name, const FlatFn& f, const FlatFn& jvp,
                                   std::span<const Array> operands, int64_t num_consts) {
  std::vector<Aval> avals = avals_of(operands);
  std::vector<Aval> jvp_avals = avals;
  for (size_t i = static_cast<size_t>(num_consts); i < avals.size(); ++i) jvp_avals.push_back(tangent_aval(avals[i]));
  ClosedJaxpr f_program = stage_flat(f, avals, "custom_jvp");
  // Rules are staged when bound, so a rule that called its own custom function would
  // stage forever: stop with a clear error instead of a stack overflow.
  thread_local int rule_depth = 0;
  if (rule_depth >= 32)
    fail("custom_jvp_call", "'", name, "': staging rules nested 32 deep; a rule must compute with the plain ",
         "composite, not call its own custom function");
  ClosedJaxpr jvp_program;
  {
    ++rule_depth;
    struct Exit {
      ~Exit() { --rule_depth; }
    } exit;
    jvp_program = stage_flat(jvp, jvp_avals, "custom_jvp");
  }
  return bind_custom_jvp_programs(name, std::move(f_program), std::move(jvp_program), operands, num_consts);
}

const JaxprRef& rule_body(const Params& params) {
  const JaxprRef& j = params.get_jaxpr("jvp");
  if (!j) fail("custom_jvp_call", "has a null jvp sub-program");
  return j;
}

JvpResult custom_jvp_rule(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  const std::string& name = params.get_string("name");
  const size_t k = static_cast<size_t>(params.get_int("num_consts"));
  for (size_t i = 0; i < k; ++i)
    if (tangents[i].valid())
      fail("custom_jvp_call", "'", name, "' closes over a value being differentiated (", primals[i].aval().str(),
           "); pass it as an argument so its derivative goes through the rule");
  std::vector<Array> in(primals.begin(), primals.end());
  for (size_t i = k; i < primals.size(); ++i) {
    const Array& p = primals[i];
    in.push_back(ad::instantiate(tangents[i], tangent_aval(p.aval())));
  }
  std::vector<Array> outs = eval_jaxpr(rule_body(params)->jaxpr, {}, in);
  const size_t m = outs.size() / 2;
  JvpResult r;
  r.primals_out.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(m));
  r.tangents_out.assign(outs.begin() + static_cast<std::ptrdiff_t>(m), outs.end());
  return r;
}

// vmap: the function and its rule batched together (batch_jaxpr), bound again, so
// grad(vmap(f)) still uses the rule. A tangent is batched exactly as its primal is.
BatchResult custom_jvp_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                             const BatchAxis& axis) {
  const size_t k = static_cast<size_t>(params.get_int("num_consts"));
  std::vector<int64_t> in_dims(dims.begin(), dims.end());
  std::vector<int64_t> jvp_dims = in_dims;
  jvp_dims.insert(jvp_dims.end(), in_dims.begin() + static_cast<std::ptrdiff_t>(k), in_dims.end());
  const JaxprRef& f = call_body(params, "custom_jvp_call");
  const JaxprRef& rule = rule_body(params);
  BatchedJaxpr bf = batch_jaxpr(*f, axis.size, in_dims, std::vector<bool>(f->jaxpr.outvars.size(), true), axis.name);
  BatchedJaxpr brule =
      batch_jaxpr(*rule, axis.size, jvp_dims, std::vector<bool>(rule->jaxpr.outvars.size(), true), axis.name);
  std::vector<Array> outs = bind_custom_jvp_programs(params.get_string("name"), std::move(bf.jaxpr),
                                                     std::move(brule.jaxpr), args, static_cast<int64_t>(k));
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

}  // namespace

std::vector<Array> custom_jvp_call(const std::string& name, const FlatFn& f, const CustomJvpRule& jvp,
                                   std::span<const Array> args) {
  if (current_trace() == nullptr) return f(args);
  const size_t n = args.size();
  FlatFn rule = [&jvp, &name, n](std::span<const Array> xs) {
    auto [p, t] = jvp(xs.first(n), xs.subspan(n));
    if (p.size() != t.size())
      fail("custom_jvp_call", "'", name, "': the rule returned ", t.size(), " tangents for ", p.size(), " outputs");
    p.insert(p.end(), t.begin(), t.end());
    return p;
  };
  return bind_custom_jvp(name, f, rule, args, 0);
}

}  // namespace detail

const Primitive custom_jvp_call_p(
    "custom_jvp_call",
    {.traits = kCallsSubprogram | kCall,
     .num_outputs = -1,
     .abstract_eval = [](std::span<const Aval> in,
                         const Params& params) { return detail::call_out_avals("custom_jvp_call", in, params); },
     .impl = [](std::span<const Array> in, const Params& params,
                std::span<const Aval>) { return eval_jaxpr(detail::call_body(params, "custom_jvp_call")->jaxpr, {}, in); },
     .jvp = detail::custom_jvp_rule,
     .batch = detail::custom_jvp_batch});

}  // namespace jx
