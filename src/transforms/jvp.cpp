#include "transforms/jvp.h"

#include "core/array_internal.h"
#include "jx/error.h"

namespace jx::detail {

JvpTracer::JvpTracer(JvpTrace* trace, Array primal, Array tangent)
    : trace_(trace), state_(trace->state()), primal_(std::move(primal)), tangent_(std::move(tangent)) {}
Trace* JvpTracer::trace() const { return state_->alive ? trace_ : nullptr; }

bool has_tangent_space(DType d) { return is_inexact(d); }

Array JvpTrace::pack(Array primal, Array tangent) {
  if (!tangent.valid() || !has_tangent_space(primal.dtype())) return primal;
  Aval aval = primal.aval();
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = std::move(aval);
  impl->tracer = std::make_shared<JvpTracer>(this, std::move(primal), std::move(tangent));
  return Array(std::move(impl));
}

std::pair<Array, Array> JvpTrace::unpack(const Array& x) const {
  const ArrayImpl& impl = x.impl();
  if (impl.tracer && impl.tracer->state() == state().get()) {
    const auto& t = static_cast<const JvpTracer&>(*impl.tracer);
    return {t.primal(), t.tangent()};
  }
  return {x, Array()};
}

std::vector<Array> JvpTrace::process(const Primitive& p, std::span<const Array> in, const Params& params) {
  std::vector<Array> primals, tangents;
  primals.reserve(in.size());
  tangents.reserve(in.size());
  bool any_tangent = false;
  for (const Array& x : in) {
    auto [primal, tangent] = unpack(x);
    any_tangent |= tangent.valid();
    primals.push_back(std::move(primal));
    tangents.push_back(std::move(tangent));
  }
  TraceScope below(parent());
  if (!any_tangent || p.has(kNotDifferentiable)) return jx::bind(p, primals, params);
  if (!p.rules().jvp)
    fail(p.name(), "has no differentiation (jvp) rule, so ", name_, " cannot differentiate through it");
  JvpResult r = p.rules().jvp(primals, tangents, params);
  if (r.tangents_out.size() != r.primals_out.size())
    fail(p.name(), "jvp rule returned ", r.tangents_out.size(), " tangents for ", r.primals_out.size(), " outputs");
  std::vector<Array> out;
  out.reserve(r.primals_out.size());
  for (size_t i = 0; i < r.primals_out.size(); ++i) {
    const Array& t = r.tangents_out[i];
    if (t.valid() && (t.shape() != r.primals_out[i].shape() || t.dtype() != r.primals_out[i].dtype()))
      fail(p.name(), "jvp rule produced a tangent ", t.aval().str(), " for the output ",
           r.primals_out[i].aval().str(), " (a bug in the rule)");
    out.push_back(pack(std::move(r.primals_out[i]), t));
  }
  return out;
}

}  // namespace jx::detail
