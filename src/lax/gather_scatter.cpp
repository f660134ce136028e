// XLA's gather and scatter (scatter, scatter_add, scatter_mul, scatter_min, scatter_max)
// with JAX's dimension numbers; the index vector is always the last axis of `indices`.
// Their CPU kernels: src/backend/cpu/kernels/gather_scatter.cpp.
#include <algorithm>
#include <numeric>
#include <optional>

#include "jx/lax.h"
#include "lax/batch_rules.h"
#include "lax/gather_scatter_params.h"
#include "lax/primitives.h"
#include "lax/rules.h"
#include "transforms/ad_util.h"

namespace jx::lax {
namespace {

using jx::detail::fail;
using jx::detail::shape_str;
using gather_scatter::complement;
using gather_scatter::GatherSpec;
using gather_scatter::mode_name;
using gather_scatter::ScatterSpec;

// ---- dimension-number checks ----

void check_dims(std::string_view op, std::string_view what, const std::vector<int64_t>& dims, int64_t bound,
                bool sorted, const std::string& ctx) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= bound)
      fail(op, what, " ", shape_str(dims), " has entry ", dims[i], " out of range [0, ", bound, ")", ctx);
    for (size_t j = 0; j < i; ++j)
      if (dims[j] == dims[i]) fail(op, what, " ", shape_str(dims), " repeats dimension ", dims[i], ctx);
    if (sorted && i > 0 && dims[i] < dims[i - 1]) fail(op, what, " ", shape_str(dims), " must be sorted", ctx);
  }
}

void check_indices(std::string_view op, const Aval& indices, const std::string& ctx) {
  if (!is_integer(indices.dtype)) fail(op, "indices must have an integer dtype", ctx);
  if (indices.ndim() < 1)
    fail(op, "indices must have at least one axis (the last axis holds the index vectors)", ctx);
}

// ---- gather ----

std::vector<Aval> gather_rule(std::span<const Aval> in, const Params& params) {
  if (in.size() != 2 && in.size() != 3)
    fail("gather", "expected operand, indices and an optional fill_value, got ", in.size(), " operands");
  const Aval& x = in[0];
  const Aval& indices = in[1];
  const std::string ctx = jx::detail::cat("; operand ", x.str(), ", indices ", indices.str());
  check_indices("gather", indices, ctx);
  GatherSpec g(params);
  const int64_t rank = x.ndim();
  const int64_t batch_rank = indices.ndim() - 1;
  const auto out_rank = static_cast<int64_t>(batch_rank + g.offset_dims.size());
  check_dims("gather", "offset_dims", g.offset_dims, out_rank, true, ctx);
  check_dims("gather", "collapsed_slice_dims", g.collapsed_slice_dims, rank, true, ctx);
  check_dims("gather", "start_index_map", g.start_index_map, rank, false, ctx);
  if (static_cast<int64_t>(g.start_index_map.size()) != indices.shape.back())
    fail("gather", "start_index_map ", shape_str(g.start_index_map), " must have one entry per index-vector ",
         "component (the last axis of indices, of size ", indices.shape.back(), ")", ctx);
  if (static_cast<int64_t>(g.slice_sizes.size()) != rank)
    fail("gather", "slice_sizes ", shape_str(g.slice_sizes), " must have one entry per operand dimension", ctx);
  // As JAX, an oversized window is allowed when there is nothing to gather (x[empty]
  // on an empty axis); the batch size, not the index count, decides: indices of shape
  // (3, 0) still gather three windows.
  const bool no_windows = shape_size(Shape(indices.shape.begin(), indices.shape.end() - 1)) == 0;
  for (size_t i = 0; i < g.slice_sizes.size(); ++i)
    if (g.slice_sizes[i] < 0 || (!no_windows && g.slice_sizes[i] > x.shape[i]))
      fail("gather", "slice_sizes ", shape_str(g.slice_sizes), " must be within [0, operand dimension] at ",
           "dimension ", i, ctx);
  for (int64_t d : g.collapsed_slice_dims)
    if (g.slice_sizes[static_cast<size_t>(d)] != 1)
      fail("gather", "collapsed_slice_dims ", shape_str(g.collapsed_slice_dims), " can only collapse dimensions ",
           "with slice size 1, but slice_sizes ", shape_str(g.slice_sizes), " has ",
           g.slice_sizes[static_cast<size_t>(d)], " at dimension ", d, ctx);
  if (static_cast<int64_t>(g.offset_dims.size() + g.collapsed_slice_dims.size()) != rank)
    fail("gather", "every operand dimension must be either an offset dimension or collapsed; offset_dims ",
         shape_str(g.offset_dims), " and collapsed_slice_dims ", shape_str(g.collapsed_slice_dims),
         " do not add up to the operand's rank ", rank, ctx);
  if (in.size() == 3 && in[2].ndim() != 0) fail("gather", "fill_value must be a scalar, got ", in[2].str(), ctx);
  // Offset dims take the sizes of the uncollapsed slice dims in order; batch dims take
  // the leading axes of indices in order.
  auto window_dims = complement(rank, g.collapsed_slice_dims);
  Shape shape(static_cast<size_t>(out_rank));
  size_t next_offset = 0, next_batch = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (next_offset < g.offset_dims.size() && g.offset_dims[next_offset] == i)
      shape[static_cast<size_t>(i)] = g.slice_sizes[static_cast<size_t>(window_dims[next_offset++])];
    else shape[static_cast<size_t>(i)] = indices.shape[next_batch++];
  }
  return {Aval{shape, x.dtype, x.weak_type}};
}

