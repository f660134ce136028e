// while: JAX's structured loop. Operands (cond consts..., body consts..., carry...); params
// cond_jaxpr (consts, carry -> bool scalar), body_jaxpr (consts, carry -> carry),
// cond_nconsts, body_nconsts and max_steps (-1: unbounded; else at most that many
// iterations). The rules follow JAX's lax/control_flow/loops.py: jvp and batching find
// by fixpoint which carries get tangents / a batch axis; partial evaluation runs the
// known carries in a known loop and stages the whole loop for the unknown ones; a loop
// with max_steps is split as an equivalent scan instead (checkpointed: see "reverse
// mode"), and an unbounded one is transposed by counting its trip count first.
#include "jx/control_flow/while_loop.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/array_internal.h"
#include "core/subprogram.h"
#include "jx/checkpoint.h"
#include "jx/control_flow/cond.h"
#include "jx/error.h"
#include "jx/lax.h"
#include "jx/numpy/creation.h"
#include "jx/numpy/manipulation.h"
#include "jx/numpy/core.h"
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
  // Reverse mode's checkpointing (WhileOptions); printed only when not the default.
  int64_t checkpoints = -1;  // -1: ceil(max_steps^(1 / (checkpoint_levels + 1)))
  int64_t checkpoint_levels = 1;

  size_t carry_begin() const { return cond_nconsts + body_nconsts; }
  Params params() const {
    Params p{{"cond_jaxpr", cond},
             {"body_jaxpr", body},
             {"cond_nconsts", static_cast<int64_t>(cond_nconsts)},
             {"body_nconsts", static_cast<int64_t>(body_nconsts)},
             {"max_steps", max_steps}};
    if (checkpoints != -1) p.set("checkpoints", checkpoints);
    if (checkpoint_levels != 1) p.set("checkpoint_levels", checkpoint_levels);
    return p;
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
  if (params.has("checkpoints")) l.checkpoints = params.get_int("checkpoints");
  if (params.has("checkpoint_levels")) l.checkpoint_levels = params.get_int("checkpoint_levels");
  if (l.checkpoints < -1 || l.checkpoints == 0)
    detail::fail("while", "checkpoints must be positive (or -1: the default), got ", l.checkpoints);
  if (l.checkpoint_levels < 1) detail::fail("while", "checkpoint_levels must be at least 1, got ", l.checkpoint_levels);
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
  carry.mirror_current(cond_in.data() + nc);
  carry.mirror_current(body_in.data() + nb);
  for (int64_t step = 0; l.max_steps < 0 || step < l.max_steps; ++step) {
    cond->run(cond_in.data(), &pred_out, workspace.data());
    if (!pred) break;
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

// Which carries are unknown given which operands are: those whose initial value is,
// closed under the body (a fixpoint); and whether the predicate then is. Also the split
// bodies, whose known halves run the known carries.
struct UnknownCarries {
  std::vector<bool> cconst, bconst, carry;
  std::shared_ptr<const detail::SplitBody> body, cond;
  bool pred() const { return cond->out_unknowns[0]; }
  bool any() const { return std::find(carry.begin(), carry.end(), true) != carry.end(); }
};

UnknownCarries unknown_carries(const Loop& l, const std::vector<bool>& unknowns) {
  const size_t cn = l.cond_nconsts, c0 = l.carry_begin(), nc = unknowns.size() - c0;
  UnknownCarries u;
  u.cconst.assign(unknowns.begin(), unknowns.begin() + static_cast<std::ptrdiff_t>(cn));
  u.bconst.assign(unknowns.begin() + static_cast<std::ptrdiff_t>(cn), unknowns.begin() + static_cast<std::ptrdiff_t>(c0));
  u.carry.assign(unknowns.begin() + static_cast<std::ptrdiff_t>(c0), unknowns.end());
  for (size_t iter = 0; iter <= nc; ++iter) {
    u.body = detail::partial_eval_of_body(l.body, concat(u.bconst, u.carry), u.carry);
    if (u.body->out_unknowns == u.carry) break;
    detail::or_into(u.carry, u.body->out_unknowns);
  }
  u.cond = detail::partial_eval_of_body(l.cond, concat(u.cconst, u.carry));
  JX_CHECK(u.pred() || u.cond->num_residuals == 0, "while", "a known predicate left residuals");
  return u;
}

// One step of the loop, guarded: `carry = cond(pred(carry), body, identity)(carry)`, so
// that a step after the predicate turned false (or under vmap, in a lane whose predicate
// did) leaves the carry alone. `consts`: (cond consts, body consts). With `step` (the
// global step index, an int32 scalar) the step also stops at max_steps: the checkpointed
// scan runs a few steps more than max_steps when the segments do not divide it.
std::vector<Array> guarded_step(const Loop& l, std::span<const Array> consts, std::span<const Array> carry,
                                const Array* step) {
  const size_t cn = l.cond_nconsts, bn = l.body_nconsts;
  Array pred = eval_jaxpr(l.cond->jaxpr, {}, concat(consts.first(cn), carry))[0];
  if (step) pred = lax::bitwise_and(lax::lt(*step, detail::scalar<int32_t>(static_cast<int32_t>(l.max_steps))), pred);
  const std::vector<detail::FlatFn> branches{
      [&](std::span<const Array> ops) { return std::vector<Array>(ops.begin() + static_cast<std::ptrdiff_t>(bn), ops.end()); },
      [&](std::span<const Array> ops) { return eval_jaxpr(l.body->jaxpr, {}, ops); }};
  return detail::cond_flat(detail::cond_index(pred), branches, concat(consts.subspan(cn), carry),
                           detail::cond_branch_name);
}

// A loop with max_steps as the equivalent scan of max_steps guarded steps, saving every
// step's residuals under reverse mode. The scan reads the while's operands in the same
// layout: (cond consts, body consts) as its consts, the carries as its carries, no xs.
detail::ScanParams bounded_as_scan(const Loop& l, std::span<const Aval> operand_avals) {
  const size_t c0 = l.carry_begin();
  JaxprRef step = detail::stage_rewritten_body(
      [&](std::span<const Array> xs) { return guarded_step(l, xs.first(c0), xs.subspan(c0), nullptr); }, operand_avals,
      "while");
  return detail::ScanParams{step, static_cast<int64_t>(c0), static_cast<int64_t>(operand_avals.size() - c0),
                            l.max_steps, false, 1};
}

// ---- reverse mode: checkpointed segments ----
//
// Reverse mode through a loop of N = max_steps steps splits it as a scan over
// `segments` runs of segment_steps() guarded steps each; a run is a checkpoint (save
// nothing) of a scan over radices.back() runs of the level below, down to a scan of
// radices[0] single steps. Partial evaluation of the top scan then saves only the carry
// at the start of each run (a checkpoint's known inputs are all it keeps), and the
// backward pass of each run recomputes its steps from that carry: one level holds
// O(sqrt N) carries and costs one more forward pass; L levels hold O(L N^(1/(L+1)))
// and cost L more.
struct CheckpointPlan {
  int64_t segments = 0;          // carries saved: the length of the top scan
  std::vector<int64_t> radices;  // innermost first: level j + 1 scans radices[j] runs of level j
  int64_t steps_below(size_t level) const {  // the steps in one run of `level` (level 0: a single step)
    int64_t n = 1;
    for (size_t j = 0; j < level; ++j) n *= radices[j];
    return n;
  }
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The smallest r >= 1 with r^k >= x, for x >= 1 and k >= 1.
int64_t ceil_root(int64_t x, int64_t k) {
  auto reaches = [&](int64_t r) {  // r^k >= x, without overflow
    int64_t p = 1;
    for (int64_t j = 0; j < k; ++j) {
      if (p >= ceil_div(x, r)) return true;
      p *= r;
    }
    return p >= x;
  };
  auto r = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::pow(static_cast<double>(x), 1.0 / static_cast<double>(k)))));
  while (r > 1 && reaches(r - 1)) --r;
  while (!reaches(r)) ++r;
  return r;
}

