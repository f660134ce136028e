// jx::custom_vjp (include/jx/custom_derivatives.h), JAX's custom_vjp, as two primitives.
//
// custom_vjp_call: operands [consts..., nondiff..., args...], the leading `num_consts` the
// constants the programs closed over (lifted: sub-programs hold no constvars) and the next
// `num_nondiff` the arguments bwd reads. Params: `jaxpr` (f: operands -> outs), `fwd`
// (operands -> [outs..., residuals...]), `bwd` ([consts..., nondiff..., residuals...,
// output cotangents...] -> a cotangent per arg), `name`. Shape rule, eager evaluation and
// jit (inline_calls inlines every kCall) are a call's: f runs. jvp runs fwd (inline: its
// equations are ordinary, so an outer derivative differentiates them) and binds
// custom_lin on the residuals and the args' tangents; vmap batches the three programs.
//
// custom_lin (JAX's custom_lin): [consts..., nondiff..., residuals..., arg tangents...] ->
// output tangents, linear in the tangents. Reverse mode (linearize) stages it, since its
// tangents are unknown there, and its transpose runs bwd on the residuals and the output
// cotangents; evaluated with known tangents it is forward mode, which a custom_vjp has no
// rule for, so it raises.
#include "jx/custom_derivatives.h"
#include "jx/error.h"
#include "jx/numpy.h"
#include "transforms/ad_util.h"
#include "transforms/call_rules.h"
#include "transforms/custom_jvp.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/staging.h"