// Transformation rules, defined with the scatter rules below (they share helpers).
JvpResult gather_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params);
std::vector<Array> gather_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                    const Params& params);
BatchResult gather_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                         const BatchAxis& axis);

}  // namespace

// Linear in the operand (and in fill_value, which fills out-of-bounds windows).
const Primitive gather_p("gather", {.traits = kShapeOnly | kLinear,
                                    .abstract_eval = gather_rule,
                                    .jvp = gather_jvp,
                                    .transpose = gather_transpose,
                                    .batch = gather_batch});

namespace {

// ---- scatter ----

std::vector<Aval> scatter_rule(std::string_view op, std::span<const Aval> in, const Params& params) {
  rules::check_arity(op, in, 3);
  const Aval& x = in[0];
  const Aval& indices = in[1];
  const Aval& updates = in[2];
  const std::string ctx =
      jx::detail::cat("; operand ", x.str(), ", indices ", indices.str(), ", updates ", updates.str());
  check_indices(op, indices, ctx);
  if (updates.dtype != x.dtype) fail(op, "updates must have the operand's dtype", ctx);
  ScatterSpec s(op, params);
  const int64_t rank = x.ndim();
  const int64_t batch_rank = indices.ndim() - 1;
  check_dims(op, "update_window_dims", s.update_window_dims, updates.ndim(), true, ctx);
  check_dims(op, "inserted_window_dims", s.inserted_window_dims, rank, true, ctx);
  check_dims(op, "scatter_dims_to_operand_dims", s.scatter_dims_to_operand_dims, rank, false, ctx);
  if (updates.ndim() != static_cast<int64_t>(batch_rank + s.update_window_dims.size()))
    fail(op, "updates must have rank ", batch_rank + static_cast<int64_t>(s.update_window_dims.size()),
         " (the batch axes of indices plus update_window_dims ", shape_str(s.update_window_dims), ")", ctx);
  if (static_cast<int64_t>(s.update_window_dims.size() + s.inserted_window_dims.size()) != rank)
    fail(op, "update_window_dims ", shape_str(s.update_window_dims), " and inserted_window_dims ",
         shape_str(s.inserted_window_dims), " must together cover the operand's rank ", rank, ctx);
  if (static_cast<int64_t>(s.scatter_dims_to_operand_dims.size()) != indices.shape.back())
    fail(op, "scatter_dims_to_operand_dims ", shape_str(s.scatter_dims_to_operand_dims),
         " must have one entry per index-vector component (the last axis of indices, of size ",
         indices.shape.back(), ")", ctx);
  auto window_dims = complement(rank, s.inserted_window_dims);
  for (size_t j = 0; j < window_dims.size(); ++j) {
    int64_t size = updates.shape[static_cast<size_t>(s.update_window_dims[j])];
    if (size > x.shape[static_cast<size_t>(window_dims[j])])
      fail(op, "update window dimension ", s.update_window_dims[j], " of size ", size,
           " exceeds operand dimension ", window_dims[j], ctx);
  }
  size_t next_batch = 0;
  for (int64_t i = 0; i < updates.ndim(); ++i) {
    if (std::binary_search(s.update_window_dims.begin(), s.update_window_dims.end(), i)) continue;
    if (updates.shape[static_cast<size_t>(i)] != indices.shape[next_batch])
      fail(op, "the scatter axes of updates must match the batch axes of indices ",
           shape_str(Shape(indices.shape.begin(), indices.shape.end() - 1)), ctx);
    ++next_batch;
  }
  return {Aval{x.shape, x.dtype, x.weak_type}};
}

extern const Primitive scatter_p;
extern const Primitive scatter_mul_p;
extern const Primitive scatter_min_p;
extern const Primitive scatter_max_p;

// ---- transformation rules (jvp, transpose, vmap) ----
//
// Everything here is written with lax calls, so the rules compose with each other
// (grad of grad, vmap of grad). Gather and scatter are each other's transposes: the
// gather taking window j at index i and the scatter putting window j at index i share
// their index vectors, with offset_dims <-> update_window_dims,
// collapsed_slice_dims <-> inserted_window_dims and start_index_map <->
// scatter_dims_to_operand_dims. Modes are paired so that both sides see the same windows:
// a clamped (Clip / PromiseInBounds) gather pairs with a Clip scatter, which clamps the
// same starts; a FillOrDrop gather pairs with a FillOrDrop scatter, which drops exactly
// the windows the gather filled. A scatter drops out-of-bounds windows unless it clamps,
// so its partner gather fills those windows with zero.

Params gather_params(const GatherDimensionNumbers& d, const Shape& slice_sizes, GatherScatterMode mode) {
  return {{"offset_dims", d.offset_dims},
          {"collapsed_slice_dims", d.collapsed_slice_dims},
          {"start_index_map", d.start_index_map},
          {"slice_sizes", slice_sizes},
          {"mode", std::string(mode_name(mode))}};
}

Params scatter_params(const ScatterDimensionNumbers& d, GatherScatterMode mode) {
  return {{"update_window_dims", d.update_window_dims},
          {"inserted_window_dims", d.inserted_window_dims},
          {"scatter_dims_to_operand_dims", d.scatter_dims_to_operand_dims},
          {"mode", std::string(mode_name(mode))}};
}

Array scalar_of(DType dtype, double value) {
  return convert_element_type(Array(value), dtype);
}
// `value` at every element of x's shape and dtype (lax ops do not broadcast).
using ad::full_like;

// The scatter that puts back what a gather took.
ScatterDimensionNumbers scatter_dnums_for(const GatherSpec& g) {
  return {g.offset_dims, g.collapsed_slice_dims, g.start_index_map};
}
GatherScatterMode scatter_mode_for(GatherScatterMode gather_mode) {
  return gather_mode == GatherScatterMode::FillOrDrop ? GatherScatterMode::FillOrDrop : GatherScatterMode::Clip;
}

// The gather that reads, for every update, the window its scatter writes.
struct GatherOfScatter {
  GatherDimensionNumbers dnums;
  Shape slice_sizes;
  GatherScatterMode mode;
};
GatherOfScatter gather_for(const ScatterSpec& s, const Aval& operand, const Aval& updates) {
  GatherOfScatter g{{s.update_window_dims, s.inserted_window_dims, s.scatter_dims_to_operand_dims},
                    Shape(static_cast<size_t>(operand.ndim()), 1),
                    s.mode == GatherScatterMode::Clip ? GatherScatterMode::Clip : GatherScatterMode::FillOrDrop};
  auto window_dims = complement(operand.ndim(), s.inserted_window_dims);
  for (size_t j = 0; j < window_dims.size(); ++j)
    g.slice_sizes[static_cast<size_t>(window_dims[j])] = updates.shape[static_cast<size_t>(s.update_window_dims[j])];
  return g;
}
// x's windows as the scatter sees them; windows the scatter drops read as zero.
Array gather_windows(const Array& x, const Array& indices, const GatherOfScatter& g) {
  Array fill = g.mode == GatherScatterMode::FillOrDrop ? scalar_of(x.dtype(), 0.0) : Array();
  return gather(x, indices, g.dnums, g.slice_sizes, g.mode, fill);
}

// ---- gather ----

JvpResult gather_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  Array out = jx::bind(gather_p, primals, params)[0];
  const GatherSpec g(params);
  // Out-of-bounds windows of a FillOrDrop gather hold fill_value, so their tangent is
  // fill_value's tangent (zero without one: never the default NaN fill).
  std::vector<Array> args{ad::instantiate(tangents[0], primals[0].aval()), primals[1]};
  if (primals.size() == 3) {
    args.push_back(ad::instantiate(tangents[2], primals[2].aval()));
  } else if (g.mode == GatherScatterMode::FillOrDrop) {
    args.push_back(scalar_of(out.dtype(), 0.0));
  }
  return {{out}, jx::bind(gather_p, args, params)};
}

