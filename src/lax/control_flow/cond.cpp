// cond: JAX's structured conditional. Operands (index, operands...): index an int32
// scalar choosing a branch (clamped into range, as select_n clamps), params branch0 ..
// branch{N-1} (bodies taking exactly the operands; the constants of every branch are among
// the operands, each branch taking all of them) and num_branches. Each rule applies the
// jaxpr-level transformations (transforms/jaxpr_transforms.h) to every branch and makes
// the branches agree (on nonzero tangents, batched outputs, unknown outputs, residuals),
// as JAX's rules in lax/control_flow/conditionals.py do.
#include "jx/control_flow/cond.h"

#include <algorithm>
#include <map>

#include "core/subprogram.h"
#include "jx/error.h"
#include "jx/lax.h"
#include "lax/batch_rules.h"
#include "lax/control_flow/control_flow_util.h"
#include "lax/rules.h"
#include "transforms/ad_util.h"
#include "transforms/call_rules.h"
#include "transforms/jaxpr_transforms.h"

namespace jx::lax {

extern const Primitive cond_p;

namespace {

using detail::BodyWithConsts;

std::string branch_param(size_t i) { return "branch" + std::to_string(i); }

std::vector<JaxprRef> branches_of(const Params& params) {
  const int64_t n = params.get_int("num_branches");
  if (n < 1) detail::fail("cond", "num_branches must be at least 1, got ", n);
  std::vector<JaxprRef> out;
  for (int64_t i = 0; i < n; ++i) {
    const std::string name = branch_param(static_cast<size_t>(i));
    if (!params.has(name)) detail::fail("cond", "num_branches=", n, " but parameter ", name, " is missing");
    const JaxprRef& b = params.get_jaxpr(name);
    if (!b) detail::fail("cond", name, " is a null sub-program");
    out.push_back(b);
  }
  return out;
}

Params cond_params(std::span<const JaxprRef> branches) {
  Params p{{"num_branches", static_cast<int64_t>(branches.size())}};
  for (size_t i = 0; i < branches.size(); ++i) p.set(branch_param(i), branches[i]);
  return p;
}

size_t num_outputs(const std::vector<JaxprRef>& branches) { return branches[0]->jaxpr.outvars.size(); }

// Binds a cond of these branches, each with its own leading constants: the constants are
// joined into one list every branch takes, placed after the index.
std::vector<Array> bind_cond(const Array& index, std::span<const BodyWithConsts> branches,
                             std::span<const Array> operands) {
  detail::JoinedConsts joined = detail::join_consts(branches);
  std::vector<JaxprRef> bodies = detail::bodies_taking_joined_consts(branches, joined, "cond");
  std::vector<Array> in{index};
  in.insert(in.end(), joined.values.begin(), joined.values.end());
  in.insert(in.end(), operands.begin(), operands.end());
  return jx::bind(cond_p, in, cond_params(bodies));
}

// ---- shape rule and impl ----

std::vector<Aval> cond_abstract_eval(std::span<const Aval> in, const Params& params) {
  std::vector<JaxprRef> branches = branches_of(params);
  if (in.empty()) detail::fail("cond", "expected an index and the branches' operands, got no operands");
  if (in[0].dtype != DType::Int32 || in[0].ndim() != 0)
    detail::fail("cond", "the branch index must be an int32 scalar, got ", in[0].str());
  std::span<const Aval> ops = in.subspan(1);
  std::vector<Aval> out;
  for (size_t i = 0; i < branches.size(); ++i) {
    detail::check_body_inputs("cond", branch_param(i), branches[i], ops);
    std::vector<Aval> outs = branches[i]->out_avals();
    if (i == 0) {
      out = outs;
      continue;
    }
    if (outs.size() != out.size())
      detail::fail("cond", "branch", i, " returns ", outs.size(), " outputs (", rules::avals_str(outs),
                   ") but branch0 returns ", out.size(), " (", rules::avals_str(out), ")");
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!detail::same_type(outs[k], out[k]))
        detail::fail("cond", "output ", k, " of branch", i, " is ", outs[k].str(), " but output ", k,
                     " of branch0 is ", out[k].str());
      out[k].weak_type = out[k].weak_type && outs[k].weak_type;  // weak only if weak in every branch
    }
  }
  return out;
}

int64_t clamped_index(const Array& index, size_t num_branches) {
  const auto n = static_cast<int64_t>(num_branches);
  return std::clamp<int64_t>(index.item<int32_t>(), 0, n - 1);
}