// None when every step's residuals are saved: N <= 1, or checkpoints >= N.
std::optional<CheckpointPlan> checkpoint_plan(const Loop& l) {
  const int64_t n = l.max_steps;
  if (n <= 1) return std::nullopt;
  const int64_t k = l.checkpoints > 0 ? l.checkpoints : ceil_root(n, l.checkpoint_levels + 1);
  if (k >= n) return std::nullopt;
  const int64_t segment = ceil_div(n, k);  // >= 2
  int64_t levels = 0;                      // at most log2(segment): every radix at least 2
  while (levels < l.checkpoint_levels && (int64_t{2} << levels) <= segment) ++levels;
  CheckpointPlan plan;
  for (int64_t j = levels, rest = segment; j >= 1; --j) {  // outermost first
    const int64_t r = ceil_root(rest, j);
    plan.radices.insert(plan.radices.begin(), r);
    rest = ceil_div(rest, r);
  }
  plan.segments = ceil_div(n, plan.steps_below(plan.radices.size()));
  if (plan.segments * plan.steps_below(plan.radices.size()) > INT32_MAX)
    detail::fail("while", "reverse mode supports max_steps up to 2^31 - 1 (the step index is int32), got ", n);
  return plan;
}

std::vector<Array> checkpointed_run(const Loop& l, const CheckpointPlan& plan, size_t level,
                                    std::span<const Array> consts, std::span<const Array> carry, const Array& step);