std::vector<Array> gather_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                    const Params& params) {
  std::vector<Array> out(operands.size());
  const Array& ct = cts[0];
  if (!ct.valid()) return out;
  if (operands[1].is_linear()) fail("gather", "cannot transpose with respect to the indices");
  const GatherSpec g(params);
  const Array& indices = operands[1].value;
  const Aval& x = operands[0].aval;
  if (operands[0].is_linear()) {
    out[0] = scatter_add(ad::zeros(Aval{x.shape, ct.dtype(), false}), indices, ct, scatter_dnums_for(g),
                         scatter_mode_for(g.mode));
  }
  if (operands.size() == 3 && operands[2].is_linear() && g.mode == GatherScatterMode::FillOrDrop) {
    // fill_value reaches every out-of-bounds window: a gather of zeros filled with one
    // marks them.
    std::vector<Array> marker_args{ad::zeros(Aval{x.shape, ct.dtype(), false}), indices, scalar_of(ct.dtype(), 1.0)};
    Array marker = jx::bind(gather_p, marker_args, params)[0];
    std::vector<int64_t> all(static_cast<size_t>(ct.ndim()));
    std::iota(all.begin(), all.end(), 0);
    Array sum = reduce_sum(mul(ct, marker), all);
    out[2] = sum.dtype() == operands[2].aval.dtype ? sum : convert_element_type(sum, operands[2].aval.dtype);
  }
  return out;
}

