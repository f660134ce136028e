// Rematerialization (jx/checkpoint.h): the `checkpoint` primitive, a call of its body
// whose partial evaluation saves only what its policy allows and recomputes the rest in
// the unknown (backward) half; `checkpoint_name`, the identity policies see; and
// `optimization_barrier`, the identity the recomputation reads its inputs through, which
// jit's CSE and constant folding leave alone so the recomputation is not merged back
// into the forward pass.
#include "jx/checkpoint.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "jx/error.h"
#include "lax/primitives.h"
#include "lax/rules.h"
#include "transforms/call_rules.h"
#include "transforms/jaxpr_transforms.h"

namespace jx {
namespace lax {

// Identities, linear: the tangent and the cotangent pass through (unnamed, unbarriered:
// only primal values are saved or recomputed).
JvpResult identity_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                       const Params& params) {
  return JvpResult{jx::bind(p, std::vector<Array>{primals[0]}, params), {tangents[0]}};
}
BatchResult identity_batch(const Primitive& p, std::span<const Array> args, std::span<const int64_t> dims,
                           const Params& params) {
  return BatchResult{jx::bind(p, std::vector<Array>{args[0]}, params), {dims[0]}};
}

const Primitive checkpoint_name_p(
    "checkpoint_name",
    {.traits = kLinear,
     .abstract_eval =
         [](std::span<const Aval> in, const Params& params) {
           if (in.size() != 1) detail::fail("checkpoint_name", "takes one operand, got ", in.size());
           const std::string& name = params.get_string("name");
           if (name.empty() || name.find('\'') != std::string::npos)
             detail::fail("checkpoint_name", "the name '", name, "' must be non-empty and hold no '");
           return std::vector<Aval>{in[0]};
         },
     .impl = [](std::span<const Array> in, const Params&, std::span<const Aval>) { return std::vector<Array>{in[0]}; },
     .jvp = [](std::span<const Array> primals, std::span<const Array> tangents,
               const Params& params) { return identity_jvp(checkpoint_name_p, primals, tangents, params); },
     .transpose = [](std::span<const Array> cts, std::span<const TransposeOperand>,
                     const Params&) { return std::vector<Array>{cts[0]}; },
     .batch = [](std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                 const BatchAxis&) { return identity_batch(checkpoint_name_p, args, dims, params); }});

const Primitive optimization_barrier_p(
    "optimization_barrier",
    {.traits = kLinear,
     .abstract_eval =
         [](std::span<const Aval> in, const Params&) {
           if (in.size() != 1) detail::fail("optimization_barrier", "takes one operand, got ", in.size());
           return std::vector<Aval>{in[0]};
         },
     .impl = [](std::span<const Array> in, const Params&, std::span<const Aval>) { return std::vector<Array>{in[0]}; },
     .jvp = [](std::span<const Array> primals, std::span<const Array> tangents,
               const Params& params) { return identity_jvp(optimization_barrier_p, primals, tangents, params); },
     .transpose = [](std::span<const Array> cts, std::span<const TransposeOperand>,
                     const Params&) { return std::vector<Array>{cts[0]}; },
     .batch = [](std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                 const BatchAxis&) { return identity_batch(optimization_barrier_p, args, dims, params); }});

}  // namespace lax

extern const Primitive checkpoint_p;

namespace {

const JaxprRef& body_of(const Params& params) { return detail::call_body(params, "checkpoint"); }

// The policy text parsed: which equations' results the forward pass may save.
struct Policy {
  enum Kind { kNothing, kEverything, kDots, kNames } kind = kNothing;
  std::unordered_set<std::string> names;

