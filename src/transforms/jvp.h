// Forward-mode differentiation: the jvp interpreter. A JvpTracer carries a primal value
// and its tangent (invalid = symbolic zero); processing a primitive binds it on the
// primals one level down and calls the primitive's jvp rule for the tangents.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "jx/primitive.h"

namespace jx::detail {

class JvpTrace;

class JvpTracer final : public Tracer {
 public:
  JvpTracer(JvpTrace* trace, Array primal, Array tangent);
  Trace* trace() const override;
  const TraceState* state() const override { return state_.get(); }
  const Array* known_value() const override { return &primal_; }
  const Array& primal() const { return primal_; }
  const Array& tangent() const { return tangent_; }

 private:
  JvpTrace* trace_;
  std::shared_ptr<const TraceState> state_;
  Array primal_, tangent_;
};

class JvpTrace final : public Trace {
 public:
  explicit JvpTrace(std::string name) : name_(std::move(name)) { set_name(name_); }
  std::vector<Array> process(const Primitive& p, std::span<const Array> in, const Params& params) override;
  std::string_view transformation() const override { return name_; }

  // A tracer of this trace for (primal, tangent); the primal itself when the tangent is
  // a symbolic zero.
  Array pack(Array primal, Array tangent);
  // (primal, tangent) of x as seen by this trace: anything not its tracer is a constant.
  std::pair<Array, Array> unpack(const Array& x) const;

 private:
  std::string name_;
};

// Whether values of this dtype carry tangents (floating and complex ones do).
bool has_tangent_space(DType d);

}  // namespace jx::detail
