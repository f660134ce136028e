// while: JAX's structured loop. Operands (cond consts..., body consts..., carry...); params
// cond_jaxpr (consts, carry -> bool scalar), body_jaxpr (consts, carry -> carry),
// cond_nconsts, body_nconsts and max_steps (-1: unbounded; else at most that many
// iterations). The rules follow JAX's lax/control_flow/loops.py: jvp and batching find
// by fixpoint which carries get tangents / a batch axis; partial evaluation runs the
// known carries in a known loop and stages the whole loop for the unknown ones.
#include "jx/control_flow/while_loop.h"

#include <algorithm>
#include <optional>

#include "core/array_internal.h"
#include "core/subprogram.h"
#include "jx/control_flow/cond.h"
#include "jx/error.h"
#include "jx/lax.h"
#include "lax/batch_rules.h"
#include "lax/control_flow/buffer_loop.h"
#include "lax/control_flow/control_flow_util.h"
#include "lax/control_flow/scan_rules.h"
#include "lax/rules.h"
#include "transforms/ad_util.h"
#include "transforms/call_rules.h"
#include "transforms/jaxpr_transforms.h"

namespace jx::lax {

extern const Primitive while_p;

namespace {

using detail::BodyWithConsts;

// The params of one loop, and where its operand sections are.
struct Loop {
  JaxprRef cond, body;
  size_t cond_nconsts = 0, body_nconsts = 0;
  int64_t max_steps = -1;

