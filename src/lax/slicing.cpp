// Slicing primitives: slice, dynamic_slice, dynamic_update_slice, pad, concatenate.
// Their CPU kernels (views for slice and dynamic_slice, fresh arrays for the others):
// src/backend/cpu/kernels/slicing.cpp.
#include <algorithm>

#include "jx/lax.h"
#include "lax/ad_rules.h"
#include "lax/batch_rules.h"
#include "lax/elemental.h"
#include "lax/primitives.h"
#include "lax/rules.h"

namespace jx::lax {
namespace {

using jx::detail::fail;
using jx::detail::shape_str;

constexpr uint32_t kLinearShapeOp = kShapeOnly | kLinear;

// A 0-d zero of `dtype` (a padding value for transposes).
Array scalar_zero(DType dtype) { return ad::zeros(Aval{{}, dtype, false}); }

// The unbatched operand shape under batch axis `dim` (kNotMapped: the shape itself).
Shape unbatched_shape(const Array& x, int64_t dim) {
  Shape s = x.shape();
  if (dim != kNotMapped) s.erase(s.begin() + dim);
  return s;
}

// Index operands (0-d, or (B,) when batched) as one (B, k) int64 matrix of start
// vectors, with `lead` (may be invalid) as an extra first column.
Array stack_start_indices(std::span<const Array> indices, std::span<const int64_t> dims, int64_t size,
                          const Array& lead) {
  std::vector<Array> columns;
  if (lead.valid()) columns.push_back(broadcast_in_dim(lead, {size, 1}, {0}));
  for (size_t i = 0; i < indices.size(); ++i) {
    Array idx = convert_element_type(indices[i], DType::Int64);
    columns.push_back(dims[i] == kNotMapped ? broadcast_in_dim(idx, {size, 1}, {})
                                            : broadcast_in_dim(idx, {size, 1}, {0}));
  }
  return concatenate(columns, 1);
}

void check_length(std::string_view op, std::string_view what, const std::vector<int64_t>& v, const Shape& shape) {
  if (v.size() != shape.size())
    fail(op, what, " ", shape_str(v), " must have one entry per operand dimension; operand shape ",
         shape_str(shape));
}

// ---- slice ----

std::vector<Aval> slice_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("slice", in, 1);
  const Aval& x = in[0];
  const auto& start = params.get_ints("start_indices");
  const auto& limit = params.get_ints("limit_indices");
  const auto& steps = params.get_ints("strides");
  check_length("slice", "start_indices", start, x.shape);
  check_length("slice", "limit_indices", limit, x.shape);
  check_length("slice", "strides", steps, x.shape);
  Shape shape;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (start[i] < 0)
      fail("slice", "start_indices ", shape_str(start), " must be non-negative; operand shape ", shape_str(x.shape));
    if (limit[i] > x.shape[i])
      fail("slice", "limit_indices ", shape_str(limit), " exceed operand shape ", shape_str(x.shape),
           " at dimension ", i);
    if (start[i] > limit[i])
      fail("slice", "start_indices ", shape_str(start), " must not exceed limit_indices ", shape_str(limit),
           " (dimension ", i, "); operand shape ", shape_str(x.shape));
    if (steps[i] <= 0)
      fail("slice", "strides ", shape_str(steps), " must be positive; operand shape ", shape_str(x.shape));
    const int64_t span = limit[i] - start[i];
    shape.push_back(span == 0 ? 0 : 1 + (span - 1) / steps[i]);  // ceil(span / step), overflow-free
  }
  return {Aval{shape, x.dtype, x.weak_type}};
}

// Transpose: the cotangent goes back where the window was read, zeros elsewhere;
// strides become interior padding.
Array slice_transpose(const Array& ct, const Aval& x, const Params& params) {
  const auto& start = params.get_ints("start_indices");
  const auto& steps = params.get_ints("strides");
  std::vector<PadDim> config;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    const int64_t n = ct.shape()[i];
    if (n == 0) {
      config.push_back({x.shape[i], 0, 0});
      continue;
    }
    const int64_t last = start[i] + (n - 1) * steps[i];  // the last element read
    config.push_back({start[i], x.shape[i] - last - 1, steps[i] - 1});
  }
  return pad(ct, scalar_zero(ct.dtype()), config);
}