namespace jx {
extern const Primitive custom_vjp_call_p;
extern const Primitive custom_lin_p;

namespace detail {
namespace {

const JaxprRef& program(const Params& params, const char* key, const char* prim) {
  const JaxprRef& j = params.get_jaxpr(key);
  if (!j) fail(prim, "has a null ", key, " sub-program");
  return j;
}

[[noreturn]] void forward_mode_error(const std::string& name) {
  fail("custom_vjp", "'", name, "': can't apply forward-mode autodiff (jvp) to a custom_vjp function; its ",
       "derivative is a reverse-mode rule (use grad, vjp or jacrev, or give it a jx::custom_jvp rule)");
}

// Binds custom_vjp_call of the three programs over `operands`, whose first `num_consts` are
// constants already. Each program's own constants are lifted in front (f's, fwd's, bwd's)
// and every program takes all of them.
std::vector<Array> bind_custom_vjp_programs(const std::string& name, ClosedJaxpr f, ClosedJaxpr fwd, ClosedJaxpr bwd,
                                            std::span<const Array> operands, size_t num_consts, size_t num_nondiff) {
  std::vector<Array> cf, cfwd, cbwd;
  auto fb = std::const_pointer_cast<ClosedJaxpr>(body_with_consts_first(std::move(f), &cf));
  auto fwdb = std::const_pointer_cast<ClosedJaxpr>(body_with_consts_first(std::move(fwd), &cfwd));
  auto bwdb = std::const_pointer_cast<ClosedJaxpr>(body_with_consts_first(std::move(bwd), &cbwd));
  std::vector<Array> all = cf;
  all.insert(all.end(), cfwd.begin(), cfwd.end());
  all.insert(all.end(), cbwd.begin(), cbwd.end());
  insert_unused_inputs(*fb, cf.size(), std::span<const Array>(all).subspan(cf.size()));
  insert_unused_inputs(*fwdb, 0, cf);
  insert_unused_inputs(*fwdb, cf.size() + cfwd.size(), cbwd);
  insert_unused_inputs(*bwdb, 0, std::span<const Array>(all).first(cf.size() + cfwd.size()));
  const auto n = static_cast<int64_t>(all.size() + num_consts);
  all.insert(all.end(), operands.begin(), operands.end());
  return jx::bind(custom_vjp_call_p, all,
                  {{"jaxpr", JaxprRef(fb)},
                   {"fwd", JaxprRef(fwdb)},
                   {"bwd", JaxprRef(bwdb)},
                   {"name", name},
                   {"num_consts", n},
                   {"num_nondiff", static_cast<int64_t>(num_nondiff)}});
}

// bwd batched: its leading inputs (consts, nondiff, residuals) batched as `lead_dims` say,
// the output cotangents at 0; every cotangent it returns comes batched at 0, summed over
// the batch for an argument that is not batched (`arg_batched` false), whose cotangent
// has the argument's unbatched type.
ClosedJaxpr batch_bwd(const ClosedJaxpr& bwd, const BatchAxis& axis, std::vector<int64_t> lead_dims,
                      const std::vector<bool>& arg_batched) {
  const size_t num_in = bwd.jaxpr.invars.size();
  lead_dims.resize(num_in, 0);
  BatchedJaxpr b = batch_jaxpr(bwd, axis.size, lead_dims, std::vector<bool>(arg_batched.size(), true), axis.name);
  FlatFn summed = [&](std::span<const Array> xs) {
    std::vector<Array> cts = eval_jaxpr(b.jaxpr, xs);
    for (size_t i = 0; i < cts.size(); ++i)
      if (!arg_batched[i]) cts[i] = numpy::sum(cts[i], 0);
    return cts;
  };
  return stage_flat(summed, b.jaxpr.in_avals(), "vmap");
}

struct Layout {
  size_t consts, nondiff, res;
};
Layout lin_layout(const Params& params) {
  return {static_cast<size_t>(params.get_int("num_consts")), static_cast<size_t>(params.get_int("num_nondiff")),
          static_cast<size_t>(params.get_int("num_res"))};
}

// ---- custom_vjp_call ----

JvpResult custom_vjp_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  const std::string& name = params.get_string("name");
  const auto k = static_cast<size_t>(params.get_int("num_consts"));
  const auto nd = static_cast<size_t>(params.get_int("num_nondiff"));
  for (size_t i = 0; i < k; ++i)
    if (tangents[i].valid())
      fail("custom_vjp", "'", name, "' closes over a value being differentiated (", primals[i].aval().str(),
           "); pass it as an argument so its derivative goes through bwd");
  for (size_t i = k; i < k + nd; ++i)
    if (tangents[i].valid())
      fail("custom_vjp", "'", name, "': a nondiff_argnums argument (", primals[i].aval().str(),
           ") is being differentiated; bwd gives it no cotangent, so pass it as an ordinary argument");
  const size_t num_out = call_body(params, "custom_vjp_call")->jaxpr.outvars.size();
  std::vector<Array> outs = eval_jaxpr(program(params, "fwd", "custom_vjp_call")->jaxpr, {}, primals);
  std::vector<Array> lin_in(primals.begin(), primals.begin() + static_cast<std::ptrdiff_t>(k + nd));
  lin_in.insert(lin_in.end(), outs.begin() + static_cast<std::ptrdiff_t>(num_out), outs.end());
  const auto num_res = static_cast<int64_t>(outs.size() - num_out);
  for (size_t i = k + nd; i < primals.size(); ++i)
    lin_in.push_back(ad::instantiate(tangents[i], tangent_aval(primals[i].aval())));
  outs.resize(num_out);
  std::vector<Array> lin_out = jx::bind(custom_lin_p, lin_in,
                                        {{"bwd", params.get_jaxpr("bwd")},
                                         {"name", name},
                                         {"num_consts", static_cast<int64_t>(k)},
                                         {"num_nondiff", static_cast<int64_t>(nd)},
                                         {"num_res", num_res}});
  return JvpResult{std::move(outs), std::move(lin_out)};
}

// Batched operands moved to axis 0, so every batched value (and cotangent) has it there.
std::vector<Array> batch_axes_to_front(std::span<const Array> args, std::span<const int64_t> dims,
                                       std::vector<int64_t>* front) {
  std::vector<Array> moved;
  for (size_t i = 0; i < args.size(); ++i) {
    moved.push_back(dims[i] > 0 ? numpy::moveaxis(args[i], dims[i], 0) : args[i]);
    front->push_back(dims[i] == kNotMapped ? kNotMapped : 0);
  }
  return moved;
}

BatchResult custom_vjp_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                             const BatchAxis& axis) {
  const auto k = static_cast<size_t>(params.get_int("num_consts"));
  const auto nd = static_cast<size_t>(params.get_int("num_nondiff"));
  std::vector<int64_t> d;
  std::vector<Array> moved = batch_axes_to_front(args, dims, &d);
  const JaxprRef& f = call_body(params, "custom_vjp_call");
  const JaxprRef& fwd = program(params, "fwd", "custom_vjp_call");
  BatchedJaxpr bf = batch_jaxpr(*f, axis.size, d, std::vector<bool>(f->jaxpr.outvars.size(), true), axis.name);
  BatchedJaxpr bfwd = batch_jaxpr(*fwd, axis.size, d, std::vector<bool>(fwd->jaxpr.outvars.size(), true), axis.name);
  std::vector<int64_t> lead(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(k + nd));  // residuals: 0
  std::vector<bool> arg_batched;
  for (size_t i = k + nd; i < d.size(); ++i) arg_batched.push_back(d[i] != kNotMapped);
  ClosedJaxpr bbwd = batch_bwd(*program(params, "bwd", "custom_vjp_call"), axis, lead, arg_batched);
  std::vector<Array> outs = bind_custom_vjp_programs(params.get_string("name"), std::move(bf.jaxpr),
                                                     std::move(bfwd.jaxpr), std::move(bbwd), moved, k, nd);
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

// ---- custom_lin ----

std::vector<Aval> custom_lin_avals(std::span<const Aval> in, const Params& params) {
  const Layout l = lin_layout(params);
  const Jaxpr& bwd = program(params, "bwd", "custom_lin")->jaxpr;
  const size_t lead = l.consts + l.nondiff + l.res;
  if (bwd.invars.size() < lead || in.size() != lead + bwd.outvars.size())
    fail("custom_lin", "'", params.get_string("name"), "': got ", in.size(), " operands for a bwd program of ",
         bwd.invars.size(), " inputs and ", bwd.outvars.size(), " outputs");
  std::vector<Aval> out;
  for (size_t i = lead; i < bwd.invars.size(); ++i) out.push_back(bwd.invars[i].aval);
  return out;
}

std::vector<Array> custom_lin_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                        const Params& params) {
  const Layout l = lin_layout(params);
  const size_t lead = l.consts + l.nondiff + l.res;
  const Jaxpr& bwd = program(params, "bwd", "custom_lin")->jaxpr;
  std::vector<Array> in;
  for (size_t i = 0; i < lead; ++i) {
    if (operands[i].is_linear())
      fail("custom_lin", "'", params.get_string("name"), "': a residual or constant is linear; only the tangents are");
    in.push_back(operands[i].value);
  }
  for (size_t i = 0; i < cts.size(); ++i) in.push_back(ad::instantiate(cts[i], bwd.invars[lead + i].aval));
  std::vector<Array> arg_cts = eval_jaxpr(bwd, {}, in);
  std::vector<Array> out(lead);
  out.insert(out.end(), arg_cts.begin(), arg_cts.end());
  return out;
}

// vmap before transposition (a batched linear program): rebound with bwd batched, the
// output tangents batched at 0.
BatchResult custom_lin_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                             const BatchAxis& axis) {
  const Layout l = lin_layout(params);
  const size_t lead = l.consts + l.nondiff + l.res;
  std::vector<int64_t> d;
  std::vector<Array> moved = batch_axes_to_front(args, dims, &d);
  std::vector<bool> arg_batched;
  for (size_t i = lead; i < d.size(); ++i) arg_batched.push_back(d[i] != kNotMapped);
  ClosedJaxpr bbwd = batch_bwd(*program(params, "bwd", "custom_lin"), axis,
                               std::vector<int64_t>(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(lead)),
                               arg_batched);
  std::vector<Array> consts;
  auto body = std::const_pointer_cast<ClosedJaxpr>(body_with_consts_first(std::move(bbwd), &consts));
  std::vector<Array> all = consts;
  all.insert(all.end(), moved.begin(), moved.end());
  Params p = params;
  p.set("bwd", JaxprRef(body));
  p.set("num_consts", static_cast<int64_t>(consts.size() + l.consts));
  std::vector<Array> outs = jx::bind(custom_lin_p, all, p);
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

}  // namespace