  size_t carry_begin() const { return cond_nconsts + body_nconsts; }
  Params params() const {
    return Params{{"cond_jaxpr", cond},
                  {"body_jaxpr", body},
                  {"cond_nconsts", static_cast<int64_t>(cond_nconsts)},
                  {"body_nconsts", static_cast<int64_t>(body_nconsts)},
                  {"max_steps", max_steps}};
  }
};

Loop loop_of(const Params& params) {
  Loop l;
  l.cond = params.get_jaxpr("cond_jaxpr");
  l.body = params.get_jaxpr("body_jaxpr");
  if (!l.cond || !l.body) detail::fail("while", "cond_jaxpr and body_jaxpr must be sub-programs");
  const int64_t cn = params.get_int("cond_nconsts"), bn = params.get_int("body_nconsts");
  if (cn < 0 || bn < 0) detail::fail("while", "cond_nconsts=", cn, " and body_nconsts=", bn, " must be nonnegative");
  l.cond_nconsts = static_cast<size_t>(cn);
  l.body_nconsts = static_cast<size_t>(bn);
  l.max_steps = params.get_int("max_steps");
  if (l.max_steps < -1) detail::fail("while", "max_steps must be -1 (unbounded) or nonnegative, got ", l.max_steps);
  return l;
}

template <class T>
std::vector<T> concat(std::span<const T> a, std::span<const T> b) {
  std::vector<T> out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}
template <class T>
std::vector<T> concat(const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<T> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// ---- shape rule and impl ----

std::vector<Aval> while_abstract_eval(std::span<const Aval> in, const Params& params) {
  const Loop l = loop_of(params);
  if (l.carry_begin() > in.size())
    detail::fail("while", "cond_nconsts=", l.cond_nconsts, " and body_nconsts=", l.body_nconsts, " but there are ",
                 in.size(), " operands");
  std::span<const Aval> carry = in.subspan(l.carry_begin());
  detail::check_body_inputs("while", "cond_jaxpr", l.cond, concat(in.first(l.cond_nconsts), carry));
  const std::vector<Aval> pred = l.cond->out_avals();
  if (pred.size() != 1 || pred[0].dtype != DType::Bool || pred[0].ndim() != 0)
    detail::fail("while", "cond_jaxpr must return a bool scalar, got (", rules::avals_str(pred), ")");
  detail::check_body_inputs("while", "body_jaxpr", l.body, concat(in.subspan(l.cond_nconsts, l.body_nconsts), carry));
  std::vector<Aval> outs = l.body->out_avals();
  if (outs.size() != carry.size())
    detail::fail("while", "body_jaxpr returns ", outs.size(), " values (", rules::avals_str(outs), ") for a carry of ",
                 carry.size(), " (", rules::avals_str(carry), ")");
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!detail::same_type(outs[k], carry[k]))
      detail::fail("while", "body_jaxpr changes the type of carry ", k, ": the carry is ", carry[k].str(),
                   " but the body returns ", outs[k].str());
    outs[k].weak_type = outs[k].weak_type && carry[k].weak_type;
  }
  return outs;
}

// Under jit, when the predicate and the body both compiled to native kernels only
// (core/subprogram.h), the loop runs on buffers: the carries alternate between two sets,
// the predicate lands in one byte, and an iteration is two kernel-program calls.
std::optional<std::vector<Array>> while_on_buffers(const Loop& l, std::span<const Array> in) {
  const detail::BufferProgram* cond = detail::buffer_subprogram(*l.cond);
  const detail::BufferProgram* body = cond ? detail::buffer_subprogram(*l.body) : nullptr;
  if (!body) return std::nullopt;
  std::vector<Array> consts;
  std::vector<const void*> cond_in, body_in;
  for (size_t i = 0; i < l.carry_begin(); ++i) {
    consts.push_back(detail::contiguous(in[i]));
    (i < l.cond_nconsts ? cond_in : body_in).push_back(detail::raw_data(consts.back()));
  }
  detail::CarryBuffers carry(in.subspan(l.carry_begin()));
  const size_t nc = cond_in.size(), nb = body_in.size();
  cond_in.resize(nc + carry.size());
  body_in.resize(nb + carry.size());
  detail::LoopWorkspace workspace(std::max(cond->workspace_bytes(), body->workspace_bytes()));
  bool pred = false;
  void* pred_out = &pred;
  for (int64_t step = 0; l.max_steps < 0 || step < l.max_steps; ++step) {
    std::copy_n(carry.current(), carry.size(), cond_in.begin() + static_cast<std::ptrdiff_t>(nc));
    cond->run(cond_in.data(), &pred_out, workspace.data());
    if (!pred) break;
    std::copy_n(carry.current(), carry.size(), body_in.begin() + static_cast<std::ptrdiff_t>(nb));
    body->run(body_in.data(), carry.next(), workspace.data());
    carry.advance();
  }
  return carry.take();
}

std::vector<Array> while_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out) {
  const Loop l = loop_of(params);
  if (std::optional<std::vector<Array>> done = while_on_buffers(l, in))
    return detail::with_weak_types(std::move(*done), out);
  const std::vector<Array> cond_consts(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(l.cond_nconsts));
  const std::span<const Array> body_consts = in.subspan(l.cond_nconsts, l.body_nconsts);
  std::vector<Array> carry(in.begin() + static_cast<std::ptrdiff_t>(l.carry_begin()), in.end());
  for (int64_t step = 0; l.max_steps < 0 || step < l.max_steps; ++step) {
    if (!detail::run_subprogram(*l.cond, concat(std::span<const Array>(cond_consts), std::span<const Array>(carry)))[0]
             .item<bool>())
      break;
    carry = detail::run_subprogram(*l.body, concat(body_consts, std::span<const Array>(carry)));
  }
  return detail::with_weak_types(std::move(carry), out);
}

// ---- jvp ----

