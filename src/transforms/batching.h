// Automatic batching: the vmap interpreter. A BatchTracer holds a value with one extra
// axis (the batch axis, at `dim`); processing a primitive calls its batching rule,
// which says where the outputs' batch axes are. Operations with no batched operand run
// unbatched one level down.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "jx/primitive.h"

namespace jx::detail {

class BatchTrace;

class BatchTracer final : public Tracer {
 public:
  BatchTracer(BatchTrace* trace, Array value, int64_t dim);
  Trace* trace() const override;
  const TraceState* state() const override { return state_.get(); }
  const Array& value() const { return value_; }
  int64_t dim() const { return dim_; }

 private:
  BatchTrace* trace_;
  std::shared_ptr<const TraceState> state_;
  Array value_;
  int64_t dim_;
};

class BatchTrace final : public Trace {
 public:
  explicit BatchTrace(BatchAxis axis) : axis_(std::move(axis)) { set_name("vmap"); }
  std::vector<Array> process(const Primitive& p, std::span<const Array> in, const Params& params) override;
  std::string_view transformation() const override { return "vmap"; }
  std::string_view concretization_hint() const override;
  const BatchAxis& axis() const { return axis_; }

  // A tracer for `value` whose batch axis is `dim` (value itself when kNotMapped).
  Array pack(Array value, int64_t dim);
  std::pair<Array, int64_t> unpack(const Array& x) const;

 private:
  bool runs_over_this_axis(const Primitive& p, const Params& params) const;
  BatchAxis axis_;
};

}  // namespace jx::detail
