// Reductions: reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or,
// argmax and argmin. Their CPU kernels: src/backend/cpu/kernels/reductions.cpp.
#include <algorithm>
#include <vector>

#include "jx/lax.h"
#include "lax/primitives.h"
#include "lax/reduction_ops.h"
#include "lax/ad_rules.h"
#include "lax/batch_rules.h"
#include "lax/elemental.h"
#include "lax/rules.h"
#include "core/array_internal.h"
#include "transforms/ad_util.h"

namespace jx::lax {
namespace {

using jx::detail::fail;
using jx::detail::shape_str;
using namespace kernels;

// Normalizes in-range negative axes so the IR holds canonical ones; out-of-range
// axes are left for the shape rule to reject with the axis the caller wrote.
int64_t normalize_axis(int64_t axis, int64_t ndim) { return axis < 0 && axis >= -ndim ? axis + ndim : axis; }
std::vector<int64_t> normalize_axes(std::vector<int64_t> axes, int64_t ndim) {
  for (int64_t& a : axes) a = normalize_axis(a, ndim);
  return axes;
}

std::string tuple_str(const std::vector<int64_t>& v) { return shape_str(v); }

// ---- shape rules ----

AbstractEvalRule reduce_rule(std::string op, uint32_t dtypes, bool keep_weak) {
  return [op, dtypes, keep_weak](std::span<const Aval> in, const Params& params) {
    rules::check_arity(op, in, 1);
    rules::check_dtype(op, in[0], dtypes);
    std::vector<int64_t> axes = rules::canonical_axes(op, params.get_ints("axes"), in[0].shape);
    Shape out_shape;
    for (int64_t d = 0; d < in[0].ndim(); ++d)
      if (std::find(axes.begin(), axes.end(), d) == axes.end()) out_shape.push_back(in[0].shape[d]);
    return std::vector<Aval>{Aval{out_shape, in[0].dtype, keep_weak && in[0].weak_type}};
  };
}

AbstractEvalRule argminmax_rule(std::string op) {
  return [op](std::span<const Aval> in, const Params& params) {
    rules::check_arity(op, in, 1);
    const std::vector<int64_t>& axes = params.get_ints("axes");
    if (axes.size() != 1) fail(op, "expects exactly one axis, got axes=", tuple_str(axes));
    const Shape& shape = in[0].shape;
    int64_t axis = rules::canonical_axis(op, axes[0], in[0].ndim(), shape);
    DType index_dtype = params.get_dtype("index_dtype");
    if (!is_integer(index_dtype)) fail(op, "index_dtype must be an integer type, got ", dtype_name(index_dtype));
    if (shape[axis] == 0)
      fail(op, "cannot take ", op, " along axis ", axis, " of shape ", shape_str(shape),
           ": the axis is empty");
    Shape out_shape = shape;
    out_shape.erase(out_shape.begin() + axis);
    return std::vector<Aval>{Aval{out_shape, index_dtype, false}};
  };
}

// ---- native kernels' form of the monoids (jx/lowering.h) ----

// The reducer of monoid Op (reduction_ops.h): native kernels start from the same
// identity eager's kernels do, Op<T>::identity(), and combine with `combine`.
template <template <class> class Op>
lowering::Reducer reducer(lowering::Monoid monoid, uint32_t native_dtypes, bool widen_float32,
                          std::function<lowering::Value*(lowering::ScalarBuilder&, DType, lowering::Value*,
                                                         lowering::Value*)> combine) {
  lowering::Reducer r;
  r.monoid = monoid;
  r.native = [native_dtypes](DType d) { return rules::dtype_in(d, native_dtypes); };
  r.widen_float32 = widen_float32;
  r.identity = [](DType d) {
    return dispatch_dtype(d, [&]<class T>() -> Array {
      if constexpr (Op<T>::kSupported) return detail::scalar<T>(Op<T>::store(Op<T>::identity()));
      else fail("reduce", "no identity for ", dtype_name(d));
    });
  };
  r.combine = std::move(combine);
  return r;
}

using lowering::Monoid;
using lowering::ScalarBuilder;
using LValue = lowering::Value;
constexpr uint32_t kNativeArithmetic = rules::kIntTypes | rules::kFloatTypes;

// The combine steps. Float sums and products may be reassociated (as eager's pairwise
// sums are); float max/min are IEEE maximum/minimum (NaN wins wherever it is, +0 is above
// -0 whatever the order), as eager's (reduction_ops.h) and XLA's.
LValue* sum_step(ScalarBuilder& b, DType d, LValue* acc, LValue* x) { return b.add(d, acc, x, true); }
LValue* prod_step(ScalarBuilder& b, DType d, LValue* acc, LValue* x) { return b.mul(d, acc, x, true); }
LValue* max_step(ScalarBuilder& b, DType d, LValue* acc, LValue* x) { return elemental::max(b, d, acc, x); }
LValue* min_step(ScalarBuilder& b, DType d, LValue* acc, LValue* x) { return elemental::min(b, d, acc, x); }
LValue* and_step(ScalarBuilder& b, DType, LValue* acc, LValue* x) { return b.bit_and(acc, x); }
LValue* or_step(ScalarBuilder& b, DType, LValue* acc, LValue* x) { return b.bit_or(acc, x); }

// ---- primitives ----

extern const Primitive reduce_prod_p, reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p, argmax_p, argmin_p;

// The cotangent of a reduction's operand: ct broadcast back over the reduced axes.
Array broadcast_back(const Array& ct, const Aval& operand, const std::vector<int64_t>& axes) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < operand.ndim(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(d);
  return broadcast_in_dim(ct, operand.shape, kept);
}

// The reduced value broadcast back to the operand's shape (the reduced dims re-inserted).
Array broadcast_result_back(const Array& y, const Array& x, const std::vector<int64_t>& axes) {
  return broadcast_back(y, x.aval(), axes);
}

using ad::scalar_like;

// d prod(x) along `axes` = sum_i t_i * prod_{j != i} x_j. The products of the other
// elements are formed without dividing by x_i (so zeros in x are handled exactly): the
// reduced axes are moved last and flattened, and each element's exclusive prefix and
// suffix products along that flat axis are multiplied. The coefficient is reshaped back
// to x's layout so the tangent itself only meets mul and reduce_sum.
Array reduce_prod_coefficient(const Array& x, const std::vector<int64_t>& axes) {
  const Shape& shape = x.shape();
  std::vector<int64_t> perm, reduced_sorted = axes;
  std::sort(reduced_sorted.begin(), reduced_sorted.end());
  Shape moved_shape;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) perm.push_back(d);
  const size_t kept = perm.size();
  int64_t n = 1;
  for (int64_t d : reduced_sorted) {
    perm.push_back(d);
    n *= shape[d];
  }
  for (int64_t d : perm) moved_shape.push_back(shape[d]);
  Shape flat_shape(moved_shape.begin(), moved_shape.begin() + static_cast<int64_t>(kept));
  flat_shape.push_back(n);
  Array flat = reshape(transpose(x, perm), flat_shape);
  const int64_t last = static_cast<int64_t>(kept);
  // exclusive prefix: [1, c_0, ..., c_{n-2}] of c = cumprod(flat); suffix likewise.
  std::vector<int64_t> start(flat_shape.size(), 0), limit = flat_shape;
  std::vector<PadDim> lo_pad(flat_shape.size()), hi_pad(flat_shape.size());
  lo_pad[last].lo = 1;
  hi_pad[last].hi = 1;
  Array one = scalar_like(x, 1.0);
  limit[last] = n - 1;
  Array prefix = pad(slice(cumprod(flat, last), start, limit), one, lo_pad);
  start[last] = 1;
  limit[last] = n;
  Array suffix = pad(slice(cumprod(flat, last, /*reverse=*/true), start, limit), one, hi_pad);
  Array coefficient = reshape(mul(prefix, suffix), moved_shape);
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return transpose(coefficient, inverse);
}

JvpResult reduce_prod_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  const Array& x = primals[0];
  const std::vector<int64_t>& axes = params.get_ints("axes");
  Array out = jx::bind(reduce_prod_p, primals, params)[0];
  if (x.size() == 0) return JvpResult{{out}, {ad::zeros(out.aval())}};
  Array t = reduce_sum(mul(tangents[0], reduce_prod_coefficient(x, axes)), axes);
  return JvpResult{{out}, {t}};
}