// The carries with tangents: those whose initial value has one, closed under the body
// (a carry the body computes from one with a tangent gets one). The loop of the jvp body
// carries (primals..., those tangents...); cond reads the primals only.
JvpResult while_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  const Loop l = loop_of(params);
  const size_t cn = l.cond_nconsts, bn = l.body_nconsts, c0 = l.carry_begin(), nc = primals.size() - c0;
  std::vector<bool> bconst_nz(bn), carry_nz(nc);
  for (size_t i = 0; i < bn; ++i) bconst_nz[i] = tangents[cn + i].valid();
  for (size_t k = 0; k < nc; ++k) carry_nz[k] = tangents[c0 + k].valid();
  std::shared_ptr<const detail::TransformedBody> jvp;
  for (size_t iter = 0; iter <= nc; ++iter) {
    jvp = detail::jvp_of_body(l.body, concat(bconst_nz, carry_nz), carry_nz);
    if (jvp->out_flags == carry_nz) break;
    detail::or_into(carry_nz, jvp->out_flags);
  }
  // jvp->body takes (jvp consts, body consts, carry, body const tangents, carry tangents);
  // the loop wants its constants first: (jvp consts, body consts, body const tangents, carry, carry tangents).
  const size_t nj = jvp->consts.size(), nbt = static_cast<size_t>(std::count(bconst_nz.begin(), bconst_nz.end(), true));
  const size_t nct = static_cast<size_t>(std::count(carry_nz.begin(), carry_nz.end(), true));
  std::vector<size_t> order;
  for (size_t i = 0; i < nj + bn; ++i) order.push_back(i);
  for (size_t i = 0; i < nbt; ++i) order.push_back(nj + bn + nc + i);
  for (size_t i = 0; i < nc; ++i) order.push_back(nj + bn + i);
  for (size_t i = 0; i < nct; ++i) order.push_back(nj + bn + nc + nbt + i);
  Loop out = l;
  out.body = detail::permute_inputs(jvp->body, order);
  out.body_nconsts = nj + bn + nbt;

  // The carry tangents, zeros where only the body makes one.
  std::vector<Array> carry_tangents;
  for (size_t k = 0; k < nc; ++k)
    if (carry_nz[k]) carry_tangents.push_back(ad::instantiate(tangents[c0 + k], detail::tangent_aval(primals[c0 + k].aval())));
  std::vector<Aval> cond_avals = l.cond->in_avals();
  for (const Array& t : carry_tangents) cond_avals.push_back(t.aval());
  out.cond = detail::stage_rewritten_body(
      [&](std::span<const Array> xs) { return eval_jaxpr(l.cond->jaxpr, {}, xs.first(cn + nc)); }, cond_avals, "while");

  std::vector<Array> operands(primals.begin(), primals.begin() + static_cast<std::ptrdiff_t>(cn));
  operands.insert(operands.end(), jvp->consts.begin(), jvp->consts.end());
  operands.insert(operands.end(), primals.begin() + static_cast<std::ptrdiff_t>(cn),
                  primals.begin() + static_cast<std::ptrdiff_t>(c0));
  for (size_t i = 0; i < bn; ++i)
    if (bconst_nz[i]) operands.push_back(tangents[cn + i]);
  operands.insert(operands.end(), primals.begin() + static_cast<std::ptrdiff_t>(c0), primals.end());
  operands.insert(operands.end(), carry_tangents.begin(), carry_tangents.end());
  return detail::split_jvp_outputs(jx::bind(while_p, operands, out.params()), carry_nz);
}

// ---- batching ----