// Indices (batch axis first) with the batch position prepended to every index vector:
// [b, i...] picks batch member b's window, as JAX's batching rule does. Narrow index
// types are widened so the position always fits.
Array with_batch_position(const Array& indices) {
  Array idx = itemsize(indices.dtype()) < 4 ? convert_element_type(indices, DType::Int32) : indices;
  Shape s = idx.shape();
  s.back() = 1;
  Array position = broadcasted_iota(idx.dtype(), s, 0);
  return concatenate({position, idx}, idx.ndim() - 1);
}

std::vector<int64_t> shifted(const std::vector<int64_t>& dims, std::optional<int64_t> front = std::nullopt) {
  std::vector<int64_t> out;
  if (front) out.push_back(*front);
  for (int64_t d : dims) out.push_back(d + 1);
  return out;
}

// gather(operand, indices) with either batched (batch axes at odim / idim or kNotMapped);
// the result's batch axis is 0 unless neither is batched. fill_value (unbatched) rides along.
std::pair<Array, int64_t> batched_gather(const Array& operand, int64_t odim, const Array& indices, int64_t idim,
                                         const Array& fill, const Params& params, int64_t size) {
  std::vector<Array> in{operand, indices};
  if (fill.valid()) in.push_back(fill);
  if (odim == kNotMapped && idim == kNotMapped) return {jx::bind(gather_p, in, params)[0], kNotMapped};
  const GatherSpec g(params);
  GatherDimensionNumbers d;
  Shape slice_sizes;
  if (idim == kNotMapped) {
    // The batch axis is one more window dimension, taken whole, landing first.
    in[0] = batch_rules::move_axis(operand, odim, 0);
    d = {shifted(g.offset_dims, 0), shifted(g.collapsed_slice_dims), shifted(g.start_index_map)};
    slice_sizes = g.slice_sizes;
    slice_sizes.insert(slice_sizes.begin(), size);
  } else if (odim == kNotMapped) {
    // The batch axis is one more batch axis of indices, landing first.
    in[1] = batch_rules::move_axis(indices, idim, 0);
    d = {shifted(g.offset_dims), g.collapsed_slice_dims, g.start_index_map};
    slice_sizes = g.slice_sizes;
  } else {
    // Member b reads operand[b]: index the batch axis by position, collapsing it.
    in[0] = batch_rules::move_axis(operand, odim, 0);
    in[1] = with_batch_position(batch_rules::move_axis(indices, idim, 0));
    d = {shifted(g.offset_dims), shifted(g.collapsed_slice_dims, 0), shifted(g.start_index_map, 0)};
    slice_sizes = g.slice_sizes;
    slice_sizes.insert(slice_sizes.begin(), 1);
  }
  return {jx::bind(gather_p, in, gather_params(d, slice_sizes, g.mode))[0], 0};
}