  bool saves(const Equation& e) const {
    if (e.outputs.size() != 1) return false;
    switch (kind) {
      case kEverything: return true;
      case kDots: return e.primitive == &lax::dot_general_p;
      case kNames:
        return e.primitive == &lax::checkpoint_name_p && names.count(e.params.get_string("name")) > 0;
      default: return false;
    }
  }
};

Policy parse_policy(const std::string& text) {
  Policy p;
  const std::string prefix = "save_only_these_names(";
  if (text == "nothing_saveable") p.kind = Policy::kNothing;
  else if (text == "everything_saveable") p.kind = Policy::kEverything;
  else if (text == "dots_saveable") p.kind = Policy::kDots;
  else if (text.starts_with(prefix) && text.ends_with(")")) {
    p.kind = Policy::kNames;
    std::string list = text.substr(prefix.size(), text.size() - prefix.size() - 1);
    for (size_t start = 0; start <= list.size();) {
      size_t end = std::min(list.find(',', start), list.size());
      if (end > start) p.names.insert(list.substr(start, end - start));
      start = end + 1;
    }
  } else {
    detail::fail("checkpoint", "unknown policy '", text,
                 "' (nothing_saveable, everything_saveable, dots_saveable or save_only_these_names(...))");
  }
  return p;
}

// A call of a transformed body with the same policy.
std::vector<Array> bind_body(const detail::TransformedBody& t, std::span<const Array> args, const Params& params) {
  std::vector<Array> operands = t.consts;
  operands.insert(operands.end(), args.begin(), args.end());
  Params p = params;
  return jx::bind(checkpoint_p, operands, p.set("jaxpr", t.body));
}

// jvp: a checkpoint of the body's jvp program, so partial evaluation (reverse mode)
// meets the checkpoint and applies its policy.
JvpResult checkpoint_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  std::vector<bool> nonzero(tangents.size());
  for (size_t i = 0; i < tangents.size(); ++i) nonzero[i] = tangents[i].valid();
  auto j = detail::jvp_of_body(body_of(params), nonzero);
  Params p = params;
  std::vector<Array> outs =
      jx::bind(checkpoint_p, detail::jvp_call_operands(*j, primals, tangents), p.set("jaxpr", j->body));
  return detail::split_jvp_outputs(std::move(outs), j->out_flags);
}

BatchResult checkpoint_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                             const BatchAxis& axis) {
  auto b = detail::batch_of_body(body_of(params), dims, axis, /*instantiate_all=*/false);
  BatchResult r{bind_body(*b, args, params), {}};
  for (bool batched : b->out_flags) r.dims.push_back(batched ? 0 : kNotMapped);
  return r;
}

std::vector<Array> checkpoint_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                        const Params& params) {
  std::vector<bool> linear(operands.size()), ct_nonzero(cts.size());
  for (size_t i = 0; i < operands.size(); ++i) linear[i] = operands[i].is_linear();
  for (size_t k = 0; k < cts.size(); ++k) ct_nonzero[k] = cts[k].valid();
  // The body's non-linear part (the recomputation) runs forward inside the transposed
  // body, which stays a checkpoint: a call whose barriers jit keeps.
  auto t = detail::transpose_of_body(body_of(params), linear, ct_nonzero);
  std::vector<Array> in;
  for (const TransposeOperand& o : operands)
    if (!o.is_linear()) in.push_back(o.value);
  for (const Array& ct : cts)
    if (ct.valid()) in.push_back(ct);
  std::vector<Array> lin_cts = bind_body(*t, in, params);
  std::vector<Array> out(operands.size());
  for (size_t i = 0, k = 0; i < operands.size(); ++i)
    if (operands[i].is_linear()) out[i] = std::move(lin_cts[k++]);
  return out;
}

JaxprRef as_body(Jaxpr j) {
  auto c = std::make_shared<ClosedJaxpr>();
  c->jaxpr = std::move(j);
  return c;
}