// The batched carries: those batched initially, closed under the body; all of them when
// the predicate is batched. Carries are batched at axis 0.
BatchResult while_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                        const BatchAxis& axis) {
  const Loop l = loop_of(params);
  const size_t cn = l.cond_nconsts, bn = l.body_nconsts, c0 = l.carry_begin(), nc = args.size() - c0;
  const std::vector<int64_t> cconst_dims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(cn));
  const std::vector<int64_t> bconst_dims(dims.begin() + static_cast<std::ptrdiff_t>(cn),
                                         dims.begin() + static_cast<std::ptrdiff_t>(c0));
  std::vector<bool> carry_bat(nc);
  for (size_t k = 0; k < nc; ++k) carry_bat[k] = dims[c0 + k] != kNotMapped;
  auto carry_dims = [&] {
    std::vector<int64_t> d;
    for (bool b : carry_bat) d.push_back(b ? 0 : kNotMapped);
    return d;
  };
  for (size_t iter = 0; iter <= nc; ++iter) {
    auto b = detail::batch_of_body(l.body, concat(bconst_dims, carry_dims()), axis, carry_bat);
    if (b->out_flags == carry_bat) break;
    detail::or_into(carry_bat, b->out_flags);
  }
  const bool pred_batched =
      detail::batch_of_body(l.cond, concat(cconst_dims, carry_dims()), axis, std::vector<bool>{})->out_flags[0];
  if (pred_batched) carry_bat.assign(nc, true);
  auto body = detail::batch_of_body(l.body, concat(bconst_dims, carry_dims()), axis, carry_bat);
  auto cond = detail::batch_of_body(l.cond, concat(cconst_dims, carry_dims()), axis, std::vector<bool>{});

  std::vector<Array> carry;
  for (size_t k = 0; k < nc; ++k)
    carry.push_back(carry_bat[k] ? batch_rules::batch_to_front(args[c0 + k], dims[c0 + k], axis.size) : args[c0 + k]);
  const std::span<const Array> cconsts = args.first(cn), bconsts = args.subspan(cn, bn);
  const size_t ncc = cond->consts.size(), nbc = body->consts.size();
  Loop out = l;
  std::vector<Array> operands;
  if (!pred_batched) {
    out.cond = cond->body;
    out.body = body->body;
    out.cond_nconsts = ncc + cn;
    out.body_nconsts = nbc + bn;
    operands = concat(std::span<const Array>(cond->consts), cconsts);
    operands.insert(operands.end(), body->consts.begin(), body->consts.end());
    operands.insert(operands.end(), bconsts.begin(), bconsts.end());
  } else {
    // Runs while any lane's predicate holds; a lane whose predicate is false keeps its carry.
    const std::vector<Aval> cond_avals = cond->body->in_avals(), body_avals = body->body->in_avals();
    out.cond = detail::stage_rewritten_body(
        [&](std::span<const Array> xs) {
          return std::vector<Array>{reduce_or(eval_jaxpr(cond->body->jaxpr, {}, xs)[0], {0})};
        },
        cond_avals, "while");
    std::vector<Aval> avals(cond_avals.begin(), cond_avals.begin() + static_cast<std::ptrdiff_t>(ncc + cn));
    avals.insert(avals.end(), body_avals.begin(), body_avals.end());
    out.body = detail::stage_rewritten_body(
        [&](std::span<const Array> xs) {
          const std::span<const Array> cond_in = xs.first(ncc + cn), body_in = xs.subspan(ncc + cn);
          const std::span<const Array> old = body_in.subspan(nbc + bn);
          Array running = eval_jaxpr(cond->body->jaxpr, {}, concat(cond_in, old))[0];
          std::vector<Array> next = eval_jaxpr(body->body->jaxpr, {}, body_in);
          for (size_t k = 0; k < next.size(); ++k) {
            Array lanes = broadcast_in_dim(running, next[k].shape(), {0});
            next[k] = select_n(lanes, {old[k], next[k]});
          }
          return next;
        },
        avals, "while");
    out.cond_nconsts = ncc + cn;
    out.body_nconsts = ncc + cn + nbc + bn;
    operands = concat(std::span<const Array>(cond->consts), cconsts);
    operands.insert(operands.end(), cond->consts.begin(), cond->consts.end());
    operands.insert(operands.end(), cconsts.begin(), cconsts.end());
    operands.insert(operands.end(), body->consts.begin(), body->consts.end());
    operands.insert(operands.end(), bconsts.begin(), bconsts.end());
  }
  operands.insert(operands.end(), carry.begin(), carry.end());
  BatchResult r{jx::bind(while_p, operands, out.params()), {}};
  for (bool b : carry_bat) r.dims.push_back(b ? 0 : kNotMapped);
  return r;
}

// ---- partial evaluation ----

