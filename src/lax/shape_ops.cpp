// Shape primitives: iota, broadcast_in_dim, reshape, transpose, squeeze, expand_dims, rev.
// Their CPU kernels (views of the operand's storage, but for iota and some reshapes):
// src/backend/cpu/kernels/shape.cpp.
#include <algorithm>
#include <numeric>

#include "jx/lax.h"
#include "lax/ad_rules.h"
#include "lax/batch_rules.h"
#include "lax/elemental.h"
#include "lax/primitives.h"
#include "lax/rules.h"
#include "lax/shape_params.h"

namespace jx::lax {
namespace {

using jx::detail::fail;
using jx::detail::shape_str;
using lowering::IndexMapResult;
using elemental::sorted_dims;
using elemental::zero_map;

// Shape-only primitives that are linear in their single operand.
constexpr uint32_t kLinearShapeOp = kShapeOnly | kLinear;

void check_nonnegative_shape(std::string_view op, const Shape& shape, std::string_view what) {
  for (int64_t d : shape)
    if (d < 0) fail(op, what, " must be non-negative, got ", shape_str(shape));
}

// ---- iota ----

std::vector<Aval> iota_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("iota", in, 0);
  DType dtype = params.get_dtype("dtype");
  const Shape& shape = params.get_ints("shape");
  int64_t dimension = params.get_int("dimension");
  if (!rules::dtype_in(dtype, rules::kNumberTypes))
    fail("iota", "dtype must be numeric, got ", dtype_name(dtype));
  check_nonnegative_shape("iota", shape, "shape");
  if (dimension < 0 || dimension >= static_cast<int64_t>(shape.size()))
    fail("iota", "dimension ", dimension, " is out of bounds for shape ", shape_str(shape));
  return {Aval{shape, dtype, false}};
}

// iota has no operands, so vmap never reaches this rule; it exists so the registry
// is complete: the result is the same for every batch member.
BatchResult iota_batch(std::span<const Array>, std::span<const int64_t>, const Params& params, const BatchAxis&);

}  // namespace

const Primitive iota_p("iota", {.traits = kNotDifferentiable,
                                .abstract_eval = iota_rule,
                                .jvp = {},
                                .transpose = {},
                                .batch = iota_batch,
                                .lowering = {.index_map =
                                     [](std::span<const Aval>, const Aval& out, const Params& params) {
                                       IndexMapResult r{zero_map(1, out.shape.size())};  // the value is the index along `dimension`
                                       r.map.coef[0][static_cast<size_t>(params.get_int("dimension"))] = 1;
                                       return r;
                                     },
                                 .index_is_value = true}});

namespace {

BatchResult iota_batch(std::span<const Array>, std::span<const int64_t>, const Params& params, const BatchAxis&) {
  return {jx::bind(iota_p, {}, params), {kNotMapped}};
}

// ---- broadcast_in_dim ----

std::vector<Aval> broadcast_in_dim_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("broadcast_in_dim", in, 1);
  const Aval& x = in[0];
  const Shape& shape = params.get_ints("shape");
  const auto& bdims = params.get_ints("broadcast_dimensions");
  check_nonnegative_shape("broadcast_in_dim", shape, "shape");
  if (bdims.size() != x.shape.size())
    fail("broadcast_in_dim", "broadcast_dimensions ", shape_str(bdims),
         " must have one entry per operand dimension; operand shape ", shape_str(x.shape));
  if (x.shape.size() > shape.size())
    fail("broadcast_in_dim", "cannot broadcast operand of shape ", shape_str(x.shape), " to fewer dimensions ",
         shape_str(shape));
  for (size_t i = 0; i < bdims.size(); ++i) {
    int64_t d = bdims[i];
    if (d < 0 || d >= static_cast<int64_t>(shape.size()))
      fail("broadcast_in_dim", "broadcast_dimensions ", shape_str(bdims), " has entry ", d,
           " out of bounds for result shape ", shape_str(shape));
    if (i > 0 && d <= bdims[i - 1])
      fail("broadcast_in_dim", "broadcast_dimensions ", shape_str(bdims), " must be strictly increasing");
    if (x.shape[i] != 1 && x.shape[i] != shape[static_cast<size_t>(d)])
      fail("broadcast_in_dim", "operand dimension ", i, " of size ", x.shape[i],
           " cannot broadcast to result dimension ", d, " of size ", shape[static_cast<size_t>(d)],
           "; operand shape ", shape_str(x.shape), ", result shape ", shape_str(shape));
  }
  return {Aval{shape, x.dtype, x.weak_type}};
}

