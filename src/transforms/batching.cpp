#include "transforms/batching.h"

#include "core/array_internal.h"
#include "jx/error.h"
#include "jx/lax.h"
#include "jx/transforms.h"
#include "lax/batch_rules.h"
#include "lax/collective_params.h"
#include "core/axis_env.h"
#include "transforms/staging.h"

namespace jx::detail {

BatchTracer::BatchTracer(BatchTrace* trace, Array value, int64_t dim)
    : trace_(trace), state_(trace->state()), value_(std::move(value)), dim_(dim) {}
Trace* BatchTracer::trace() const { return state_->alive ? trace_ : nullptr; }

std::string_view BatchTrace::concretization_hint() const {
  return "Under vmap each value stands for a whole batch, so it has no single value: choose with "
         "jx::lax::select / jnp::where, or reduce over the batch first.";
}

Array BatchTrace::pack(Array value, int64_t dim) {
  if (dim == kNotMapped) return value;
  Aval aval = value.aval();
  aval.shape.erase(aval.shape.begin() + dim);
  return make_tracer_array(std::move(aval), std::make_shared<BatchTracer>(this, std::move(value), dim));
}

std::pair<Array, int64_t> BatchTrace::unpack(const Array& x) const {
  const ArrayImpl& impl = x.impl();
  if (impl.tracer && impl.tracer->state() == state().get()) {
    const auto& t = static_cast<const BatchTracer&>(*impl.tracer);
    return {t.value(), t.dim()};
  }
  return {x, kNotMapped};
}

// A collective over this vmap's named axis computes across its lanes even when none of
// its operands is batched (psum of a constant is size times it; axis_index has none).
bool BatchTrace::runs_over_this_axis(const Primitive& p, const Params& params) const {
  if (!p.has(kCollective) || axis_.name.empty()) return false;
  for (const std::string& name : lax::collective::axis_names(params))
    if (name == axis_.name) return true;
  return false;
}

std::vector<Array> BatchTrace::process(const Primitive& p, std::span<const Array> in, const Params& params) {
  std::vector<Array> values;
  std::vector<int64_t> dims;
  values.reserve(in.size());
  dims.reserve(in.size());
  bool any_batched = false;
  for (const Array& x : in) {
    auto [v, d] = unpack(x);
    any_batched |= d != kNotMapped;
    values.push_back(std::move(v));
    dims.push_back(d);
  }
  TraceScope below(parent());
  if (!any_batched && !runs_over_this_axis(p, params)) return jx::bind(p, values, params);
  if (!p.rules().batch) fail(p.name(), "has no batching rule, so vmap cannot batch it");
  BatchResult r = p.rules().batch(values, dims, params, axis_);
  if (r.dims.size() != r.outs.size())
    fail(p.name(), "batching rule returned ", r.dims.size(), " batch dims for ", r.outs.size(), " outputs");
  std::vector<Array> out;
  out.reserve(r.outs.size());
  for (size_t i = 0; i < r.outs.size(); ++i) {
    int64_t d = r.dims[i];
    if (d != kNotMapped && (d < 0 || d >= r.outs[i].ndim() || r.outs[i].shape()[d] != axis_.size))
      fail(p.name(), "batching rule put the batch axis at ", d, " of ", r.outs[i].aval().str(),
           " but the batch size is ", axis_.size, " (a bug in the rule)");
    out.push_back(pack(std::move(r.outs[i]), d));
  }
  return out;
}


std::vector<Array> vmap_flat(const FlatFn& fn, std::span<const Array> args,
                             std::span<const std::optional<int64_t>> in_dims,
                             std::span<const std::optional<int64_t>> out_dims, BatchAxis axis) {
  if (in_dims.size() != args.size())
    fail("vmap", "in_axes has ", in_dims.size(), " entries for ", args.size(), " array arguments");
  // The batch size: from axis.size when given, else from the mapped arguments, which must agree.
  int64_t size = axis.size > 0 ? axis.size : -1;
  std::vector<int64_t> dims;
  for (const auto& d : in_dims) dims.push_back(d ? *d : kNotMapped);
  for (size_t i = 0; i < args.size(); ++i) {
    if (!in_dims[i]) continue;
    int64_t nd = args[i].ndim();
    if (dims[i] < -nd || dims[i] >= nd)
      fail("vmap", "in_axes ", dims[i], " is out of range for argument ", i, " of type ", args[i].aval().str());
    if (dims[i] < 0) dims[i] += nd;
    int64_t n = args[i].shape()[dims[i]];
    if (size < 0) size = n;
    else if (n != size)
      fail("vmap", "mapped axes have inconsistent sizes: argument ", i, " of type ", args[i].aval().str(),
           " has size ", n, " along axis ", dims[i], " but the batch size is ", size);
  }
  if (size < 0) fail("vmap", "needs at least one mapped argument (an in_axes entry that is not jx::not_mapped) or an axis_size");
  axis.size = size;
  BatchTrace trace(axis);
  std::vector<Array> outs;
  {
    AxisEnvScope named(axis.name, size);
    TraceScope scope(&trace);
    std::vector<Array> in;
    for (size_t i = 0; i < args.size(); ++i) in.push_back(trace.pack(args[i], dims[i]));
    outs = fn(in);
  }
  trace.kill();
  if (out_dims.size() != 1 && out_dims.size() != outs.size())
    fail("vmap", "out_axes has ", out_dims.size(), " entries for ", outs.size(), " outputs");
  std::vector<Array> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    std::optional<int64_t> want_axis = out_dims.size() == 1 ? out_dims[0] : out_dims[i];
    auto [v, d] = trace.unpack(outs[i]);
    if (!want_axis) {
      if (d != kNotMapped)
        fail("vmap", "out_axes is jx::not_mapped for output ", i, ", but that output depends on the batch");
      result.push_back(v);
      continue;
    }
    int64_t want = *want_axis;
    int64_t nd = v.ndim() + (d == kNotMapped ? 1 : 0);
    if (want < -nd || want >= nd) fail("vmap", "out_axes ", want, " is out of range for output ", i, " of rank ", nd);
    if (want < 0) want += nd;
    if (d == kNotMapped) {  // the same for every batch member: broadcast (a stride-0 view)
      Shape shape = v.shape();
      shape.insert(shape.begin() + want, size);
      std::vector<int64_t> bdims;
      for (int64_t k = 0; k < v.ndim(); ++k) bdims.push_back(k < want ? k : k + 1);
      result.push_back(lax::broadcast_in_dim(v, shape, bdims));
    } else {
      result.push_back(lax::batch_rules::move_axis(v, d, want));
    }
  }
  return result;
}

}  // namespace jx::detail