// A loop with max_steps as the equivalent scan of max_steps steps whose step is guarded:
// `carry = cond(pred(carry), body, identity)(carry)`, so that steps after the predicate
// turns false (or under vmap, in lanes whose predicate did) leave the carry alone. The
// scan reads the while's operands in the same layout: (cond consts, body consts) as its
// consts, the carries as its carries, no xs.
detail::ScanParams bounded_as_scan(const Loop& l, std::span<const Aval> operand_avals) {
  const size_t cn = l.cond_nconsts, bn = l.body_nconsts, c0 = l.carry_begin();
  JaxprRef step = detail::stage_rewritten_body(
      [&](std::span<const Array> xs) {
        const std::span<const Array> carry = xs.subspan(c0);
        const Array pred = eval_jaxpr(l.cond->jaxpr, {}, concat(xs.first(cn), carry))[0];
        const std::vector<detail::FlatFn> branches{
            [&](std::span<const Array> ops) { return std::vector<Array>(ops.begin() + static_cast<std::ptrdiff_t>(bn), ops.end()); },
            [&](std::span<const Array> ops) { return eval_jaxpr(l.body->jaxpr, {}, ops); }};
        return detail::cond_flat(detail::cond_index(pred), branches, xs.subspan(cn), detail::cond_branch_name);
      },
      operand_avals, "while");
  return detail::ScanParams{step, static_cast<int64_t>(c0), static_cast<int64_t>(operand_avals.size() - c0),
                            l.max_steps, false, 1};
}

// JAX's rule: the carries that depend on unknowns (a fixpoint through the body) are
// unknown. A known loop over the known carries runs now; the whole loop is staged for the
// unknown ones (recomputing the known carries there). With an unknown predicate, or no
// known carry, the whole loop is unknown.
PartialEvalSplit while_partial_eval(const std::vector<bool>& unknowns, const Params& params) {
  const Loop l = loop_of(params);
  const size_t cn = l.cond_nconsts, c0 = l.carry_begin(), nc = unknowns.size() - c0;
  const std::vector<bool> cconst_uk(unknowns.begin(), unknowns.begin() + static_cast<std::ptrdiff_t>(cn));
  const std::vector<bool> bconst_uk(unknowns.begin() + static_cast<std::ptrdiff_t>(cn),
                                    unknowns.begin() + static_cast<std::ptrdiff_t>(c0));
  std::vector<bool> carry_uk(unknowns.begin() + static_cast<std::ptrdiff_t>(c0), unknowns.end());
  std::shared_ptr<const detail::SplitBody> body;
  for (size_t iter = 0; iter <= nc; ++iter) {
    body = detail::partial_eval_of_body(l.body, concat(bconst_uk, carry_uk), carry_uk);
    if (body->out_unknowns == carry_uk) break;
    detail::or_into(carry_uk, body->out_unknowns);
  }
  auto cond = detail::partial_eval_of_body(l.cond, concat(cconst_uk, carry_uk));
  JX_CHECK(cond->out_unknowns[0] || cond->num_residuals == 0, "while", "a known predicate left residuals");
  // A bounded loop with unknown carries (linearize: the tangents) is split as its scan,
  // whose known half saves each step's residuals and whose unknown half scan transposes:
  // reverse mode through while_loop with max_steps.
  if (!cond->out_unknowns[0] && l.max_steps >= 0 &&
      std::find(carry_uk.begin(), carry_uk.end(), true) != carry_uk.end()) {
    std::vector<Aval> avals = l.cond->in_avals();
    avals.resize(cn);
    const std::vector<Aval> body_in = l.body->in_avals();
    avals.insert(avals.end(), body_in.begin(), body_in.end());
    return detail::scan_partial_eval(unknowns, bounded_as_scan(l, avals).to_params());
  }
  const bool all_unknown = std::find(carry_uk.begin(), carry_uk.end(), false) == carry_uk.end();
  if (cond->out_unknowns[0] || all_unknown) return detail::stage_whole(while_p, params, unknowns.size(), nc);

  // The known body without its residual outputs (a loop has no use for them).
  const size_t num_known = nc - static_cast<size_t>(std::count(carry_uk.begin(), carry_uk.end(), true));
  std::vector<bool> used(num_known + body->num_residuals, false);
  std::fill(used.begin(), used.begin() + static_cast<std::ptrdiff_t>(num_known), true);
  detail::DcedJaxpr known_body =
      detail::dce_jaxpr(body->known->jaxpr, used, std::vector<bool>(body->known->jaxpr.invars.size(), true));
  Loop known = l;
  known.cond = cond->known;
  known.body = std::make_shared<ClosedJaxpr>(ClosedJaxpr{std::move(known_body.jaxpr), {}});
  known.cond_nconsts = cond->known_consts.size() + static_cast<size_t>(std::count(cconst_uk.begin(), cconst_uk.end(), false));
  known.body_nconsts = body->known_consts.size() + static_cast<size_t>(std::count(bconst_uk.begin(), bconst_uk.end(), false));

  PartialEvalSplit split;
  split.known = &while_p;
  split.known_params = known.params();
  // Known loop: [cond's known consts, the known cond consts, body's known consts, the
  // known body consts, the known carries], as indices into [cond's known consts, body's
  // known consts, operands...].
  const size_t ncc = cond->known_consts.size(), lead = ncc + body->known_consts.size();
  split.known_consts = cond->known_consts;
  split.known_consts.insert(split.known_consts.end(), body->known_consts.begin(), body->known_consts.end());
  for (size_t k = 0; k < ncc; ++k) split.known_operands.push_back(k);
  for (size_t i = 0; i < cn; ++i)
    if (!unknowns[i]) split.known_operands.push_back(lead + i);
  for (size_t k = ncc; k < lead; ++k) split.known_operands.push_back(k);
  for (size_t i = cn; i < unknowns.size(); ++i)
    if (!unknowns[i] && (i < c0 || !carry_uk[i - c0])) split.known_operands.push_back(lead + i);
  // Unknown loop: the whole loop on every operand (JAX's rule); its known outputs unused.
  split.unknown = &while_p;
  split.unknown_params = params;
  for (size_t i = 0; i < unknowns.size(); ++i) split.unknown_operands.push_back(i);
  split.unknown_returns_all = true;
  split.out_unknowns = carry_uk;
  return split;
}