std::vector<Array> cond_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out) {
  std::vector<JaxprRef> branches = branches_of(params);
  const JaxprRef& taken = branches[static_cast<size_t>(clamped_index(in[0], branches.size()))];
  return detail::with_weak_types(detail::run_subprogram(*taken, in.subspan(1)), out);
}

// ---- jvp ----

// Every branch's jvp program, with the same nonzero tangents in and the same nonzero
// tangents out (a tangent nonzero in one branch is instantiated as zeros in the others).
JvpResult cond_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  std::vector<JaxprRef> branches = branches_of(params);
  std::vector<bool> nonzero(primals.size() - 1);
  for (size_t i = 0; i < nonzero.size(); ++i) nonzero[i] = tangents[i + 1].valid();
  std::vector<bool> out_nonzero(num_outputs(branches), false);
  for (const JaxprRef& b : branches) detail::or_into(out_nonzero, detail::jvp_of_body(b, nonzero)->out_flags);
  std::vector<BodyWithConsts> jvps;
  for (const JaxprRef& b : branches) {
    auto j = detail::jvp_of_body(b, nonzero, out_nonzero);
    jvps.push_back({j->body, j->consts});
  }
  std::vector<Array> operands(primals.begin() + 1, primals.end());
  for (size_t i = 1; i < tangents.size(); ++i)
    if (tangents[i].valid()) operands.push_back(tangents[i]);
  return detail::split_jvp_outputs(bind_cond(primals[0], jvps, operands), out_nonzero);
}

// ---- batching ----

Array broadcast_lanes(const Array& per_lane, const Shape& shape) {
  return per_lane.shape() == shape ? per_lane : broadcast_in_dim(per_lane, shape, {0});
}

// A batched index: every branch runs on every lane and select_n picks each lane's result
// (JAX's rule). Each branch sees its operands through stop_gradient on the lanes that do
// not take it, so reverse mode sends no cotangent (nor NaN) through an untaken branch.
BatchResult cond_batch_index(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                             const BatchAxis& axis) {
  std::vector<JaxprRef> branches = branches_of(params);
  Array index = batch_rules::move_axis(args[0], dims[0], 0);
  std::vector<Array> ops;
  for (size_t i = 1; i < args.size(); ++i) ops.push_back(batch_rules::batch_to_front(args[i], dims[i], axis.size));
  const std::vector<int64_t> at_front(ops.size(), 0);
  std::vector<std::vector<Array>> branch_outs;
  for (size_t b = 0; b < branches.size(); ++b) {
    auto batched = detail::batch_of_body(branches[b], at_front, axis, /*instantiate_all=*/true);
    Array taken = eq(index, ad::full_like(index, static_cast<double>(b)));
    std::vector<Array> in = batched->consts;
    for (const Array& x : ops) in.push_back(select_n(broadcast_lanes(taken, x.shape()), {stop_gradient(x), x}));
    branch_outs.push_back(eval_jaxpr(batched->body->jaxpr, {}, in));
  }
  BatchResult r;
  for (size_t k = 0; k < branch_outs[0].size(); ++k) {
    std::vector<Array> cases;
    for (const std::vector<Array>& outs : branch_outs) cases.push_back(outs[k]);
    r.outs.push_back(select_n(broadcast_lanes(index, cases[0].shape()), cases));
    r.dims.push_back(0);
  }
  return r;
}

// An unbatched index: one cond of the batched branches, all batching the same outputs.
BatchResult cond_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                       const BatchAxis& axis) {
  if (dims[0] != kNotMapped) return cond_batch_index(args, dims, params, axis);
  std::vector<JaxprRef> branches = branches_of(params);
  std::span<const int64_t> op_dims = dims.subspan(1);
  std::vector<bool> out_batched(num_outputs(branches), false);
  for (const JaxprRef& b : branches)
    detail::or_into(out_batched, detail::batch_of_body(b, op_dims, axis, std::vector<bool>{})->out_flags);
  std::vector<BodyWithConsts> batched;
  for (const JaxprRef& b : branches) {
    auto t = detail::batch_of_body(b, op_dims, axis, out_batched);
    batched.push_back({t->body, t->consts});
  }
  BatchResult r{bind_cond(args[0], batched, args.subspan(1)), {}};
  for (bool bat : out_batched) r.dims.push_back(bat ? 0 : kNotMapped);
  return r;
}

// ---- partial evaluation ----