// One run of `level` >= 1 from global step `step`: a scan of radices[level - 1] runs of
// the level below, carrying the step index with the carries.
std::vector<Array> run(const Loop& l, const CheckpointPlan& plan, size_t level, std::span<const Array> consts,
                       std::span<const Array> carry, const Array& step) {
  const int64_t stride = plan.steps_below(level - 1);
  detail::FlatFn body = [&](std::span<const Array> c) {
    std::vector<Array> next = level == 1 ? guarded_step(l, consts, c.subspan(1), &c[0])
                                         : checkpointed_run(l, plan, level - 1, consts, c.subspan(1), c[0]);
    next.insert(next.begin(), lax::add(c[0], detail::scalar<int32_t>(static_cast<int32_t>(stride))));
    return next;
  };
  std::vector<Array> init{step};
  init.insert(init.end(), carry.begin(), carry.end());
  std::vector<Array> out = detail::scan_flat(body, std::move(init), {}, lax::ScanOptions{.length = plan.radices[level - 1]},
                                             detail::ScanNames{.op = "while", .fn = "body_fn", .hidden_carry = 1});
  out.erase(out.begin());
  return out;
}

// run() inside a checkpoint that saves nothing, its inputs explicit.
std::vector<Array> checkpointed_run(const Loop& l, const CheckpointPlan& plan, size_t level,
                                    std::span<const Array> consts, std::span<const Array> carry, const Array& step) {
  const size_t n = consts.size(), nc = carry.size();
  std::vector<Array> args = concat(consts, carry);
  args.push_back(step);
  return detail::checkpoint_flat(
      [&](std::span<const Array> in) { return run(l, plan, level, in.first(n), in.subspan(n, nc), in[n + nc]); }, args,
      CheckpointOptions{});
}

// The top scan: operands (cond consts, body consts, carries, the start step of each
// run); the last is no operand of the while, so its value comes back too.
struct SegmentedScan {
  detail::ScanParams params;
  Array starts;
};
SegmentedScan segmented_as_scan(const Loop& l, const CheckpointPlan& plan, std::span<const Aval> operand_avals) {
  const size_t c0 = l.carry_begin(), nc = operand_avals.size() - c0, top = plan.radices.size();
  std::vector<Aval> avals(operand_avals.begin(), operand_avals.end());
  avals.push_back(Aval{{}, DType::Int32, false});
  JaxprRef body = detail::stage_rewritten_body(
      [&](std::span<const Array> xs) {
        return checkpointed_run(l, plan, top, xs.first(c0), xs.subspan(c0, nc), xs[c0 + nc]);
      },
      avals, "while");
  std::vector<int32_t> starts;
  for (int64_t k = 0; k < plan.segments; ++k) starts.push_back(static_cast<int32_t>(k * plan.steps_below(top)));
  return {detail::ScanParams{body, static_cast<int64_t>(c0), static_cast<int64_t>(nc), plan.segments, false, 1},
          Array(starts)};
}