// Batching: the batch axis stays put and is taken whole.
BatchResult slice_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                        const BatchAxis& axis) {
  const auto b = static_cast<long>(dims[0]);
  std::vector<int64_t> start = params.get_ints("start_indices");
  std::vector<int64_t> limit = params.get_ints("limit_indices");
  std::vector<int64_t> steps = params.get_ints("strides");
  start.insert(start.begin() + b, 0);
  limit.insert(limit.begin() + b, axis.size);
  steps.insert(steps.begin() + b, 1);
  return {{slice(args[0], start, limit, steps)}, {dims[0]}};
}

}  // namespace

// Matched by identity (lax/primitives.h: simplify's slice of a broadcast).
const Primitive slice_p("slice", {.traits = kLinearShapeOp,
                                  .abstract_eval = slice_rule,
                                  .jvp = ad_rules::linear(slice_p),
                                  .transpose = ad_rules::unary_transpose(slice_transpose),
                                  .batch = slice_batch,
                                  .lowering = {.index_map = [](std::span<const Aval> in, const Aval& out, const Params& params) {
                                     const auto& start = params.get_ints("start_indices");
                                     const auto& steps = params.get_ints("strides");
                                     lowering::IndexMapResult r{elemental::zero_map(in[0].shape.size(), out.shape.size())};
                                     for (size_t k = 0; k < start.size(); ++k) {
                                       r.map.coef[k][k] = steps[k];
                                       r.map.offset[k] = start[k];
                                     }
                                     return r;
                                   }}});

namespace {

// ---- dynamic_slice / dynamic_update_slice ----

// Start indices are operands (so they can be traced): one 0-d integer array per dim.
void check_start_indices(std::string_view op, std::span<const Aval> indices, const Aval& x) {
  if (indices.size() != x.shape.size())
    fail(op, "got ", indices.size(), " start indices for operand shape ", shape_str(x.shape), "; expected ",
         x.shape.size());
  for (size_t i = 0; i < indices.size(); ++i)
    if (indices[i].ndim() != 0 || !is_integer(indices[i].dtype))
      fail(op, "start index ", i, " must be a scalar integer, got ", indices[i].str());
}

std::vector<Aval> dynamic_slice_rule(std::span<const Aval> in, const Params& params) {
  if (in.empty()) fail("dynamic_slice", "expected an operand and start indices, got no operands");
  const Aval& x = in[0];
  check_start_indices("dynamic_slice", in.subspan(1), x);
  const Shape& sizes = params.get_ints("slice_sizes");
  check_length("dynamic_slice", "slice_sizes", sizes, x.shape);
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] < 0 || sizes[i] > x.shape[i])
      fail("dynamic_slice", "slice_sizes ", shape_str(sizes), " must be within [0, operand shape ",
           shape_str(x.shape), "] (dimension ", i, ")");
  return {Aval{sizes, x.dtype, x.weak_type}};
}

std::vector<Array> index_values(std::span<const TransposeOperand> operands, size_t first) {
  std::vector<Array> out;
  for (size_t i = first; i < operands.size(); ++i) out.push_back(operands[i].value);
  return out;
}

// Transpose (linear in the operand only): the cotangent written into zeros at the
// same (clamped) window.
std::vector<Array> dynamic_slice_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                           const Params&) {
  std::vector<Array> out(operands.size());
  if (cts[0].valid() && operands[0].is_linear())
    out[0] = dynamic_update_slice(ad::zeros(Aval{operands[0].aval.shape, cts[0].dtype(), false}), cts[0],
                                  index_values(operands, 1));
  return out;
}