// The known half K: [kconsts..., known ins...] -> [known outs..., residuals...] and the
// unknown half U: [uconsts..., residuals..., unknown ins...] -> unknown outs, as
// partial_eval_jaxpr splits the body. The policy saves the values of K it allows that
// the residuals are computed from (K's inputs are always at hand); the unknown call, a
// checkpoint of [uconsts..., kconsts..., known ins..., saved..., unknown ins...] that
// reruns K's work on barriered inputs and then U. The known call computes only the known
// outputs and the saved values.
PartialEvalSplit checkpoint_partial_eval(const std::vector<bool>& unknowns, const Params& params) {
  Policy policy = parse_policy(params.get_string("policy"));
  auto split = detail::partial_eval_of_body(body_of(params), unknowns);
  if (policy.kind == Policy::kEverything) return detail::split_call(*split, checkpoint_p, params, checkpoint_p, params);

  const Jaxpr& k = split->known->jaxpr;
  const size_t n_res = split->num_residuals, n_kout = k.outvars.size() - n_res;
  const size_t n_uconsts = split->unknown_consts.size();
  // Every value of K the policy lets the forward pass save; R reads those it needs
  // instead of computing them (JAX's partial_eval_jaxpr_custom: an unsaveable value is
  // recomputed from its operands, recursively, down to saveable values or K's inputs).
  std::vector<Var> candidates;
  std::unordered_set<int64_t> candidate_ids;
  for (const Equation& e : k.eqns)
    if (policy.saves(e)) {
      candidates.push_back(e.outputs[0]);
      candidate_ids.insert(e.outputs[0].id);
    }
  // The recomputation R: [kconsts..., known ins..., saved...] -> K's residuals.
  Jaxpr recompute = k;
  recompute.invars.insert(recompute.invars.end(), candidates.begin(), candidates.end());
  std::erase_if(recompute.eqns, [&](const Equation& e) {
    return e.outputs.size() == 1 && candidate_ids.count(e.outputs[0].id) > 0;
  });
  recompute.outvars.erase(recompute.outvars.begin(), recompute.outvars.begin() + static_cast<std::ptrdiff_t>(n_kout));
  std::vector<bool> keep(recompute.invars.size(), false);
  std::fill(keep.begin(), keep.begin() + static_cast<std::ptrdiff_t>(k.invars.size()), true);
  detail::DcedJaxpr rd = detail::dce_jaxpr(recompute, std::vector<bool>(recompute.outvars.size(), true), keep);
  std::vector<Var> saved;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (rd.used_inputs[k.invars.size() + i]) saved.push_back(candidates[i]);

  // The known call: K's known outputs and the saved values.
  Jaxpr known = k;
  known.outvars.erase(known.outvars.begin() + static_cast<std::ptrdiff_t>(n_kout), known.outvars.end());
  known.outvars.insert(known.outvars.end(), saved.begin(), saved.end());
  detail::DcedJaxpr kd = detail::dce_jaxpr(known, std::vector<bool>(known.outvars.size(), true),
                                           std::vector<bool>(known.invars.size(), true));
  JaxprRef r_body = as_body(std::move(rd.jaxpr)), u_body = split->unknown;
  const bool barrier = params.get_bool("prevent_cse");

  // The unknown call's body, staged: barriers, R, U.
  const size_t n_r_in = r_body->jaxpr.invars.size();
  std::vector<Aval> avals;
  for (const Var& v : u_body->jaxpr.invars) avals.push_back(v.aval);  // [uconsts, residuals, unknown ins]
  std::vector<Aval> u_avals = avals;
  avals.erase(avals.begin() + static_cast<std::ptrdiff_t>(n_uconsts),
              avals.begin() + static_cast<std::ptrdiff_t>(n_uconsts + n_res));
  std::vector<Aval> r_avals = r_body->jaxpr.in_avals();
  avals.insert(avals.begin() + static_cast<std::ptrdiff_t>(n_uconsts), r_avals.begin(), r_avals.end());
  const size_t n_unknown_in = u_avals.size() - n_uconsts - n_res;
  auto run = [&](std::span<const Array> in) {
    std::vector<Array> r_in(in.begin() + static_cast<std::ptrdiff_t>(n_uconsts),
                            in.begin() + static_cast<std::ptrdiff_t>(n_uconsts + n_r_in));
    if (barrier)
      for (Array& x : r_in) x = jx::bind(lax::optimization_barrier_p, std::vector<Array>{x}, {})[0];
    std::vector<Array> residuals = eval_jaxpr(r_body->jaxpr, {}, r_in);
    std::vector<Array> u_in(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n_uconsts));
    u_in.insert(u_in.end(), residuals.begin(), residuals.end());
    u_in.insert(u_in.end(), in.end() - static_cast<std::ptrdiff_t>(n_unknown_in), in.end());
    return eval_jaxpr(u_body->jaxpr, {}, u_in);
  };
  std::vector<Array> unknown_consts;
  JaxprRef unknown_body = detail::body_with_consts_first(detail::make_jaxpr_flat(run, avals), &unknown_consts);

  PartialEvalSplit s;
  s.known = kd.jaxpr.outvars.empty() ? nullptr : &checkpoint_p;
  Params kp = params, up = params;
  s.known_params = std::move(kp.set("jaxpr", as_body(std::move(kd.jaxpr))));
  s.known_consts = split->known_consts;
  s.unknown = &checkpoint_p;
  s.unknown_params = std::move(up.set("jaxpr", unknown_body));
  // unknown call operands, indices into [unknown_consts (new, uconsts, kconsts), saved, operands]
  s.unknown_consts = unknown_consts;
  s.unknown_consts.insert(s.unknown_consts.end(), split->unknown_consts.begin(), split->unknown_consts.end());
  s.unknown_consts.insert(s.unknown_consts.end(), split->known_consts.begin(), split->known_consts.end());
  const size_t lead = s.unknown_consts.size(), n_saved = saved.size();
  for (size_t i = 0; i < lead; ++i) s.unknown_operands.push_back(i);
  const size_t ops = lead + n_saved;
  for (size_t i = 0; i < unknowns.size(); ++i)
    if (!unknowns[i]) s.unknown_operands.push_back(ops + i);
  for (size_t i = 0; i < n_saved; ++i) s.unknown_operands.push_back(lead + i);
  for (size_t i = 0; i < unknowns.size(); ++i)
    if (unknowns[i]) s.unknown_operands.push_back(ops + i);
  s.out_unknowns = split->out_unknowns;
  s.num_residuals = n_saved;
  return s;
}

}  // namespace