// ---- transposition ----

// A jvp loop is linear in its tangent carries, but running it backwards needs the trip
// count ahead of time (JAX raises the same way). A loop with max_steps never gets here
// under grad/vjp: partial evaluation splits it as a scan (while_partial_eval).
std::vector<Array> while_transpose(std::span<const Array>, std::span<const TransposeOperand>, const Params&) {
  detail::fail("while", "reverse-mode differentiation (grad, vjp, jacrev) of a while loop needs a bounded number of "
                        "iterations: give while_loop max_steps, or use fori_loop with static bounds (or scan). "
                        "Forward mode (jvp, jacfwd) works.");
}

// ---- dead-code elimination ----

// Keeps the carries the used outputs need, closed under the body, and those cond reads;
// drops the others with the constants only they needed.
DceEquationResult while_dce(const std::vector<bool>& used_outputs, Equation& eqn) {
  const Loop l = loop_of(eqn.params);
  const size_t cn = l.cond_nconsts, bn = l.body_nconsts, c0 = l.carry_begin(), nc = eqn.inputs.size() - c0;
  detail::DcedJaxpr cond = detail::dce_jaxpr(l.cond->jaxpr, {true});
  std::vector<bool> used(used_outputs);
  detail::or_into(used, std::vector<bool>(cond.used_inputs.begin() + static_cast<std::ptrdiff_t>(cn), cond.used_inputs.end()));
  detail::DcedJaxpr body;
  for (size_t iter = 0; iter <= nc; ++iter) {
    body = detail::dce_jaxpr(l.body->jaxpr, used, concat(std::vector<bool>(bn, false), used));
    const std::vector<bool> reads(body.used_inputs.begin() + static_cast<std::ptrdiff_t>(bn), body.used_inputs.end());
    if (reads == used) break;
    detail::or_into(used, reads);
  }
  cond = detail::dce_jaxpr(l.cond->jaxpr, {true}, concat(std::vector<bool>(cn, false), used));
  std::vector<bool> used_inputs = concat(std::vector<bool>(cond.used_inputs.begin(), cond.used_inputs.begin() + static_cast<std::ptrdiff_t>(cn)),
                                         std::vector<bool>(body.used_inputs.begin(), body.used_inputs.begin() + static_cast<std::ptrdiff_t>(bn)));
  used_inputs.insert(used_inputs.end(), used.begin(), used.end());
  if (!cond.changed && !body.changed) return {std::move(used_inputs), false};
  Loop out = l;
  out.cond = std::make_shared<ClosedJaxpr>(ClosedJaxpr{std::move(cond.jaxpr), {}});
  out.body = std::make_shared<ClosedJaxpr>(ClosedJaxpr{std::move(body.jaxpr), {}});
  out.cond_nconsts = static_cast<size_t>(std::count(used_inputs.begin(), used_inputs.begin() + static_cast<std::ptrdiff_t>(cn), true));
  out.body_nconsts = static_cast<size_t>(std::count(used_inputs.begin() + static_cast<std::ptrdiff_t>(cn), used_inputs.begin() + static_cast<std::ptrdiff_t>(c0), true));
  eqn.params = out.params();
  std::vector<Atom> inputs;
  for (size_t i = 0; i < eqn.inputs.size(); ++i)
    if (used_inputs[i]) inputs.push_back(std::move(eqn.inputs[i]));
  eqn.inputs = std::move(inputs);
  std::vector<Var> outputs;
  for (size_t k = 0; k < nc; ++k)
    if (used[k]) outputs.push_back(std::move(eqn.outputs[k]));
  eqn.outputs = std::move(outputs);
  return {std::move(used_inputs), true};
}

}  // namespace