// Transpose: sum the cotangent over the new dims and the stretched size-1 dims.
Array broadcast_in_dim_transpose(const Array& ct, const Aval& x, const Params& params) {
  const auto& bdims = params.get_ints("broadcast_dimensions");
  std::vector<int64_t> sum_axes;
  std::vector<int64_t> stretched;  // operand dims of size 1 stretched (kept as size 1)
  for (int64_t d = 0; d < ct.ndim(); ++d) {
    auto it = std::find(bdims.begin(), bdims.end(), d);
    if (it == bdims.end()) sum_axes.push_back(d);
    else if (x.shape[static_cast<size_t>(it - bdims.begin())] != ct.shape()[d]) sum_axes.push_back(d);
  }
  Array summed = sum_axes.empty() ? ct : reduce_sum(ct, sum_axes);
  return summed.shape() == x.shape ? summed : reshape(summed, x.shape);
}

BatchResult broadcast_in_dim_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                                   const BatchAxis& axis) {
  Array x = batch_rules::move_axis(args[0], dims[0], 0);
  Shape shape = params.get_ints("shape");
  shape.insert(shape.begin(), axis.size);
  std::vector<int64_t> bdims{0};
  for (int64_t d : params.get_ints("broadcast_dimensions")) bdims.push_back(d + 1);
  return {{broadcast_in_dim(x, shape, bdims)}, {0}};
}

}  // namespace

// Outside the anonymous namespace: passes match it by identity (lax/primitives.h).
extern const Primitive broadcast_in_dim_p;
const Primitive broadcast_in_dim_p("broadcast_in_dim", {.traits = kLinearShapeOp,
                                                        .abstract_eval = broadcast_in_dim_rule,
                                                        .jvp = ad_rules::linear(broadcast_in_dim_p),
                                                        .transpose = ad_rules::unary_transpose(broadcast_in_dim_transpose),
                                                        .batch = broadcast_in_dim_batch,
                                                        .lowering = {.index_map = [](std::span<const Aval> in, const Aval& out, const Params& params) {
                                                           const Shape& xs = in[0].shape;
                                                           const auto& bdims = params.get_ints("broadcast_dimensions");
                                                           IndexMapResult r{zero_map(xs.size(), out.shape.size())};
                                                           for (size_t k = 0; k < xs.size(); ++k)
                                                             if (xs[k] != 1) r.map.coef[k][static_cast<size_t>(bdims[k])] = 1;  // size 1: always index 0
                                                           return r;
                                                         }}});

namespace {

// ---- reshape ----

std::vector<Aval> reshape_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("reshape", in, 1);
  const Aval& x = in[0];
  const Shape& new_sizes = params.get_ints("new_sizes");
  check_nonnegative_shape("reshape", new_sizes, "new_sizes");
  if (shape_size(new_sizes, "reshape") != x.size())
    fail("reshape", "cannot reshape ", shape_str(x.shape), " into ", shape_str(new_sizes));
  return {Aval{new_sizes, x.dtype, x.weak_type}};
}

// Batching: a row-major reshape only makes sense with the batch axis leading, where
// every batch member is one contiguous block of the flattened order.
BatchResult reshape_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                          const BatchAxis& axis) {
  Array x = batch_rules::move_axis(args[0], dims[0], 0);
  Shape shape = params.get_ints("new_sizes");
  shape.insert(shape.begin(), axis.size);
  return {{reshape(x, shape)}, {0}};
}

}  // namespace