// A scan's split whose last operand `extra` is no operand of the while: it becomes the
// last constant of both halves (the operand indices follow).
PartialEvalSplit with_last_operand_as_const(PartialEvalSplit s, size_t num_operands, const Array& extra) {
  const size_t nk = s.known_consts.size(), nu = s.unknown_consts.size(), nr = s.num_residuals;
  JX_CHECK(!s.unknown_operands.empty() && !s.known_operands.empty(), "while", "a scan split without operand lists");
  for (size_t& i : s.known_operands) i = i < nk ? i : i == nk + num_operands ? nk : i + 1;
  for (size_t& i : s.unknown_operands) i = i < nu ? i : i == nu + nr + num_operands ? nu : i + 1;
  s.known_consts.push_back(extra);
  s.unknown_consts.push_back(extra);
  return s;
}

// JAX's rule: the carries that depend on unknowns (a fixpoint through the body) are
// unknown. A known loop over the known carries runs now; the whole loop is staged for the
// unknown ones (recomputing the known carries there). With an unknown predicate, or no
// known carry, the whole loop is unknown.
PartialEvalSplit while_partial_eval(const std::vector<bool>& unknowns, const Params& params) {
  const Loop l = loop_of(params);
  const size_t cn = l.cond_nconsts, c0 = l.carry_begin(), nc = unknowns.size() - c0;
  const UnknownCarries uk = unknown_carries(l, unknowns);
  const std::vector<bool>& carry_uk = uk.carry;
  // A bounded loop with unknown carries (linearize: the tangents) is split as its scan,
  // whose known half saves the residuals and whose unknown half scan transposes: reverse
  // mode through while_loop with max_steps. Checkpointed unless told to save every step.
  if (!uk.pred() && l.max_steps >= 0 && uk.any()) {
    std::vector<Aval> avals = l.cond->in_avals();
    avals.resize(cn);
    const std::vector<Aval> body_in = l.body->in_avals();
    avals.insert(avals.end(), body_in.begin(), body_in.end());
    const std::optional<CheckpointPlan> plan = checkpoint_plan(l);
    if (!plan) return detail::scan_partial_eval(unknowns, bounded_as_scan(l, avals).to_params());
    const SegmentedScan scan = segmented_as_scan(l, *plan, avals);
    std::vector<bool> scan_unknowns = unknowns;
    scan_unknowns.push_back(false);
    return with_last_operand_as_const(detail::scan_partial_eval(scan_unknowns, scan.params.to_params()),
                                      unknowns.size(), scan.starts);
  }
  const bool all_unknown = std::find(carry_uk.begin(), carry_uk.end(), false) == carry_uk.end();
  if (uk.pred() || all_unknown) return detail::stage_whole(while_p, params, unknowns.size(), nc);
  const auto& body = uk.body;
  const auto& cond = uk.cond;
  const std::vector<bool>& cconst_uk = uk.cconst;
  const std::vector<bool>& bconst_uk = uk.bconst;

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

// The concrete value behind x, through the tracers that know it (jvp and linearize carry
// their primal); invalid when x is abstract (jit, vmap).
Array known_value(const Array& x) {
  const Array* cur = &x;
  while (cur->impl().tracer) {
    cur = cur->impl().tracer->known_value();
    if (!cur) return Array();
  }
  return *cur;
}

// The iterations the loop makes from these concrete values of its known operands: its
// known part (no linear carry) run now.
int64_t trip_count(const Loop& l, const UnknownCarries& uk, std::span<const Array> values) {
  detail::TraceScope eager(nullptr);
  const size_t cn = l.cond_nconsts, c0 = l.carry_begin();
  std::vector<Array> cconsts = uk.cond->known_consts, bconsts = uk.body->known_consts, carry;
  for (size_t i = 0; i < values.size(); ++i) {
    const bool unknown = i < cn ? uk.cconst[i] : i < c0 ? uk.bconst[i - cn] : uk.carry[i - c0];
    if (unknown) continue;
    (i < cn ? cconsts : i < c0 ? bconsts : carry).push_back(values[i]);
  }
  const size_t num_known = carry.size();
  int64_t steps = 0;
  for (; l.max_steps < 0 || steps < l.max_steps; ++steps) {
    if (!eval_jaxpr(uk.cond->known->jaxpr, {}, concat(std::span<const Array>(cconsts), std::span<const Array>(carry)))[0]
             .item<bool>())
      break;
    carry = eval_jaxpr(uk.body->known->jaxpr, {}, concat(std::span<const Array>(bconsts), std::span<const Array>(carry)));
    carry.resize(num_known);  // drop the residuals
  }
  return steps;
}

// Under jit the known operands are traced, so T is known only when the program runs:
// the backward pass is staged as one `while_backward` equation (below) reading the known
// operands and the cotangents, whose impl runs this transpose on their values.
std::vector<Array> deferred_while_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                            const Params& params, const std::vector<bool>& linear);