// JAX's chooser rule for reduce_max/reduce_min: the tangents at the positions equal to
// the result, averaged over those ties.
JvpRule chooser_jvp(const Primitive& p) {
  return [&p](std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
    const Array& x = primals[0];
    const std::vector<int64_t>& axes = params.get_ints("axes");
    Array out = jx::bind(p, primals, params)[0];
    Array at_result = convert_element_type(eq(x, broadcast_result_back(out, x, axes)), x.dtype());
    Array counts = reduce_sum(at_result, axes);
    Array t = div(reduce_sum(mul(tangents[0], at_result), axes), counts);
    return JvpResult{{out}, {t}};
  };
}

}  // namespace

// Matched by identity (lax/primitives.h: one_hot_sums).
const Primitive reduce_sum_p("reduce_sum", {.traits = kReduction | kLinear,
                                            .abstract_eval = reduce_rule("reduce_sum", rules::kNumberTypes, true),
                                            .jvp = ad_rules::linear(reduce_sum_p),
                                            .transpose = ad_rules::unary_transpose(
                                                [](const Array& ct, const Aval& x, const Params& params) {
                                                  return broadcast_back(ct, x, params.get_ints("axes"));
                                                }),
                                            .batch = batch_rules::reduction(reduce_sum_p),
                                            .lowering = {.reducer = reducer<SumOp>(Monoid::kSum, kNativeArithmetic,
                                                                    /*widen_float32=*/true, sum_step)}});