const Primitive checkpoint_p(
    "checkpoint",
    {.traits = kCallsSubprogram | kCall | kLinear,
     .num_outputs = -1,
     .abstract_eval =
         [](std::span<const Aval> in, const Params& params) {
           parse_policy(params.get_string("policy"));
           params.get_bool("prevent_cse");
           return detail::call_out_avals("checkpoint", in, params);
         },
     .impl = [](std::span<const Array> in, const Params& params,
                std::span<const Aval>) { return eval_jaxpr(body_of(params)->jaxpr, {}, in); },
     .jvp = checkpoint_jvp,
     .transpose = checkpoint_transpose,
     .batch = checkpoint_batch,
     .partial_eval = checkpoint_partial_eval,
     .dce = detail::dce_of_call});

CheckpointPolicy checkpoint_policies::save_only_these_names(const std::vector<std::string>& names) {
  std::string text = "save_only_these_names(";
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty() || names[i].find_first_of(",()'") != std::string::npos)
      detail::fail("checkpoint", "save_only_these_names: name '", names[i],
                   "' must be non-empty and hold none of , ( ) '");
    text += (i ? "," : "") + names[i];
  }
  return CheckpointPolicy{text + ")"};
}

namespace detail {

std::vector<Array> checkpoint_flat(const FlatFn& f, std::span<const Array> args, const CheckpointOptions& options) {
  parse_policy(options.policy.text);
  std::vector<Aval> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  std::vector<Array> operands;
  JaxprRef body = body_with_consts_first(make_jaxpr_flat(f, avals), &operands);
  operands.insert(operands.end(), args.begin(), args.end());
  return jx::bind(checkpoint_p, operands,
                  {{"jaxpr", body}, {"name", std::string("checkpoint")}, {"policy", options.policy.text},
                   {"prevent_cse", options.prevent_cse}});
}

Array checkpoint_name_array(const Array& x, const std::string& name) {
  if (!x.valid()) fail("checkpoint_name", "x is a null jx::Array");
  return jx::bind(lax::checkpoint_name_p, std::vector<Array>{x}, {{"name", name}})[0];
}

}  // namespace detail
}  // namespace jx