// A jvp loop is linear in its tangent carries. A loop with max_steps never gets here
// under grad/vjp: partial evaluation splits it as a scan (while_partial_eval). Without
// max_steps, running it backwards needs its trip count T: when the known operands have
// concrete values (eager reverse mode, also under an outer jvp), the known part of the
// loop runs now to count T, and the loop is transposed as the same loop with max_steps =
// T: its checkpointed scan is split, the known half runs (saving the checkpoints) and
// the unknown half is transposed. Under jit T is unknown when the backward pass is
// built: it is deferred to run time (while_backward); under vmap it raises (JAX always
// refuses reverse mode here).
std::vector<Array> while_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                   const Params& params) {
  const Loop l = loop_of(params);
  std::vector<bool> linear;
  std::vector<Array> values;
  bool concrete = true;
  for (const TransposeOperand& o : operands) {
    linear.push_back(o.is_linear());
    values.push_back(o.is_linear() ? Array() : known_value(o.value));
    concrete = concrete && (o.is_linear() || values.back().valid());
  }
  const UnknownCarries uk = unknown_carries(l, linear);
  if (uk.pred())
    detail::fail("while", "cannot transpose a loop whose predicate reads a linear (tangent) value");
  if (!concrete) return deferred_while_transpose(cts, operands, params, linear);
  Loop bounded = l;
  bounded.max_steps = trip_count(l, uk, values);

  std::vector<Aval> avals;
  for (const TransposeOperand& o : operands) avals.push_back(o.aval);
  const JaxprRef loop = detail::stage_rewritten_body(
      [&](std::span<const Array> xs) { return jx::bind(while_p, xs, bounded.params()); }, avals, "while");
  const detail::PartialEvalJaxpr pe = detail::partial_eval_jaxpr(*loop, linear, {});
  std::vector<Array> known_in;
  for (size_t i = 0; i < operands.size(); ++i)
    if (!linear[i]) known_in.push_back(operands[i].value);
  std::vector<Array> known_out = eval_jaxpr(pe.known, known_in);
  std::vector<Array> t_in(known_out.end() - static_cast<std::ptrdiff_t>(pe.num_residuals), known_out.end());
  std::vector<bool> ct_nonzero;
  for (size_t k = 0; k < cts.size(); ++k)
    if (pe.out_unknowns[k]) {
      ct_nonzero.push_back(cts[k].valid());
      if (cts[k].valid()) t_in.push_back(cts[k]);
    }
  std::vector<bool> t_linear(pe.num_residuals, false);
  t_linear.resize(pe.unknown.jaxpr.invars.size(), true);
  const std::vector<Array> lin_cts = eval_jaxpr(detail::transpose_jaxpr(pe.unknown, t_linear, ct_nonzero), t_in);
  std::vector<Array> out(operands.size());
  for (size_t i = 0, k = 0; i < operands.size(); ++i)
    if (linear[i]) out[i] = lin_cts[k++];
  return out;
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
  detail::drop_unused_inputs_and_outputs(eqn, used_inputs, used);
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

// ---- while_backward: the reverse pass of a loop without max_steps under jit ----
//
//   while_backward[cond_jaxpr body_jaxpr cond_nconsts body_nconsts max_steps linear
//                  nonzero_cts] known operands... nonzero cotangents...
//     -> a cotangent per linear operand of the loop
//
// Its impl has the values: it counts the trip count T by running the loop's known part
// and transposes the loop as one with max_steps = T (checkpointed: O(sqrt T) saved
// carries), as eager reverse mode does. The backward pass is built on every call and
// its sub-programs are interpreted; it cannot itself be differentiated or batched.
extern const Primitive while_backward_p;

namespace {

std::vector<int64_t> mask_ints(const std::vector<bool>& mask) { return std::vector<int64_t>(mask.begin(), mask.end()); }
std::vector<bool> mask_of(const std::vector<int64_t>& ints) { return std::vector<bool>(ints.begin(), ints.end()); }

// The avals of the loop's operands, from its bodies' inputs.
std::vector<Aval> operand_avals(const Loop& l) {
  std::vector<Aval> avals = l.cond->jaxpr.in_avals();
  avals.resize(l.cond_nconsts);
  for (const Aval& a : l.body->jaxpr.in_avals()) avals.push_back(a);
  return avals;
}

std::vector<Aval> while_backward_abstract_eval(std::span<const Aval> in, const Params& params) {
  const Loop l = loop_of(params);
  const std::vector<bool> linear = mask_of(params.get_ints("linear"));
  const std::vector<Aval> avals = operand_avals(l);
  if (linear.size() != avals.size())
    detail::fail("while_backward", "linear has ", linear.size(), " entries but the loop has ", avals.size(),
                 " operands");
  std::vector<Aval> out;
  for (size_t i = 0; i < avals.size(); ++i)
    if (linear[i]) out.push_back(avals[i]);
  return out;
}

std::vector<Array> while_backward_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out) {
  const Loop l = loop_of(params);
  const std::vector<bool> linear = mask_of(params.get_ints("linear"));
  const std::vector<bool> nonzero = mask_of(params.get_ints("nonzero_cts"));
  const std::vector<Aval> avals = operand_avals(l);
  std::vector<TransposeOperand> operands;
  size_t k = 0;
  for (size_t i = 0; i < avals.size(); ++i) operands.push_back({linear[i] ? Array() : in[k++], avals[i]});
  std::vector<Array> cts;
  for (bool nz : nonzero) cts.push_back(nz ? in[k++] : Array());
  std::vector<Array> all = while_transpose(cts, operands, l.params());
  std::vector<Array> result;
  for (size_t i = 0; i < avals.size(); ++i)
    if (linear[i]) result.push_back(all[i].valid() ? all[i] : jx::numpy::zeros(avals[i].shape, avals[i].dtype));
  return detail::with_weak_types(std::move(result), out);
}

// Batched cotangents alone (jacrev: a vmap over the pullback) share the loop's trip
// count: one backward pass per lane. Batched known operands would need a trip count per
// lane: refused.
BatchResult while_backward_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                                 const BatchAxis& axis) {
  const std::vector<bool> linear = mask_of(params.get_ints("linear"));
  const size_t num_known = static_cast<size_t>(std::count(linear.begin(), linear.end(), false));
  for (size_t i = 0; i < num_known; ++i)
    if (dims[i] != kNotMapped)
      detail::fail("while", "reverse-mode differentiation (grad, vjp, jacrev) of a while loop without max_steps under "
                            "vmap: each lane would need its own trip count when the backward pass is built; give "
                            "while_loop max_steps, or use fori_loop with static bounds (or scan)");
  std::vector<std::vector<Array>> lanes;
  for (int64_t b = 0; b < axis.size; ++b) {
    std::vector<Array> in(args.begin(), args.end());
    for (size_t i = num_known; i < in.size(); ++i)
      if (dims[i] != kNotMapped) in[i] = jx::numpy::moveaxis(args[i], dims[i], 0)(b);
    lanes.push_back(jx::bind(while_backward_p, in, params));
  }
  BatchResult r;
  const size_t num_out = static_cast<size_t>(std::count(linear.begin(), linear.end(), true));
  for (size_t k = 0; k < num_out; ++k) {
    std::vector<Array> column;
    for (const std::vector<Array>& lane : lanes) column.push_back(lane[k]);
    r.outs.push_back(jx::numpy::stack(column, 0));
    r.dims.push_back(0);
  }
  return r;
}