// Batching. Unbatched starts: one dynamic_slice taking the whole batch axis. Batched
// starts: each batch member reads its own window, which is a gather whose index
// vectors are the start indices (plus the batch position, when the operand is batched).
BatchResult dynamic_slice_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                                const BatchAxis& axis) {
  const Shape& sizes = params.get_ints("slice_sizes");
  const auto indices = args.subspan(1);
  const auto index_dims = dims.subspan(1);
  const bool indices_batched =
      std::any_of(index_dims.begin(), index_dims.end(), [](int64_t d) { return d != kNotMapped; });
  if (!indices_batched) {
    const auto b = static_cast<long>(dims[0]);
    std::vector<Array> starts(indices.begin(), indices.end());
    DType index_dtype = starts.empty() ? DType::Int32 : starts[0].dtype();
    starts.insert(starts.begin() + b, convert_element_type(Array(0), index_dtype));
    Shape batched_sizes = sizes;
    batched_sizes.insert(batched_sizes.begin() + b, axis.size);
    return {{dynamic_slice(args[0], starts, batched_sizes)}, {dims[0]}};
  }
  const auto rank = static_cast<int64_t>(sizes.size());
  GatherDimensionNumbers dn;
  for (int64_t i = 0; i < rank; ++i) dn.offset_dims.push_back(i + 1);
  Shape slice_sizes = sizes;
  Array starts;
  Array operand = args[0];
  if (dims[0] == kNotMapped) {
    starts = stack_start_indices(indices, index_dims, axis.size, Array());
    for (int64_t i = 0; i < rank; ++i) dn.start_index_map.push_back(i);
  } else {
    operand = batch_rules::move_axis(operand, dims[0], 0);
    starts = stack_start_indices(indices, index_dims, axis.size, iota(DType::Int64, axis.size));
    for (int64_t i = 0; i <= rank; ++i) dn.start_index_map.push_back(i);
    dn.collapsed_slice_dims = {0};
    slice_sizes.insert(slice_sizes.begin(), 1);
  }
  // Clip mode clamps each start to [0, dim - size], exactly dynamic_slice's semantics.
  return {{gather(operand, starts, dn, slice_sizes, GatherScatterMode::Clip)}, {0}};
}

extern const Primitive dynamic_slice_p;
const Primitive dynamic_slice_p("dynamic_slice", {.traits = kLinearShapeOp,
                                                  .abstract_eval = dynamic_slice_rule,
                                                  .jvp = ad_rules::linear_in_first(dynamic_slice_p),
                                                  .transpose = dynamic_slice_transpose,
                                                  .batch = dynamic_slice_batch});

std::vector<Aval> dynamic_update_slice_rule(std::span<const Aval> in, const Params&) {
  if (in.size() < 2) fail("dynamic_update_slice", "expected an operand, an update and start indices, got ",
                          in.size(), " operands");
  const Aval& x = in[0];
  const Aval& update = in[1];
  if (update.dtype != x.dtype)
    fail("dynamic_update_slice", "update must have the operand's dtype, got operand ", x.str(), " and update ",
         update.str());
  if (update.ndim() != x.ndim())
    fail("dynamic_update_slice", "update must have the operand's rank, got operand ", x.str(), " and update ",
         update.str());
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (update.shape[i] > x.shape[i])
      fail("dynamic_update_slice", "update shape ", shape_str(update.shape), " does not fit in operand shape ",
           shape_str(x.shape), " (dimension ", i, ")");
  check_start_indices("dynamic_update_slice", in.subspan(2), x);
  return {Aval{x.shape, x.dtype, x.weak_type && update.weak_type}};
}

extern const Primitive dynamic_update_slice_p;

// Linear in (operand, update) jointly; the start indices pass through unchanged.
JvpResult dynamic_update_slice_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                   const Params& params) {
  std::vector<Array> out = jx::bind(dynamic_update_slice_p, primals, params);
  if (!tangents[0].valid() && !tangents[1].valid()) return {out, {Array()}};
  std::vector<Array> args(primals.begin(), primals.end());
  args[0] = ad::instantiate(tangents[0], Aval{primals[0].shape(), primals[0].dtype(), false});
  args[1] = ad::instantiate(tangents[1], Aval{primals[1].shape(), primals[1].dtype(), false});
  return {out, jx::bind(dynamic_update_slice_p, args, params)};
}

// Transpose: the operand's cotangent is ct with the (clamped) window zeroed; the
// update's is that window of ct.
std::vector<Array> dynamic_update_slice_transpose(std::span<const Array> cts,
                                                  std::span<const TransposeOperand> operands, const Params&) {
  std::vector<Array> out(operands.size());
  const Array& ct = cts[0];
  if (!ct.valid()) return out;
  std::vector<Array> starts = index_values(operands, 2);
  const Aval& update = operands[1].aval;
  if (operands[0].is_linear())
    out[0] = dynamic_update_slice(ct, ad::zeros(Aval{update.shape, ct.dtype(), false}), starts);
  if (operands[1].is_linear()) out[1] = dynamic_slice(ct, starts, update.shape);
  return out;
}