std::vector<Array> custom_vjp_flat(const std::string& name, const FlatFn& f, const FlatFn& fwd, const FlatFn& bwd,
                                   std::span<const Array> args, size_t num_nondiff,
                                   std::span<const std::string> diff_labels) {
  if (current_trace() == nullptr) return f(args);
  std::vector<Aval> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  ClosedJaxpr f_program = stage_flat(f, avals, "custom_vjp");
  // fwd and bwd are staged when the call is: one that called its own custom function would
  // stage forever, so stop with a clear error instead of a stack overflow.
  thread_local int depth = 0;
  if (depth >= 32)
    fail("custom_vjp", "'", name, "': staging fwd and bwd nested 32 deep; they must compute with plain ",
         "operations, not call their own custom function");
  ++depth;
  struct Exit {
    ~Exit() { --depth; }
  } exit;
  ClosedJaxpr fwd_program = stage_flat(fwd, avals, "custom_vjp");
  const auto& f_out = f_program.jaxpr.outvars;
  const auto& fwd_out = fwd_program.jaxpr.outvars;
  if (fwd_out.size() < f_out.size())
    fail("custom_vjp", "'", name, "': fwd returned ", fwd_out.size(), " leaves, fewer than f's ", f_out.size(),
         " outputs");
  for (size_t i = 0; i < f_out.size(); ++i) {
    const Aval want = f_out[i].aval(), got = fwd_out[i].aval();
    if (got.shape != want.shape || got.dtype != want.dtype)
      fail("custom_vjp", "'", name, "': fwd's output ", i, " is ", got.str(), " but f's is ", want.str());
  }
  std::vector<Aval> bwd_avals(avals.begin(), avals.begin() + static_cast<std::ptrdiff_t>(num_nondiff));
  for (size_t i = f_out.size(); i < fwd_out.size(); ++i) bwd_avals.push_back(fwd_out[i].aval());
  for (const Atom& o : f_out) bwd_avals.push_back(tangent_aval(o.aval()));
  const std::span<const Array> diff = args.subspan(num_nondiff);
  FlatFn checked = [&](std::span<const Array> xs) {
    std::vector<Array> cts = bwd(xs);
    if (cts.size() != diff.size())
      fail("custom_vjp", "'", name, "': bwd returned ", cts.size(), " cotangents for ", diff.size(),
           " differentiated argument leaves");
    for (size_t i = 0; i < cts.size(); ++i) {
      const Aval want = tangent_aval(diff[i].aval());
      // An integer or bool argument has no cotangent: whatever bwd said, it is zero.
      if (!is_inexact(want.dtype)) {
        cts[i] = ad::zeros(want);
        continue;
      }
      const Aval got = cts[i].aval();
      if (got.shape != want.shape || got.dtype != want.dtype)
        fail("custom_vjp", "'", name, "': bwd's cotangent for ", diff_labels[i], " is ", got.str(),
             " but the argument is ", want.str(), "; a cotangent must have its argument's shape and dtype");
    }
    return cts;
  };
  ClosedJaxpr bwd_program = stage_flat(checked, bwd_avals, "custom_vjp");
  return bind_custom_vjp_programs(name, std::move(f_program), std::move(fwd_program), std::move(bwd_program), args,
                                  0, num_nondiff);
}