// Outside the anonymous namespace: passes match it by identity (lax/primitives.h).
extern const Primitive reshape_p;
const Primitive reshape_p("reshape", {.traits = kLinearShapeOp,
                                      .abstract_eval = reshape_rule,
                                      .jvp = ad_rules::linear(reshape_p),
                                      .transpose = ad_rules::unary_transpose(
                                          [](const Array& ct, const Aval& x, const Params&) {
                                            return reshape(ct, x.shape);
                                          }),
                                      .batch = reshape_batch,
                                      .lowering = {.index_map =
                                           [](std::span<const Aval> in, const Aval& out, const Params&) {
                                             // Affine when it only splits dims (and adds or drops size-1 dims): each operand dim
                                             // is a group of consecutive result dims, read with the group's row-major strides.
                                             const Shape& xs = in[0].shape;
                                             const Shape& os = out.shape;
                                             IndexMapResult r{zero_map(xs.size(), os.size())};
                                             if (shape_size(xs) == 0) return r;  // nothing is ever read
                                             size_t j = 0;
                                             for (size_t k = 0; k < xs.size(); ++k) {
                                               if (xs[k] == 1) continue;
                                               while (j < os.size() && os[j] == 1) ++j;
                                               const size_t first = j;
                                               int64_t product = 1;
                                               while (j < os.size() && product < xs[k]) product *= os[j++];
                                               if (product != xs[k] || first == j) {
                                                 r.why_not = "a reshape of a computed value " + shape_str(xs) + " -> " + shape_str(os) +
                                                             " that merges dims is not an affine index map (only reshapes of kernel inputs are)";
                                                 return r;
                                               }
                                               const std::vector<int64_t> strides =
                                                   jx::detail::contiguous_strides(Shape(os.begin() + static_cast<long>(first), os.begin() + static_cast<long>(j)));
                                               for (size_t g = first; g < j; ++g) r.map.coef[k][g] = strides[g - first];
                                             }
                                             return r;
                                           },
                                       .row_major_read = true}});

namespace {

// ---- transpose ----

std::vector<Aval> transpose_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("transpose", in, 1);
  const Aval& x = in[0];
  const auto& perm = params.get_ints("permutation");
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> expected(x.shape.size());
  std::iota(expected.begin(), expected.end(), 0);
  if (sorted != expected)
    fail("transpose", "permutation ", shape_str(perm), " is not a permutation of the axes of operand shape ",
         shape_str(x.shape));
  Shape shape;
  for (int64_t p : perm) shape.push_back(x.shape[static_cast<size_t>(p)]);
  return {Aval{shape, x.dtype, x.weak_type}};
}

Array transpose_transpose(const Array& ct, const Aval&, const Params& params) {
  const auto& perm = params.get_ints("permutation");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return transpose(ct, inverse);
}

// Batching: the batch axis becomes output axis 0 inside the one permutation, so the
// data is viewed once rather than moved and then permuted.
BatchResult transpose_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                            const BatchAxis&) {
  const int64_t b = dims[0];
  std::vector<int64_t> perm{b};
  for (int64_t p : params.get_ints("permutation")) perm.push_back(p < b ? p : p + 1);
  return {{transpose(args[0], perm)}, {0}};
}

}  // namespace

// Outside the anonymous namespace: passes match it by identity (lax/primitives.h).
extern const Primitive transpose_p;
const Primitive transpose_p("transpose", {.traits = kLinearShapeOp,
                                          .abstract_eval = transpose_rule,
                                          .jvp = ad_rules::linear(transpose_p),
                                          .transpose = ad_rules::unary_transpose(transpose_transpose),
                                          .batch = transpose_batch,
                                          .lowering = {.index_map = [](std::span<const Aval> in, const Aval& out, const Params& params) {
                                             const auto& perm = params.get_ints("permutation");
                                             IndexMapResult r{zero_map(in[0].shape.size(), out.shape.size())};
                                             for (size_t k = 0; k < perm.size(); ++k) r.map.coef[static_cast<size_t>(perm[k])][k] = 1;
                                             return r;
                                           }}});

namespace {

// ---- squeeze ----

std::vector<Aval> squeeze_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("squeeze", in, 1);
  const Aval& x = in[0];
  auto dims = rules::canonical_axes("squeeze", params.get_ints("dimensions"), x.shape);
  for (int64_t d : dims)
    if (x.shape[static_cast<size_t>(d)] != 1)
      fail("squeeze", "cannot squeeze dimension ", d, " of size ", x.shape[static_cast<size_t>(d)],
           " in operand shape ", shape_str(x.shape), "; only size-1 dimensions can be squeezed");
  Shape shape;
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) == dims.end()) shape.push_back(x.shape[i]);
  return {Aval{shape, x.dtype, x.weak_type}};
}

// Operand dims `dims` of the unbatched operand, renumbered for a batch axis at b.
std::vector<int64_t> dims_around_batch(const std::vector<int64_t>& dims, int64_t b) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(d < b ? d : d + 1);
  return out;
}

// Batching: the squeezed dims are renumbered around the batch axis, which stays put
// (shifted left by the squeezed dims before it).
BatchResult squeeze_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                          const BatchAxis&) {
  const int64_t b = dims[0];
  std::vector<int64_t> sq = dims_around_batch(params.get_ints("dimensions"), b);
  const auto before = static_cast<int64_t>(std::count_if(sq.begin(), sq.end(), [&](int64_t d) { return d < b; }));
  return {{squeeze(args[0], sq)}, {b - before}};
}

}  // namespace