// Batching. Unbatched starts: one dynamic_update_slice over the whole batch axis (both
// operand and update get it in front). Batched starts: a scatter writing each batch
// member's update at its own (clamped) start.
BatchResult dynamic_update_slice_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params&,
                                       const BatchAxis& axis) {
  Array operand = batch_rules::batch_to_front(args[0], dims[0], axis.size);
  Array update = batch_rules::batch_to_front(args[1], dims[1], axis.size);
  const auto indices = args.subspan(2);
  const auto index_dims = dims.subspan(2);
  const bool indices_batched =
      std::any_of(index_dims.begin(), index_dims.end(), [](int64_t d) { return d != kNotMapped; });
  if (!indices_batched) {
    std::vector<Array> starts(indices.begin(), indices.end());
    DType index_dtype = starts.empty() ? DType::Int32 : starts[0].dtype();
    starts.insert(starts.begin(), convert_element_type(Array(0), index_dtype));
    return {{dynamic_update_slice(operand, update, starts)}, {0}};
  }
  const auto rank = static_cast<int64_t>(indices.size());
  ScatterDimensionNumbers dn;
  for (int64_t i = 0; i < rank; ++i) dn.update_window_dims.push_back(i + 1);
  dn.inserted_window_dims = {0};
  for (int64_t i = 0; i <= rank; ++i) dn.scatter_dims_to_operand_dims.push_back(i);
  Array starts = stack_start_indices(indices, index_dims, axis.size, iota(DType::Int64, axis.size));
  return {{scatter(operand, starts, update, dn, GatherScatterMode::Clip)}, {0}};
}

const Primitive dynamic_update_slice_p("dynamic_update_slice", {.traits = kLinearShapeOp,
                                                                .abstract_eval = dynamic_update_slice_rule,
                                                                .jvp = dynamic_update_slice_jvp,
                                                                .transpose = dynamic_update_slice_transpose,
                                                                .batch = dynamic_update_slice_batch});

// ---- pad ----

// padding_config is flattened: (lo, hi, interior) for dim 0, then dim 1, ...
std::vector<Aval> pad_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("pad", in, 2);
  const Aval& x = in[0];
  const Aval& value = in[1];
  if (value.ndim() != 0 || value.dtype != x.dtype)
    fail("pad", "padding_value must be a scalar of the operand's dtype, got ", value.str(), " for operand ",
         x.str());
  const auto& config = params.get_ints("padding_config");
  if (config.size() != 3 * x.shape.size())
    fail("pad", "padding_config has ", config.size() / 3, " entries for operand shape ", shape_str(x.shape),
         "; expected one (lo, hi, interior) per dimension");
  Shape shape;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    int64_t lo = config[3 * i], hi = config[3 * i + 1], interior = config[3 * i + 2];
    if (interior < 0)
      fail("pad", "interior padding must be non-negative, got ", interior, " for dimension ", i);
    const int64_t n = x.shape[i];
    // Checked: every position the padding addresses, cropped or not (|lo|, |hi|, the
    // dilated operand and one step), is an int64, so neither this sum nor the kernel's and
    // the transpose's index arithmetic can wrap.
    auto add = [&](int64_t a, int64_t b) {
      return jx::detail::checked_add(a, b, "pad", " in padding (lo=", lo, ", hi=", hi, ", interior=", interior,
                                     ") of dimension ", i, " for operand shape ", shape_str(x.shape));
    };
    auto magnitude = [&](int64_t v) { return v < 0 ? add(-(v + 1), 1) : v; };
    const int64_t dilated = add(n, jx::detail::checked_mul(std::max<int64_t>(n - 1, 0), interior, "pad",
                                                           " in interior padding ", interior, " of dimension ", i,
                                                           " for operand shape ", shape_str(x.shape)));
    add(add(add(magnitude(lo), magnitude(hi)), dilated), add(interior, 1));
    const int64_t size = dilated + lo + hi;
    if (size < 0)
      fail("pad", "padding (lo=", lo, ", hi=", hi, ", interior=", interior, ") makes dimension ", i,
           " of operand shape ", shape_str(x.shape), " negative (", size, ")");
    shape.push_back(size);
  }
  return {Aval{shape, x.dtype, x.weak_type && value.weak_type}};
}