// Residual slots shared by the branches: each branch's residuals go to slots of their
// type, a slot reused across branches (JAX's _merge_branch_residuals), so the known cond
// returns one residual list whichever branch ran.
struct ResidualSlots {
  std::vector<Aval> avals;
  std::vector<std::vector<size_t>> of_branch;  // of_branch[b][k]: slot of branch b's residual k
};

ResidualSlots merge_residuals(std::span<const std::shared_ptr<const detail::SplitBody>> splits) {
  ResidualSlots slots;
  for (const auto& s : splits) {
    const std::vector<Aval> outs = s->known->out_avals();
    std::map<std::string, size_t> used_of_type;  // this branch's slots taken, per type
    std::vector<size_t>& mine = slots.of_branch.emplace_back();
    for (size_t k = outs.size() - s->num_residuals; k < outs.size(); ++k) {
      size_t nth = used_of_type[outs[k].str()]++, seen = 0, slot = slots.avals.size();
      for (size_t j = 0; j < slots.avals.size(); ++j)
        if (slots.avals[j] == outs[k] && seen++ == nth) {
          slot = j;
          break;
        }
      if (slot == slots.avals.size()) slots.avals.push_back(outs[k]);
      mine.push_back(slot);
    }
  }
  return slots;
}

// Branch b's known half as a branch of the known cond: (every branch's known constants...,
// known operands...) -> (known outputs..., every residual slot...), zeros in the slots
// of the other branches' residuals.
JaxprRef known_branch(const detail::SplitBody& s, size_t b, const detail::JoinedConsts& consts,
                      const ResidualSlots& slots, std::span<const Aval> known_op_avals, size_t num_known_outs) {
  std::vector<Aval> avals = detail::avals_of(consts.values);
  avals.insert(avals.end(), known_op_avals.begin(), known_op_avals.end());
  return detail::stage_rewritten_body(
      [&](std::span<const Array> xs) {
        std::vector<Array> in;
        for (size_t slot : consts.slots[b]) in.push_back(xs[slot]);
        in.insert(in.end(), xs.begin() + static_cast<std::ptrdiff_t>(consts.values.size()), xs.end());
        std::vector<Array> outs = eval_jaxpr(s.known->jaxpr, {}, in);
        std::vector<Array> filled(slots.avals.size());
        for (size_t k = 0; k < slots.of_branch[b].size(); ++k) filled[slots.of_branch[b][k]] = outs[num_known_outs + k];
        outs.resize(num_known_outs);
        for (size_t j = 0; j < filled.size(); ++j) outs.push_back(filled[j].valid() ? filled[j] : ad::zeros(slots.avals[j]));
        return outs;
      },
      avals, "cond");
}

// Branch b's unknown half as a branch of the unknown cond: (every branch's unknown
// constants..., every residual slot..., unknown operands...) -> unknown outputs.
JaxprRef unknown_branch(const detail::SplitBody& s, size_t b, const detail::JoinedConsts& consts,
                        const ResidualSlots& slots, std::span<const Aval> unknown_op_avals) {
  std::vector<Aval> avals = detail::avals_of(consts.values);
  avals.insert(avals.end(), slots.avals.begin(), slots.avals.end());
  avals.insert(avals.end(), unknown_op_avals.begin(), unknown_op_avals.end());
  return detail::stage_rewritten_body(
      [&](std::span<const Array> xs) {
        const size_t nc = consts.values.size(), nr = slots.avals.size();
        std::vector<Array> in;
        for (size_t slot : consts.slots[b]) in.push_back(xs[slot]);
        for (size_t slot : slots.of_branch[b]) in.push_back(xs[nc + slot]);
        in.insert(in.end(), xs.begin() + static_cast<std::ptrdiff_t>(nc + nr), xs.end());
        return eval_jaxpr(s.unknown->jaxpr, {}, in);
      },
      avals, "cond");
}