// Outside the anonymous namespace: passes match it by identity (lax/primitives.h).
extern const Primitive squeeze_p;
const Primitive squeeze_p("squeeze", {.traits = kLinearShapeOp,
                                      .abstract_eval = squeeze_rule,
                                      .jvp = ad_rules::linear(squeeze_p),
                                      .transpose = ad_rules::unary_transpose(
                                          [](const Array& ct, const Aval& x, const Params&) {
                                            return reshape(ct, x.shape);
                                          }),
                                      .batch = squeeze_batch,
                                      .lowering = {.index_map = [](std::span<const Aval> in, const Aval& out, const Params& params) {
                                         const Shape& xs = in[0].shape;
                                         const std::vector<int64_t> dims = sorted_dims(params.get_ints("dimensions"), static_cast<int64_t>(xs.size()));
                                         IndexMapResult r{zero_map(xs.size(), out.shape.size())};
                                         size_t src = 0;
                                         for (size_t k = 0; k < xs.size(); ++k)
                                           if (!std::binary_search(dims.begin(), dims.end(), static_cast<int64_t>(k))) r.map.coef[k][src++] = 1;
                                         return r;
                                       }}});

// ---- expand_dims ----

// The kernel uses these too (lax/shape_params.h).
namespace shape {

// The result dims that are new, normalized against the result's rank.
std::vector<int64_t> expand_dims_positions(const std::vector<int64_t>& dimensions, const Shape& shape) {
  const auto out_nd = static_cast<int64_t>(shape.size() + dimensions.size());
  std::vector<int64_t> out;
  for (int64_t d : dimensions) {
    if (d < -out_nd || d >= out_nd)
      fail("expand_dims", "dimension ", d, " is out of bounds for a result of rank ", out_nd, " (operand shape ",
           shape_str(shape), ")");
    int64_t c = d < 0 ? d + out_nd : d;
    if (std::find(out.begin(), out.end(), c) != out.end())
      fail("expand_dims", "repeated dimension ", d, " in dimensions ", shape_str(dimensions));
    out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Interleaves the operand's dims (shape or strides) with `fill` at the new positions.
std::vector<int64_t> insert_at(const std::vector<int64_t>& v, const std::vector<int64_t>& positions, int64_t fill) {
  std::vector<int64_t> out(v.size() + positions.size(), fill);
  size_t src = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (!std::binary_search(positions.begin(), positions.end(), static_cast<int64_t>(i))) out[i] = v[src++];
  return out;
}

}  // namespace shape

namespace {

using shape::expand_dims_positions;
using shape::insert_at;

std::vector<Aval> expand_dims_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("expand_dims", in, 1);
  const Aval& x = in[0];
  auto positions = expand_dims_positions(params.get_ints("dimensions"), x.shape);
  return {Aval{insert_at(x.shape, positions, 1), x.dtype, x.weak_type}};
}

// Batching: with the batch axis leading, the new positions are simply shifted by one.
BatchResult expand_dims_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                              const BatchAxis&) {
  Array x = batch_rules::move_axis(args[0], dims[0], 0);
  std::vector<int64_t> positions = params.get_ints("dimensions");
  for (int64_t& p : positions) ++p;
  return {{expand_dims(x, positions)}, {0}};
}

}  // namespace

// Outside the anonymous namespace: passes match it by identity (lax/primitives.h).
extern const Primitive expand_dims_p;
const Primitive expand_dims_p("expand_dims", {.traits = kLinearShapeOp,
                                              .abstract_eval = expand_dims_rule,
                                              .jvp = ad_rules::linear(expand_dims_p),
                                              .transpose = ad_rules::unary_transpose(
                                                  [](const Array& ct, const Aval&, const Params& params) {
                                                    return squeeze(ct, params.get_ints("dimensions"));
                                                  }),
                                              .batch = expand_dims_batch,
                                              .lowering = {.index_map = [](std::span<const Aval> in, const Aval& out, const Params& params) {
                                                 const Shape& os = out.shape;
                                                 const std::vector<int64_t> pos = sorted_dims(params.get_ints("dimensions"), static_cast<int64_t>(os.size()));
                                                 IndexMapResult r{zero_map(in[0].shape.size(), os.size())};
                                                 size_t dst = 0;
                                                 for (size_t k = 0; k < os.size(); ++k)
                                                   if (!std::binary_search(pos.begin(), pos.end(), static_cast<int64_t>(k))) r.map.coef[dst++][k] = 1;
                                                 return r;
                                               }}});