extern const Primitive pad_p;

// Transpose. The operand's cotangent is the strided window of ct where operand
// elements landed; negative lo/hi cropped some of them away, so ct is first padded
// back with zeros. The padding value's cotangent is everything else: sum(ct) minus
// what went to the operand.
std::vector<Array> pad_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                 const Params& params) {
  std::vector<Array> out(2);
  const Array& ct = cts[0];
  if (!ct.valid()) return out;
  const auto& config = params.get_ints("padding_config");
  const Shape& x = operands[0].aval.shape;
  std::vector<PadDim> uncrop;
  std::vector<int64_t> start, limit, steps;
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t lo = config[3 * i], hi = config[3 * i + 1], step = config[3 * i + 2] + 1;
    uncrop.push_back({std::max<int64_t>(-lo, 0), std::max<int64_t>(-hi, 0), 0});
    const int64_t first = std::max<int64_t>(lo, 0);
    start.push_back(x[i] == 0 ? 0 : first);
    limit.push_back(x[i] == 0 ? 0 : first + (x[i] - 1) * step + 1);
    steps.push_back(step);
  }
  Array full = pad(ct, scalar_zero(ct.dtype()), uncrop);
  Array x_ct = slice(full, start, limit, steps);
  if (operands[0].is_linear()) out[0] = x_ct;
  if (operands[1].is_linear()) {
    std::vector<int64_t> all(x.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
    out[1] = sub(reduce_sum(ct, all), reduce_sum(x_ct, all));
  }
  return out;
}

// Batching. With an unbatched padding value the batch axis just gets no padding. A
// batched padding value: pad with zeros, then choose each member's value outside the
// operand's footprint (a mask made by padding `true` with `false`).
BatchResult pad_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                      const BatchAxis& axis) {
  std::vector<int64_t> config = params.get_ints("padding_config");
  if (dims[1] == kNotMapped) {
    const auto b = static_cast<long>(dims[0]);
    config.insert(config.begin() + 3 * b, {0, 0, 0});
    return {{bind1(pad_p, {args[0], args[1]}, {{"padding_config", config}})}, {dims[0]}};
  }
  Array x = batch_rules::batch_to_front(args[0], dims[0], axis.size);
  Shape shape = unbatched_shape(args[0], dims[0]);
  Array inside = broadcast_in_dim(Array(true), shape, {});
  Array mask = bind1(pad_p, {inside, Array(false)}, params);
  std::vector<int64_t> batched_config{0, 0, 0};
  batched_config.insert(batched_config.end(), config.begin(), config.end());
  Array padded = bind1(pad_p, {x, scalar_zero(x.dtype())}, {{"padding_config", batched_config}});
  Shape out_shape = padded.shape();
  std::vector<int64_t> rest;
  for (int64_t i = 1; i < padded.ndim(); ++i) rest.push_back(i);
  Array value = broadcast_in_dim(args[1], out_shape, {0});  // a scalar per member: (B,)
  return {{select_n(broadcast_in_dim(mask, out_shape, rest), {value, padded})}, {0}};
}

const Primitive pad_p("pad", {.traits = kLinearShapeOp,
                              .abstract_eval = pad_rule,
                              .jvp = ad_rules::linear(pad_p),
                              .transpose = pad_transpose,
                              .batch = pad_batch});

// ---- concatenate ----

std::vector<Aval> concatenate_rule(std::span<const Aval> in, const Params& params) {
  if (in.empty()) fail("concatenate", "needs at least one operand");
  const Aval& first = in[0];
  if (first.ndim() == 0) fail("concatenate", "cannot concatenate 0-d arrays, got ", rules::avals_str(in));
  const int64_t dim = rules::canonical_axis("concatenate", params.get_int("dimension"), first.ndim(), first.shape);
  Shape shape = first.shape;
  shape[static_cast<size_t>(dim)] = 0;
  // The operands' text is built only on failure: building it per operand made a
  // concatenate of n pieces cost O(n^2).
  const auto d = static_cast<size_t>(dim);
  for (const Aval& a : in) {
    if (a.dtype != first.dtype) fail("concatenate", "operands must have the same dtype, got ", rules::avals_str(in));
    bool same = a.ndim() == first.ndim();
    for (size_t i = 0; same && i < a.shape.size(); ++i) same = i == d || a.shape[i] == first.shape[i];
    if (!same)
      fail("concatenate", "operands must have equal shapes except along dimension ", dim, ", got ",
           rules::avals_str(in));
    int64_t total = 0;
    if (__builtin_add_overflow(shape[d], a.shape[d], &total))
      fail("concatenate", "size overflow: ", shape[d], " + ", a.shape[d], " exceeds 2^63 - 1 in the size of dimension ",
           dim, " of the result; operands ", rules::avals_str(in));
    shape[d] = total;
  }
  return {Aval{shape, first.dtype, rules::all_weak(in)}};
}