// Known index: every branch split by partial_eval_jaxpr with the same unknown outputs.
// The known cond (index, known constants..., known operands...) returns the known outputs
// and every residual slot (zeros where the branch that ran has none); the unknown cond
// (index, unknown constants..., residual slots..., unknown operands...) reads them.
// An unknown index leaves the whole cond unknown.
PartialEvalSplit cond_partial_eval(const std::vector<bool>& unknowns, const Params& params) {
  std::vector<JaxprRef> branches = branches_of(params);
  const size_t m = num_outputs(branches);
  if (unknowns[0]) return detail::stage_whole(cond_p, params, unknowns.size(), m);
  const std::vector<bool> ops_unknown(unknowns.begin() + 1, unknowns.end());
  std::vector<bool> out_unknowns(m, false);
  for (const JaxprRef& b : branches)
    detail::or_into(out_unknowns, detail::partial_eval_of_body(b, ops_unknown)->out_unknowns);
  std::vector<std::shared_ptr<const detail::SplitBody>> splits;
  for (const JaxprRef& b : branches) splits.push_back(detail::partial_eval_of_body(b, ops_unknown, out_unknowns));
  const ResidualSlots slots = merge_residuals(splits);

  std::vector<BodyWithConsts> known_halves, unknown_halves;
  for (const auto& s : splits) {
    known_halves.push_back({s->known, s->known_consts});
    unknown_halves.push_back({s->unknown, s->unknown_consts});
  }
  const detail::JoinedConsts known_consts = detail::join_consts(known_halves);
  const detail::JoinedConsts unknown_consts = detail::join_consts(unknown_halves);
  std::vector<Aval> known_op_avals, unknown_op_avals;
  const std::vector<Aval> op_avals = branches[0]->in_avals();
  for (size_t i = 0; i < op_avals.size(); ++i) (ops_unknown[i] ? unknown_op_avals : known_op_avals).push_back(op_avals[i]);
  const size_t num_known_outs = m - static_cast<size_t>(std::count(out_unknowns.begin(), out_unknowns.end(), true));
  std::vector<JaxprRef> known_bodies, unknown_bodies;
  for (size_t b = 0; b < splits.size(); ++b) {
    known_bodies.push_back(known_branch(*splits[b], b, known_consts, slots, known_op_avals, num_known_outs));
    unknown_bodies.push_back(unknown_branch(*splits[b], b, unknown_consts, slots, unknown_op_avals));
  }

  PartialEvalSplit split;
  split.out_unknowns = out_unknowns;
  split.num_residuals = slots.avals.size();
  if (num_known_outs + slots.avals.size() > 0) split.known = &cond_p;
  split.known_params = cond_params(known_bodies);
  // Known cond: [index, known constants..., known operands...], as indices into
  // [known constants..., operands...].
  const size_t nkc = known_consts.values.size();
  split.known_consts = known_consts.values;
  split.known_operands.push_back(nkc);
  for (size_t k = 0; k < nkc; ++k) split.known_operands.push_back(k);
  for (size_t i = 1; i < unknowns.size(); ++i)
    if (!unknowns[i]) split.known_operands.push_back(nkc + i);
  split.unknown = &cond_p;
  split.unknown_params = cond_params(unknown_bodies);
  // Unknown cond: [index, unknown constants..., residual slots..., unknown operands...], as
  // indices into [unknown constants..., residuals..., operands...].
  const size_t nuc = unknown_consts.values.size(), lead = nuc + slots.avals.size();
  split.unknown_consts = unknown_consts.values;
  split.unknown_operands.push_back(lead);
  for (size_t k = 0; k < lead; ++k) split.unknown_operands.push_back(k);
  for (size_t i = 1; i < unknowns.size(); ++i)
    if (unknowns[i]) split.unknown_operands.push_back(lead + i);
  return split;
}

// ---- transposition ----

// The index and the operands not being transposed are read as they are; every branch is
// transposed (transpose_jaxpr) with the same linear operands and nonzero cotangents.
std::vector<Array> cond_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                  const Params& params) {
  std::vector<JaxprRef> branches = branches_of(params);
  if (operands[0].is_linear()) detail::internal_fail("cond", "the branch index is a linear operand");
  std::vector<bool> linear(operands.size() - 1), ct_nonzero(cts.size());
  for (size_t i = 1; i < operands.size(); ++i) linear[i - 1] = operands[i].is_linear();
  for (size_t k = 0; k < cts.size(); ++k) ct_nonzero[k] = cts[k].valid();
  std::vector<BodyWithConsts> transposed;
  for (const JaxprRef& b : branches) {
    auto t = detail::transpose_of_body(b, linear, ct_nonzero);
    transposed.push_back({t->body, t->consts});
  }
  std::vector<Array> in;
  for (size_t i = 1; i < operands.size(); ++i)
    if (!operands[i].is_linear()) in.push_back(operands[i].value);
  for (const Array& ct : cts)
    if (ct.valid()) in.push_back(ct);
  std::vector<Array> linear_cts = bind_cond(operands[0].value, transposed, in);
  std::vector<Array> out(operands.size());
  for (size_t i = 1, k = 0; i < operands.size(); ++i)
    if (operands[i].is_linear()) out[i] = std::move(linear_cts[k++]);
  return out;
}