namespace {

// ---- rev ----

std::vector<Aval> rev_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("rev", in, 1);
  rules::canonical_axes("rev", params.get_ints("dimensions"), in[0].shape);
  return {in[0]};
}

// Batching: reverse the same dims, renumbered around the batch axis (which stays put).
BatchResult rev_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                      const BatchAxis&) {
  return {{rev(args[0], dims_around_batch(params.get_ints("dimensions"), dims[0]))}, {dims[0]}};
}

extern const Primitive rev_p;
const Primitive rev_p("rev", {.traits = kLinearShapeOp,
                              .abstract_eval = rev_rule,
                              .jvp = ad_rules::linear(rev_p),
                              .transpose = ad_rules::unary_transpose(
                                  [](const Array& ct, const Aval&, const Params& params) {
                                    return rev(ct, params.get_ints("dimensions"));
                                  }),
                              .batch = rev_batch,
                              .lowering = {.index_map = [](std::span<const Aval> in, const Aval& out, const Params& params) {
                                 const Shape& xs = in[0].shape;
                                 const std::vector<int64_t> dims = sorted_dims(params.get_ints("dimensions"), static_cast<int64_t>(xs.size()));
                                 IndexMapResult r{zero_map(xs.size(), out.shape.size())};
                                 for (size_t k = 0; k < xs.size(); ++k) {
                                   const bool reversed = std::binary_search(dims.begin(), dims.end(), static_cast<int64_t>(k));
                                   r.map.coef[k][k] = reversed ? -1 : 1;
                                   if (reversed) r.map.offset[k] = xs[k] - 1;
                                 }
                                 return r;
                               }}});

std::vector<int64_t> canonical(std::string_view op, const std::vector<int64_t>& axes, const Array& x) {
  return rules::canonical_axes(op, axes, x.shape());
}

}  // namespace

Array iota(DType dtype, int64_t size) {
  return bind1(iota_p, {}, {{"dtype", dtype}, {"shape", Shape{size}}, {"dimension", int64_t{0}}});
}

Array broadcasted_iota(DType dtype, const Shape& shape, int dimension) {
  int64_t dim = dimension;
  if (dim < 0) dim += static_cast<int64_t>(shape.size());
  return bind1(iota_p, {}, {{"dtype", dtype}, {"shape", shape}, {"dimension", dim}});
}

Array broadcast_in_dim(const Array& x, const Shape& shape, const std::vector<int64_t>& broadcast_dimensions) {
  return bind1(broadcast_in_dim_p, {x}, {{"shape", shape}, {"broadcast_dimensions", broadcast_dimensions}});
}

Array broadcast(const Array& x, const Shape& leading_sizes) {
  Shape shape = leading_sizes;
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  std::vector<int64_t> bdims(x.shape().size());
  std::iota(bdims.begin(), bdims.end(), static_cast<int64_t>(leading_sizes.size()));
  return broadcast_in_dim(x, shape, bdims);
}

Array reshape(const Array& x, const Shape& new_sizes) { return bind1(reshape_p, {x}, {{"new_sizes", new_sizes}}); }

Array transpose(const Array& x, const std::vector<int64_t>& permutation) {
  std::vector<int64_t> perm = permutation;
  const auto nd = static_cast<int64_t>(x.shape().size());
  for (int64_t& p : perm)
    if (p < 0 && p >= -nd) p += nd;
  return bind1(transpose_p, {x}, {{"permutation", perm}});
}

Array squeeze(const Array& x, const std::vector<int64_t>& dimensions) {
  auto dims = canonical("squeeze", dimensions, x);
  std::sort(dims.begin(), dims.end());
  return bind1(squeeze_p, {x}, {{"dimensions", dims}});
}

Array expand_dims(const Array& x, const std::vector<int64_t>& dimensions) {
  return bind1(expand_dims_p, {x}, {{"dimensions", expand_dims_positions(dimensions, x.shape())}});
}

Array rev(const Array& x, const std::vector<int64_t>& dimensions) {
  auto dims = canonical("rev", dimensions, x);
  std::sort(dims.begin(), dims.end());
  return bind1(rev_p, {x}, {{"dimensions", dims}});
}

}  // namespace jx::lax