BatchResult gather_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                         const BatchAxis& axis) {
  const bool has_fill = args.size() == 3;
  if (!has_fill || dims[2] == kNotMapped) {
    auto [out, d] = batched_gather(args[0], dims[0], args[1], dims[1], has_fill ? args[2] : Array(), params, axis.size);
    return {{out}, {d}};
  }
  // A batched fill_value (an operand here, a static parameter in JAX): gather without
  // it, mark the out-of-bounds windows (a bool gather's default fill is true), and
  // select each member's fill there.
  auto [out, d] = batched_gather(args[0], dims[0], args[1], dims[1], Array(), params, axis.size);
  Shape operand_shape = args[0].shape();
  if (dims[0] != kNotMapped) operand_shape.erase(operand_shape.begin() + dims[0]);
  Array no_marks = broadcast_in_dim(Array(false), operand_shape, {});
  auto [marks, md] = batched_gather(no_marks, kNotMapped, args[1], dims[1], Array(), params, axis.size);
  out = batch_rules::batch_to_front(out, d, axis.size);
  marks = batch_rules::batch_to_front(marks, md, axis.size);
  Array fill = batch_rules::move_axis(args[2], dims[2], 0);
  if (fill.dtype() != out.dtype()) fill = convert_element_type(fill, out.dtype());
  fill = broadcast_in_dim(fill, out.shape(), {0});
  return {{select_n(marks, {out, fill})}, {0}};
}

// ---- scatter family ----

// vmap of any scatter: the operand and updates get the batch axis first (broadcast when
// unbatched). Unbatched indices treat it as one more window dimension; batched indices
// get each member's position prepended, indexing the operand's batch axis.
BatchRule scatter_batch(const Primitive& p) {
  return [&p](std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
              const BatchAxis& axis) {
    const ScatterSpec s(p.name(), params);
    Array operand = batch_rules::batch_to_front(args[0], dims[0], axis.size);
    Array indices = args[1];
    Array updates = batch_rules::batch_to_front(args[2], dims[2], axis.size);
    ScatterDimensionNumbers d;
    if (dims[1] == kNotMapped) {
      d = {shifted(s.update_window_dims, 0), shifted(s.inserted_window_dims), shifted(s.scatter_dims_to_operand_dims)};
    } else {
      indices = with_batch_position(batch_rules::move_axis(indices, dims[1], 0));
      d = {shifted(s.update_window_dims), shifted(s.inserted_window_dims, 0),
           shifted(s.scatter_dims_to_operand_dims, 0)};
    }
    std::vector<Array> in{operand, indices, updates};
    return BatchResult{jx::bind(p, in, scatter_params(d, s.mode)), {0}};
  };
}

// scatter (set) and scatter_add are linear in (operand, updates) jointly: the tangent is
// the same scatter of the tangents.
JvpRule scatter_linear_jvp(const Primitive& p) {
  return [&p](std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
    std::vector<Array> out = jx::bind(p, primals, params);
    std::vector<Array> args{ad::instantiate(tangents[0], primals[0].aval()), primals[1],
                            ad::instantiate(tangents[2], primals[2].aval())};
    return JvpResult{out, jx::bind(p, args, params)};
  };
}