namespace {

const Primitive reduce_prod_p("reduce_prod", {.traits = kReduction,
                                              .abstract_eval = reduce_rule("reduce_prod", rules::kNumberTypes, true),
                                              .jvp = reduce_prod_jvp,
                                              .batch = batch_rules::reduction(reduce_prod_p),
                                              .lowering = {.reducer = reducer<ProdOp>(Monoid::kProd, kNativeArithmetic,
                                                                      false, prod_step)}});
const Primitive reduce_max_p("reduce_max", {.traits = kReduction,
                                            .abstract_eval = reduce_rule("reduce_max", rules::kAnyTypes, true),
                                            .jvp = chooser_jvp(reduce_max_p),
                                            .batch = batch_rules::reduction(reduce_max_p),
                                            .lowering = {.reducer = reducer<MaxOp>(Monoid::kMax, kNativeArithmetic,
                                                                    false, max_step)}});
const Primitive reduce_min_p("reduce_min", {.traits = kReduction,
                                            .abstract_eval = reduce_rule("reduce_min", rules::kAnyTypes, true),
                                            .jvp = chooser_jvp(reduce_min_p),
                                            .batch = batch_rules::reduction(reduce_min_p),
                                            .lowering = {.reducer = reducer<MinOp>(Monoid::kMin, kNativeArithmetic,
                                                                    false, min_step)}});
// Bool or integer results carry no tangent.
const Primitive reduce_and_p("reduce_and", {.traits = kReduction | kNotDifferentiable,
                                            .abstract_eval = reduce_rule("reduce_and", rules::kBitTypes, false),
                                            .batch = batch_rules::reduction(reduce_and_p),
                                            .lowering = {.reducer = reducer<AndOp>(Monoid::kAnd, rules::kBitTypes,
                                                                    false, and_step)}});
const Primitive reduce_or_p("reduce_or", {.traits = kReduction | kNotDifferentiable,
                                          .abstract_eval = reduce_rule("reduce_or", rules::kBitTypes, false),
                                          .batch = batch_rules::reduction(reduce_or_p),
                                          .lowering = {.reducer = reducer<OrOp>(Monoid::kOr, rules::kBitTypes,
                                                                  false, or_step)}});
// argmax/argmin reduce over axes=(axis,) too, so batching treats them as reducers: the
// one axis is renumbered around the batch axis and index_dtype passes through.
const Primitive argmax_p("argmax", {.traits = kReduction | kNotDifferentiable,
                                    .abstract_eval = argminmax_rule("argmax"),
                                    .batch = batch_rules::reduction(argmax_p)});
const Primitive argmin_p("argmin", {.traits = kReduction | kNotDifferentiable,
                                    .abstract_eval = argminmax_rule("argmin"),
                                    .batch = batch_rules::reduction(argmin_p)});

Array bind_reduce(const Primitive& p, const Array& x, const std::vector<int64_t>& axes) {
  return bind1(p, {x}, {{"axes", normalize_axes(axes, x.ndim())}});
}

Array bind_argminmax(const Primitive& p, const Array& x, int64_t axis, DType index_dtype) {
  return bind1(p, {x}, {{"axes", std::vector<int64_t>{normalize_axis(axis, x.ndim())}}, {"index_dtype", index_dtype}});
}

}  // namespace

Array reduce_sum(const Array& x, const std::vector<int64_t>& axes) { return bind_reduce(reduce_sum_p, x, axes); }
Array reduce_prod(const Array& x, const std::vector<int64_t>& axes) { return bind_reduce(reduce_prod_p, x, axes); }
Array reduce_max(const Array& x, const std::vector<int64_t>& axes) { return bind_reduce(reduce_max_p, x, axes); }
Array reduce_min(const Array& x, const std::vector<int64_t>& axes) { return bind_reduce(reduce_min_p, x, axes); }
Array reduce_and(const Array& x, const std::vector<int64_t>& axes) { return bind_reduce(reduce_and_p, x, axes); }
Array reduce_or(const Array& x, const std::vector<int64_t>& axes) { return bind_reduce(reduce_or_p, x, axes); }
Array argmax(const Array& x, int64_t axis, DType index_dtype) { return bind_argminmax(argmax_p, x, axis, index_dtype); }
Array argmin(const Array& x, int64_t axis, DType index_dtype) { return bind_argminmax(argmin_p, x, axis, index_dtype); }

}  // namespace jx::lax