JvpResult while_backward_jvp(std::span<const Array>, std::span<const Array>, const Params&) {
  detail::fail("while_backward", "the backward pass of a while_loop without max_steps, built when a jitted program "
                                 "runs, cannot be differentiated again (grad of grad under jit); give while_loop "
                                 "max_steps, or differentiate eagerly");
}

}  // namespace

const Primitive while_backward_p("while_backward", {.abstract_eval = while_backward_abstract_eval,
                                                    .impl = while_backward_impl,
                                                    .jvp = while_backward_jvp,
                                                    .batch = while_backward_batch});

namespace {

std::vector<Array> deferred_while_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                            const Params& params, const std::vector<bool>& linear) {
  const Loop l = loop_of(params);
  std::vector<Array> in;
  for (const TransposeOperand& o : operands)
    if (!o.is_linear()) in.push_back(o.value);
  std::vector<bool> nonzero;
  for (const Array& ct : cts) {
    nonzero.push_back(ct.valid());
    if (ct.valid()) in.push_back(ct);
  }
  Params p = l.params();
  p.set("linear", mask_ints(linear));
  p.set("nonzero_cts", mask_ints(nonzero));
  std::vector<Array> lin = jx::bind(while_backward_p, in, p);
  std::vector<Array> out(operands.size());
  for (size_t i = 0, j = 0; i < operands.size(); ++i)
    if (linear[i]) out[i] = lin[j++];
  return out;
}

}  // namespace

}  // namespace jx::lax