// scatter (set): overwritten operand positions get no cotangent; each update gets the
// cotangent of the window it wrote. With repeated indices only the last write reaches
// the output, but every duplicate receives the cotangent (as JAX, the rule is exact for
// unique indices).
std::vector<Array> scatter_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                     const Params& params) {
  std::vector<Array> out(3);
  const Array& ct = cts[0];
  if (!ct.valid()) return out;
  if (operands[1].is_linear()) fail("scatter", "cannot transpose with respect to the indices");
  const ScatterSpec s("scatter", params);
  const Array& indices = operands[1].value;
  const Aval& updates = operands[2].aval;
  if (operands[0].is_linear()) {
    std::vector<Array> args{ct, indices, ad::zeros(Aval{updates.shape, ct.dtype(), false})};
    out[0] = jx::bind(scatter_p, args, params)[0];
  }
  if (operands[2].is_linear()) out[2] = gather_windows(ct, indices, gather_for(s, operands[0].aval, updates));
  return out;
}

// scatter_add: the operand passes the cotangent through; each update gets its window's.
std::vector<Array> scatter_add_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                         const Params& params) {
  std::vector<Array> out(3);
  const Array& ct = cts[0];
  if (!ct.valid()) return out;
  if (operands[1].is_linear()) fail("scatter_add", "cannot transpose with respect to the indices");
  const ScatterSpec s("scatter_add", params);
  if (operands[0].is_linear()) out[0] = ct;
  if (operands[2].is_linear())
    out[2] = gather_windows(ct, operands[1].value, gather_for(s, operands[0].aval, operands[2].aval));
  return out;
}

// scatter_mul: out = x * P with P = scatter_mul(ones, indices, updates), so the operand's
// tangent is t_x * P (a mul, so it transposes). For the updates, as JAX's rule, the
// tangent x * scatter_add(zeros, indices, t_u) is exact when no two updates hit the same
// element; JAX refuses repeated indices, which jx cannot detect statically: there the
// result misses the other factors. Zero updates are handled exactly (no division).
JvpResult scatter_mul_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  std::vector<Array> out = jx::bind(scatter_mul_p, primals, params);
  const Array& x = primals[0];
  const Array& indices = primals[1];
  Array t;
  if (tangents[0].valid()) {
    std::vector<Array> args{full_like(x, 1.0), indices, primals[2]};
    t = mul(tangents[0], jx::bind(scatter_mul_p, args, params)[0]);
  }
  if (tangents[2].valid()) {
    std::vector<Array> args{ad::zeros(Aval{x.shape(), x.dtype(), false}), indices, tangents[2]};
    t = ad::add_tangents(t, mul(x, jx::bind(scatter_add_p, args, params)[0]));
  }
  return {out, {t}};
}

// scatter_min / scatter_max (JAX's extremal rule): every value equal to the result (the
// operand's and each update's that landed there) shares the tangent equally, so ties
// average and a value that lost contributes nothing.
JvpRule scatter_extremal_jvp(const Primitive& p) {
  return [&p](std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
    std::vector<Array> out = jx::bind(p, primals, params);
    const Array& x = primals[0];
    const Array& indices = primals[1];
    const Array& u = primals[2];
    const ScatterSpec s(p.name(), params);
    const DType dt = x.dtype();
    // Each update compared with the result where it landed; a dropped update reads the
    // default NaN fill and never matches.
    const GatherOfScatter g = gather_for(s, x.aval(), u.aval());
    Array landed = gather(out[0], indices, g.dnums, g.slice_sizes, g.mode);
    Array update_won = convert_element_type(eq(u, landed), dt);
    Array operand_kept = convert_element_type(eq(x, out[0]), dt);
    std::vector<Array> count_args{ad::zeros(Aval{x.shape(), dt, false}), indices, update_won};
    Array winners = add(operand_kept, jx::bind(scatter_add_p, count_args, params)[0]);
    // NaN results match nothing; keep their share finite (their tangent is then zero).
    Array share = div(full_like(winners, 1.0), max(winners, full_like(winners, 1.0)));
    Array t;
    if (tangents[0].valid()) t = mul(tangents[0], operand_kept);
    if (tangents[2].valid()) {
      std::vector<Array> args{ad::zeros(Aval{x.shape(), dt, false}), indices, mul(tangents[2], update_won)};
      t = ad::add_tangents(t, jx::bind(scatter_add_p, args, params)[0]);
    }
    if (t.valid()) t = mul(t, share);
    return JvpResult{out, {t}};
  };
}