// kLinear: a jvp loop is linear in its tangent carries; its transpose rule explains why
// reverse mode needs a bounded trip count.
const Primitive while_p("while", {.traits = kCallsSubprogram | kLinear,
                                  .num_outputs = -1,
                                  .abstract_eval = while_abstract_eval,
                                  .impl = while_impl,
                                  .jvp = while_jvp,
                                  .transpose = while_transpose,
                                  .batch = while_batch,
                                  .partial_eval = while_partial_eval,
                                  .dce = while_dce});

}  // namespace jx::lax

// ---- the public function's flat core (jx/control_flow/while_loop.h) ----
namespace jx::detail {

std::vector<Array> while_flat(const FlatFn& cond_fn, const FlatFn& body_fn, std::span<const Array> init,
                              std::optional<int64_t> max_steps) {
  if (max_steps && *max_steps < 0) fail("while_loop", "max_steps must be nonnegative, got ", *max_steps);
  std::vector<Array> carry(init.begin(), init.end());
  for (size_t k = 0; k < carry.size(); ++k)
    if (!carry[k].valid()) fail("while_loop", "init leaf ", k, " is a null jx::Array");
  std::vector<Aval> avals = avals_of(carry);
  BodyWithConsts body = stage_user_body(body_fn, avals, "while_loop");
  // A weakly typed initial leaf takes the dtype body_fn gives it (JAX's _promote_weak_typed_inputs).
  std::vector<Aval> outs = body.body->out_avals();
  bool promoted = false;
  for (size_t k = 0; k < carry.size() && k < outs.size(); ++k)
    if (avals[k].weak_type && avals[k].shape == outs[k].shape && avals[k].dtype != outs[k].dtype) {
      carry[k] = lax::convert_element_type(carry[k], outs[k].dtype, outs[k].weak_type);
      promoted = true;
    }
  if (promoted) {
    avals = avals_of(carry);
    body = stage_user_body(body_fn, avals, "while_loop");
    outs = body.body->out_avals();
  }
  for (size_t k = 0; k < carry.size(); ++k)
    if (!same_type(outs[k], avals[k]))
      fail("while", "body_fn changes the type of carry leaf ", k, ": the carry is ", avals[k].str(),
           " but body_fn returns ", outs[k].str());
  BodyWithConsts cond = stage_user_body(cond_fn, avals, "while_loop");
  const std::vector<Aval> pred = cond.body->out_avals();
  if (pred[0].dtype != DType::Bool || pred[0].ndim() != 0)
    fail("while", "cond_fn must return a bool scalar, got ", pred[0].str());
  std::vector<Array> operands = cond.consts;
  operands.insert(operands.end(), body.consts.begin(), body.consts.end());
  operands.insert(operands.end(), carry.begin(), carry.end());
  const lax::Loop loop{cond.body, body.body, cond.consts.size(), body.consts.size(), max_steps.value_or(-1)};
  return jx::bind(lax::while_p, operands, loop.params());
}

}  // namespace jx::detail