// ---- the public functions' flat core (jx/control_flow/while_loop.h) ----
namespace jx::detail {

ForiBounds fori_bounds(const Array& lower, const Array& upper) {
  auto check = [](const Array& x, const char* name) {
    if (!x.valid()) fail("fori_loop", name, " is a null jx::Array");
    if (x.ndim() != 0 || !is_integer(x.dtype()))
      fail("fori_loop", name, " must be an integer scalar, got ", x.aval().str());
  };
  check(lower, "lower");
  check(upper, "upper");
  const DType dtype = numpy::result_type({lower, upper});
  ForiBounds b{lax::convert_element_type(lower, dtype, false), lax::convert_element_type(upper, dtype, false), {}, {}};
  const Array lo = lax::known_value(lower), hi = lax::known_value(upper);
  if (lo.valid() && hi.valid()) {
    b.lower_value = lo.item<int64_t>();
    b.upper_value = hi.item<int64_t>();
  }
  return b;
}

std::vector<Array> while_flat(const FlatFn& cond_fn, const FlatFn& body_fn, std::span<const Array> init,
                              const lax::WhileOptions& options) {
  const std::optional<int64_t>& max_steps = options.max_steps;
  if (max_steps && *max_steps < 0) fail("while_loop", "max_steps must be nonnegative, got ", *max_steps);
  if (options.checkpoints && *options.checkpoints < 1)
    fail("while_loop", "checkpoints must be at least 1, got ", *options.checkpoints);
  if (options.checkpoint_levels < 1)
    fail("while_loop", "checkpoint_levels must be at least 1, got ", options.checkpoint_levels);
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
  const lax::Loop loop{cond.body,          body.body,
                       cond.consts.size(),  body.consts.size(),
                       max_steps.value_or(-1), options.checkpoints.value_or(-1),
                       options.checkpoint_levels};
  return jx::bind(lax::while_p, operands, loop.params());
}

}  // namespace jx::detail