// The scatter flavours share one shape rule (their kernels differ only in how an update
// combines with the operand).
Primitive::Rules scatter_rules(const char* name, uint32_t traits, JvpRule jvp, TransposeRule transpose,
                               BatchRule batch) {
  return {.traits = traits,
          .abstract_eval = [name](std::span<const Aval> in, const Params& p) { return scatter_rule(name, in, p); },
          .jvp = std::move(jvp),
          .transpose = std::move(transpose),
          .batch = std::move(batch)};
}

const Primitive scatter_p("scatter", scatter_rules("scatter", kShapeOnly | kLinear, scatter_linear_jvp(scatter_p),
                                                   scatter_transpose, scatter_batch(scatter_p)));
}  // namespace
const Primitive scatter_add_p("scatter_add", scatter_rules("scatter_add", kLinear, scatter_linear_jvp(scatter_add_p),
                                                           scatter_add_transpose, scatter_batch(scatter_add_p)));
namespace {
const Primitive scatter_mul_p("scatter_mul", scatter_rules("scatter_mul", 0, scatter_mul_jvp, nullptr,
                                                           scatter_batch(scatter_mul_p)));
const Primitive scatter_min_p("scatter_min", scatter_rules("scatter_min", 0, scatter_extremal_jvp(scatter_min_p),
                                                           nullptr, scatter_batch(scatter_min_p)));
const Primitive scatter_max_p("scatter_max", scatter_rules("scatter_max", 0, scatter_extremal_jvp(scatter_max_p),
                                                           nullptr, scatter_batch(scatter_max_p)));

Array bind_scatter(const Primitive& p, const Array& operand, const Array& indices, const Array& updates,
                   const ScatterDimensionNumbers& dnums, GatherScatterMode mode) {
  return bind1(p, {operand, indices, updates},
               {{"update_window_dims", dnums.update_window_dims},
                {"inserted_window_dims", dnums.inserted_window_dims},
                {"scatter_dims_to_operand_dims", dnums.scatter_dims_to_operand_dims},
                {"mode", std::string(mode_name(mode))}});
}

}  // namespace

Array gather(const Array& operand, const Array& indices, const GatherDimensionNumbers& dnums,
             const Shape& slice_sizes, GatherScatterMode mode, const Array& fill_value) {
  Params params{{"offset_dims", dnums.offset_dims},
                {"collapsed_slice_dims", dnums.collapsed_slice_dims},
                {"start_index_map", dnums.start_index_map},
                {"slice_sizes", slice_sizes},
                {"mode", std::string(mode_name(mode))}};
  if (mode == GatherScatterMode::FillOrDrop && fill_value.valid())
    return bind1(gather_p, {operand, indices, fill_value}, params);
  return bind1(gather_p, {operand, indices}, params);
}

Array scatter(const Array& operand, const Array& indices, const Array& updates, const ScatterDimensionNumbers& dnums,
              GatherScatterMode mode) {
  return bind_scatter(scatter_p, operand, indices, updates, dnums, mode);
}
Array scatter_add(const Array& operand, const Array& indices, const Array& updates,
                  const ScatterDimensionNumbers& dnums, GatherScatterMode mode) {
  return bind_scatter(scatter_add_p, operand, indices, updates, dnums, mode);
}
Array scatter_mul(const Array& operand, const Array& indices, const Array& updates,
                  const ScatterDimensionNumbers& dnums, GatherScatterMode mode) {
  return bind_scatter(scatter_mul_p, operand, indices, updates, dnums, mode);
}
Array scatter_min(const Array& operand, const Array& indices, const Array& updates,
                  const ScatterDimensionNumbers& dnums, GatherScatterMode mode) {
  return bind_scatter(scatter_min_p, operand, indices, updates, dnums, mode);
}
Array scatter_max(const Array& operand, const Array& indices, const Array& updates,
                  const ScatterDimensionNumbers& dnums, GatherScatterMode mode) {
  return bind_scatter(scatter_max_p, operand, indices, updates, dnums, mode);
}

}  // namespace jx::lax