// Transpose: each linear operand's cotangent is its slab of ct.
std::vector<Array> concatenate_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                         const Params& params) {
  std::vector<Array> out(operands.size());
  const Array& ct = cts[0];
  if (!ct.valid()) return out;
  const auto dim = static_cast<size_t>(rules::canonical_axis("concatenate", params.get_int("dimension"), ct.ndim(),
                                                             ct.shape()));
  std::vector<int64_t> start(ct.ndim(), 0);
  std::vector<int64_t> limit = ct.shape();
  int64_t at = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const int64_t n = operands[i].aval.shape[dim];
    if (operands[i].is_linear()) {
      start[dim] = at;
      limit[dim] = at + n;
      out[i] = slice(ct, start, limit);
    }
    at += n;
  }
  return out;
}

// Batching: every operand gets the batch axis in front (unmapped ones broadcast, a
// view); the joined dimension shifts by one.
BatchResult concatenate_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                              const BatchAxis& axis) {
  std::vector<Array> in;
  for (size_t i = 0; i < args.size(); ++i) in.push_back(batch_rules::batch_to_front(args[i], dims[i], axis.size));
  const Shape inner = unbatched_shape(args[0], dims[0]);
  const int64_t dim = rules::canonical_axis("concatenate", params.get_int("dimension"),
                                            static_cast<int64_t>(inner.size()), inner);
  return {jx::bind(concatenate_p, in, {{"dimension", dim + 1}}), {0}};
}

}  // namespace

const Primitive concatenate_p("concatenate", {.traits = kLinearShapeOp,
                                              .abstract_eval = concatenate_rule,
                                              .jvp = ad_rules::linear(concatenate_p),
                                              .transpose = concatenate_transpose,
                                              .batch = concatenate_batch});

namespace {

std::vector<Array> with_operand(const Array& x, const std::vector<Array>& rest) {
  std::vector<Array> out{x};
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace

Array slice(const Array& x, const std::vector<int64_t>& start_indices, const std::vector<int64_t>& limit_indices,
            const std::vector<int64_t>& strides) {
  std::vector<int64_t> steps = strides.empty() ? std::vector<int64_t>(start_indices.size(), 1) : strides;
  return bind1(slice_p, {x},
               {{"start_indices", start_indices}, {"limit_indices", limit_indices}, {"strides", steps}});
}

Array dynamic_slice(const Array& x, const std::vector<Array>& start_indices, const Shape& slice_sizes) {
  return jx::bind(dynamic_slice_p, with_operand(x, start_indices), {{"slice_sizes", slice_sizes}})[0];
}

Array dynamic_update_slice(const Array& x, const Array& update, const std::vector<Array>& start_indices) {
  std::vector<Array> operands{x, update};
  operands.insert(operands.end(), start_indices.begin(), start_indices.end());
  return jx::bind(dynamic_update_slice_p, operands)[0];
}

Array pad(const Array& x, const Array& padding_value, const std::vector<PadDim>& config) {
  std::vector<int64_t> flat;
  for (const PadDim& p : config) flat.insert(flat.end(), {p.lo, p.hi, p.interior});
  return bind1(pad_p, {x, padding_value}, {{"padding_config", flat}});
}

Array concatenate(const std::vector<Array>& xs, int64_t dimension) {
  if (!xs.empty() && xs[0].ndim() > 0 && dimension < 0 && dimension >= -xs[0].ndim()) dimension += xs[0].ndim();
  return jx::bind(concatenate_p, xs, {{"dimension", dimension}})[0];
}

}  // namespace jx::lax