// ---- dead-code elimination ----

// Every branch keeps the used outputs and the operands any branch reads.
DceEquationResult cond_dce(const std::vector<bool>& used_outputs, Equation& eqn) {
  std::vector<JaxprRef> branches = branches_of(eqn.params);
  std::vector<bool> used_ops(eqn.inputs.size() - 1, false);
  for (const JaxprRef& b : branches) detail::or_into(used_ops, detail::dce_jaxpr(b->jaxpr, used_outputs).used_inputs);
  std::vector<JaxprRef> pruned;
  bool changed = false;
  for (const JaxprRef& b : branches) {
    detail::DcedJaxpr d = detail::dce_jaxpr(b->jaxpr, used_outputs, used_ops);
    changed |= d.changed;
    auto body = std::make_shared<ClosedJaxpr>();
    body->jaxpr = std::move(d.jaxpr);
    pruned.push_back(body);
  }
  std::vector<bool> used_inputs{true};
  used_inputs.insert(used_inputs.end(), used_ops.begin(), used_ops.end());
  if (!changed) return {std::move(used_inputs), false};
  eqn.params = cond_params(pruned);
  detail::drop_unused_inputs_and_outputs(eqn, used_inputs, used_outputs);
  return {std::move(used_inputs), true};
}

}  // namespace

// Linear in the operands a linearized program feeds it tangents through (never the index).
const Primitive cond_p("cond", {.traits = kCallsSubprogram | kLinear,
                                .num_outputs = -1,
                                .abstract_eval = cond_abstract_eval,
                                .impl = cond_impl,
                                .jvp = cond_jvp,
                                .transpose = cond_transpose,
                                .batch = cond_batch,
                                .partial_eval = cond_partial_eval,
                                .dce = cond_dce});

}  // namespace jx::lax

// ---- the public functions' flat core (jx/control_flow/cond.h) ----
namespace jx::detail {

Array cond_index(const Array& pred) {
  if (!pred.valid()) fail("cond", "pred is a null jx::Array");
  const Aval& a = pred.aval();
  if (a.ndim() != 0) fail("cond", "pred must be a scalar, got ", a.str());
  if (is_complex(a.dtype)) fail("cond", "pred must be a bool or a real number, got ", a.str());
  Array truth = is_bool(a.dtype) ? pred : lax::ne(pred, ad::zeros(Aval{{}, a.dtype, a.weak_type}));
  return lax::convert_element_type(truth, DType::Int32);
}

Array switch_index(const Array& index, size_t num_branches) {
  if (num_branches == 0) fail("switch", "needs at least one branch");
  if (!index.valid()) fail("switch", "index is a null jx::Array");
  const Aval& a = index.aval();
  if (a.ndim() != 0) fail("switch", "index must be a scalar, got ", a.str());
  if (!is_integer(a.dtype)) fail("switch", "index must be an integer, got ", a.str());
  Array i = a.dtype == DType::Int32 ? index : lax::convert_element_type(index, DType::Int32);
  const auto hi = static_cast<int32_t>(std::min<size_t>(num_branches - 1, INT32_MAX));
  return lax::clamp(Array(int32_t{0}), i, Array(hi));
}

std::string cond_branch_name(size_t i) { return i == 0 ? "false_fn" : "true_fn"; }
std::string switch_branch_name(size_t i) { return "branch " + std::to_string(i); }

std::vector<Array> cond_flat(const Array& index, std::span<const FlatFn> branches, std::span<const Array> operands,
                             const std::function<std::string(size_t)>& branch_name) {
  std::vector<Aval> avals;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i].valid()) fail("cond", "operand leaf ", i, " is a null jx::Array");
    avals.push_back(operands[i].aval());
  }
  std::vector<BodyWithConsts> traced;
  for (size_t b = 0; b < branches.size(); ++b) {
    traced.push_back(stage_user_body(branches[b], avals, "cond"));
    if (b == 0) continue;
    const std::vector<Aval> first = traced[0].body->out_avals(), mine = traced[b].body->out_avals();
    for (size_t k = 0; k < mine.size() && k < first.size(); ++k)
      if (!same_type(mine[k], first[k]))
        fail("cond", branch_name(b), " and ", branch_name(0), " must return the same types: output leaf ", k,
             " is ", mine[k].str(), " in ", branch_name(b), " but ", first[k].str(), " in ", branch_name(0));
  }
  return lax::bind_cond(index, traced, operands);
}

}  // namespace jx::detail
