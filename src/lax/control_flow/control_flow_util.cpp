#include "lax/control_flow/control_flow_util.h"

#include <unordered_map>

#include "core/array_internal.h"
#include "jx/error.h"
#include "lax/rules.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/staging.h"

namespace jx::detail {

BodyWithConsts stage_user_body(const FlatFn& f, std::span<const Aval> in_avals, std::string name) {
  BodyWithConsts b;
  b.body = body_with_consts_first(stage_flat(f, in_avals, std::move(name)), &b.consts);
  return b;
}

JaxprRef stage_rewritten_body(const FlatFn& f, std::span<const Aval> in_avals, std::string_view prim) {
  TraceScope isolated(nullptr);  // the body's values are all its own
  std::vector<Array> consts;
  JaxprRef body = body_with_consts_first(stage_flat(f, in_avals, std::string(prim)), &consts);
  JX_CHECK(consts.empty(), prim, "a rewritten body captured ", consts.size(), " constants");
  return body;
}

JoinedConsts join_consts(std::span<const BodyWithConsts> bodies) {
  JoinedConsts j;
  std::unordered_map<const void*, size_t> slot_of;  // Array::id() -> slot
  for (const BodyWithConsts& b : bodies) {
    std::vector<size_t>& slots = j.slots.emplace_back();
    for (const Array& c : b.consts) {
      auto [it, inserted] = slot_of.emplace(c.id(), j.values.size());
      if (inserted) j.values.push_back(c);
      slots.push_back(it->second);
    }
  }
  return j;
}

std::vector<JaxprRef> bodies_taking_joined_consts(std::span<const BodyWithConsts> bodies, const JoinedConsts& joined,
                                                  std::string_view prim) {
  const std::vector<Aval> const_avals = avals_of(joined.values);
  std::vector<JaxprRef> out;
  for (size_t b = 0; b < bodies.size(); ++b) {
    const std::vector<size_t>& slots = joined.slots[b];
    const std::vector<Aval> body_avals = bodies[b].body->in_avals();
    // Unchanged when its constants are already all of them, in order.
    bool identity = slots.size() == joined.values.size();
    for (size_t k = 0; identity && k < slots.size(); ++k) identity = slots[k] == k;
    if (identity) {
      out.push_back(bodies[b].body);
      continue;
    }
    std::vector<Aval> avals = const_avals;
    avals.insert(avals.end(), body_avals.begin() + static_cast<std::ptrdiff_t>(slots.size()), body_avals.end());
    const Jaxpr& jaxpr = bodies[b].body->jaxpr;
    out.push_back(stage_rewritten_body(
        [&](std::span<const Array> xs) {
          std::vector<Array> in;
          for (size_t s : slots) in.push_back(xs[s]);
          in.insert(in.end(), xs.begin() + static_cast<std::ptrdiff_t>(joined.values.size()), xs.end());
          return eval_jaxpr(jaxpr, {}, in);
        },
        avals, prim));
  }
  return out;
}

JaxprRef permute_inputs(const JaxprRef& body, std::span<const size_t> order) {
  const std::vector<Var>& invars = body->jaxpr.invars;
  JX_CHECK(order.size() == invars.size(), "permute_inputs", order.size(), " positions for ", invars.size(), " inputs");
  auto out = std::make_shared<ClosedJaxpr>(*body);
  for (size_t k = 0; k < order.size(); ++k) out->jaxpr.invars[k] = invars.at(order[k]);
  return out;
}

bool same_type(const Aval& a, const Aval& b) { return a.shape == b.shape && a.dtype == b.dtype; }

void check_body_inputs(std::string_view prim, std::string_view what, const JaxprRef& body,
                       std::span<const Aval> operands) {
  if (!body) fail(prim, what, " is a null sub-program");
  if (!body->jaxpr.constvars.empty() || !body->consts.empty())
    fail(prim, what, " must have no constvars (its constants are operands)");
  const std::vector<Aval> want = body->in_avals();
  if (want.size() != operands.size())
    fail(prim, what, " takes ", want.size(), " inputs (", lax::rules::avals_str(want), ") but gets ", operands.size(),
         " operands (", lax::rules::avals_str(operands), ")");
  for (size_t i = 0; i < want.size(); ++i)
    if (!same_type(want[i], operands[i]))
      fail(prim, what, " input ", i, " has type ", want[i].str(), " but its operand is ", operands[i].str());
}

std::vector<Array> with_weak_types(std::vector<Array> outs, std::span<const Aval> avals) {
  for (size_t i = 0; i < outs.size() && i < avals.size(); ++i)
    if (outs[i].aval().weak_type != avals[i].weak_type) outs[i] = with_weak_type(outs[i], avals[i].weak_type);
  return outs;
}

std::vector<Aval> avals_of(std::span<const Array> xs) {
  std::vector<Aval> a;
  a.reserve(xs.size());
  for (const Array& x : xs) a.push_back(x.aval());
  return a;
}

void or_into(std::vector<bool>& a, const std::vector<bool>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) a[i] = a[i] || b[i];
}

}  // namespace jx::detail