void custom_vjp_structure_error(const std::string& name, const std::string& what, const std::string& got,
                                const std::string& expected) {
  fail("custom_vjp", "'", name, "': ", what, " has structure ", got, " but ", expected);
}

}  // namespace detail

const Primitive custom_vjp_call_p(
    "custom_vjp_call",
    {.traits = kCallsSubprogram | kCall,
     .num_outputs = -1,
     .abstract_eval = [](std::span<const Aval> in,
                         const Params& params) { return detail::call_out_avals("custom_vjp_call", in, params); },
     .impl = [](std::span<const Array> in, const Params& params,
                std::span<const Aval>) { return eval_jaxpr(detail::call_body(params, "custom_vjp_call")->jaxpr, {}, in); },
     .jvp = detail::custom_vjp_jvp,
     .batch = detail::custom_vjp_batch});

const Primitive custom_lin_p(
    "custom_lin",
    {.traits = kCallsSubprogram | kLinear,
     .num_outputs = -1,
     .abstract_eval = detail::custom_lin_avals,
     .impl = [](std::span<const Array>, const Params& params,
                std::span<const Aval>) -> std::vector<Array> { detail::forward_mode_error(params.get_string("name")); },
     .jvp = [](std::span<const Array>, std::span<const Array>, const Params& params) -> JvpResult {
       detail::forward_mode_error(params.get_string("name"));
     },
     .transpose = detail::custom_lin_transpose,
     .batch = detail::custom_lin_batch});

}  // namespace jx
