// The rows of the op table (op_table.h): one per primitive and per meaningful variant.
// Grouped as the library is: elementwise unary, binary, the rest of the elementwise
// family, shapes and data movement, gather/scatter, reductions, linear algebra, PRNG,
// and the call primitives.
#include "op_table.h"

#include <cmath>
#include <utility>
#include <random>
#include <stdexcept>

#include "jit/codegen/fast_math.h"
#include "jx/checkpoint.h"
#include "jx/pmap.h"
#include "jx/control_flow/scan.h"
#include "jx/custom_derivatives.h"

namespace jx::op_table {
namespace {

namespace jnp = jx::numpy;

using Unary = std::pair<const char*, Array (*)(const Array&)>;
using Binary = std::pair<const char*, Array (*)(const Array&, const Array&)>;
using Cumulative = std::pair<const char*, Array (*)(const Array&, int64_t, bool)>;

// Kernels compute every transcendental with the libmvec variant eager runs (0 ULP),
// except the inline polynomials (fast_math.h; exp f32/f64, tanh f32, erf f32), within
// ~1.5 ULP of the true value and eager's libmvec within ~2.5, so within 4 ULP of each
// other; logistic = 1 / (1 + exp(-x)) adds two roundings: 6.
constexpr uint64_t kMathUlp = 0;
constexpr uint64_t kInlineUlp = 4;
constexpr uint64_t kInlineLogisticUlp = 6;
constexpr double kFloat64Eps = 2.220446049250313e-16;

OpCall unary(Array (*f)(const Array&)) {
  return [f](std::span<const Array> a) { return std::vector<Array>{f(a[0])}; };
}
OpCall binary(Array (*f)(const Array&, const Array&)) {
  return [f](std::span<const Array> a) { return std::vector<Array>{f(a[0], a[1])}; };
}
template <class F>
OpCall one(F f) {
  return [f](std::span<const Array> a) { return std::vector<Array>{f(a)}; };
}

Array f64_matrix(const Shape& shape, uint64_t seed) { return uniform(shape, -1, 1, DType::Float64, seed); }

// b b^T + n I: symmetric positive definite, well conditioned.
Array spd(int64_t n, uint64_t seed) {
  Array b = f64_matrix({n, n}, seed);
  Array eye = jnp::eye(n, std::nullopt, 0, DType::Float64);
  return lax::add(lax::dot(b, lax::transpose(b, {1, 0})), lax::mul(eye, lax::broadcast_in_dim(Array(double(n)), {n, n}, {})));
}

// (x + x^T) / 2: cholesky and eigh read one triangle, their jvp rules assume symmetric
// tangents, so the derivative checks differentiate through the symmetrization.
Array symmetrize(const Array& x) {
  Array half = lax::broadcast_in_dim(lax::convert_element_type(Array(0.5), x.dtype()), x.shape(), {});
  return lax::mul(lax::add(x, lax::transpose(x, {1, 0})), half);
}

Array i32(std::vector<int32_t> v, const Shape& shape) { return Array(v, shape); }

// Shared gather/scatter layouts (gather_transforms_test has the full set).
// x[idx, :] for x of shape (5, 4).
const lax::GatherDimensionNumbers kGatherRows{{1}, {0}, {0}};
// Rows of updates written into rows of x.
const lax::ScatterDimensionNumbers kScatterRows{{1}, {0}, {0}};

// Row indices of (5, 4) operands: distinct (so scatter's derivative rules are exact and
// scatter has one winner per row), varying with the seed.
Array row_indices(uint64_t seed) {
  const int32_t a = static_cast<int32_t>(seed % 5);
  return i32({a, (a + 2) % 5, (a + 4) % 5}, {3, 1});
}

std::vector<Array> scatter_operands(uint64_t seed) {
  return {f64_matrix({5, 4}, seed), row_indices(seed), uniform({3, 4}, 0.5, 1.5, DType::Float64, seed + 1)};
}

OpCall scatter_call(Array (*f)(const Array&, const Array&, const Array&, const lax::ScatterDimensionNumbers&,
                               lax::GatherScatterMode)) {
  return [f](std::span<const Array> a) {
    return std::vector<Array>{f(a[0], a[1], a[2], kScatterRows, lax::GatherScatterMode::FillOrDrop)};
  };
}

// A call primitive's body.
Array body(const Array& x) { return lax::mul(lax::sin(x), x); }

std::vector<OpRow> build_rows() {
  const Domain positive{0.3, 3}, symmetric{-3, 3}, unit{-0.8, 0.8}, gamma{0.5, 4}, moderate{-2, 2};
  const DType i32t = DType::Int32, f64t = DType::Float64, c128 = DType::Complex128;
  std::vector<OpRow> r;
  auto smooth_unary = [&](const char* name, Array (*f)(const Array&), Domain d, bool complex, bool libmvec,
                          uint64_t ulp = 0, Inline in = Inline::None, uint64_t in_ulp = 0) {
    r.push_back({.primitive = name, .call = unary(f), .smooth = d, .complex_derivatives = complex,
                 .second_order = true, .fixture = name, .calls_libmvec = libmvec, .jit_ulp = ulp,
                 .inline_dtypes = in, .inline_ulp = in_ulp,
                 // float64 inline polynomials (fixed or chosen): jit within inline_ulp of eager.
                 .jit_rtol = in != Inline::None ? 2.0 * in_ulp * kFloat64Eps : 0});
  };

  // ---- elementwise unary ----
  smooth_unary("exp", lax::exp, {-2, 2}, true, true, kMathUlp, Inline::Float32AndFloat64, kInlineUlp);
  smooth_unary("exp2", lax::exp2, {-2, 2}, true, true, kMathUlp);
  smooth_unary("log", lax::log, positive, true, true, kMathUlp, Inline::ByChoice, kInlineUlp);
  smooth_unary("log1p", lax::log1p, {-0.5, 2}, true, true, kMathUlp, Inline::ByChoice, kInlineUlp);
  smooth_unary("expm1", lax::expm1, {-2, 2}, true, true, kMathUlp, Inline::ByChoice, kInlineUlp);
  smooth_unary("sqrt", lax::sqrt, positive, true, false, 0);
  smooth_unary("rsqrt", lax::rsqrt, positive, true, false, 0);
  smooth_unary("cbrt", lax::cbrt, positive, false, true, kMathUlp);
  smooth_unary("sin", lax::sin, symmetric, true, true, kMathUlp, Inline::ByChoice, kInlineUlp);
  smooth_unary("cos", lax::cos, symmetric, true, true, kMathUlp, Inline::ByChoice, kInlineUlp);
  smooth_unary("tan", lax::tan, {-1.2, 1.2}, true, true, kMathUlp, Inline::ByChoice, kInlineUlp);
  smooth_unary("asin", lax::asin, unit, true, true, kMathUlp);
  smooth_unary("acos", lax::acos, unit, true, true, kMathUlp);
  smooth_unary("atan", lax::atan, symmetric, true, true, kMathUlp);
  smooth_unary("sinh", lax::sinh, {-2, 2}, true, true, kMathUlp);
  smooth_unary("cosh", lax::cosh, {-2, 2}, true, true, kMathUlp);
  smooth_unary("tanh", lax::tanh, {-2, 2}, true, true, kMathUlp, Inline::Float32, kInlineUlp);
  smooth_unary("asinh", lax::asinh, {-2, 2}, true, true, kMathUlp);
  smooth_unary("acosh", lax::acosh, {1.3, 3}, false, true, kMathUlp);
  smooth_unary("atanh", lax::atanh, unit, true, true, kMathUlp);
  smooth_unary("logistic", lax::logistic, symmetric, true, true, kMathUlp, Inline::Float32AndFloat64,
               kInlineLogisticUlp);
  smooth_unary("erf", lax::erf, {-2, 2}, false, true, kMathUlp, Inline::Float32, kInlineUlp);
  smooth_unary("erfc", lax::erfc, {-2, 2}, false, true, kMathUlp);
  smooth_unary("erf_inv", lax::erf_inv, unit, false, false, 0);  // the runtime helpers eager calls
  smooth_unary("lgamma", lax::lgamma, gamma, false, false, 0);   // lgamma' = digamma
  smooth_unary("digamma", lax::digamma, gamma, false, false, 0);  // digamma' = polygamma(1, x)
  smooth_unary("neg", lax::neg, symmetric, true, false, 0);
  // abs is not smooth at 0: the domain keeps away from it (unary_transforms_test also
  // takes both signs).
  smooth_unary("abs", lax::abs, positive, true, false, 0);
  // Flat (zero derivative almost everywhere): no finite differences in the transforms
  // tests; the generic check_grads sees zero on both sides of random non-integer values.
  for (auto [name, f] : {Unary{"sign", lax::sign}, Unary{"floor", lax::floor}, Unary{"ceil", lax::ceil}})
    r.push_back({.primitive = name, .call = unary(f), .fixture = name, .jit_ulp = 0});
  r.push_back({.primitive = "round", .variant = "away", .call = one([](auto a) { return lax::round(a[0], lax::RoundingMethod::AwayFromZero); }),
               .params = {{"rounding_method", int64_t{0}}}, .fixture = "round_away", .jit_ulp = 0});
  r.push_back({.primitive = "round", .variant = "even", .call = one([](auto a) { return lax::round(a[0], lax::RoundingMethod::ToNearestEven); }),
               .params = {{"rounding_method", int64_t{1}}}, .fixture = "round_even", .jit_ulp = 0});
  r.push_back({.primitive = "is_finite", .call = unary(lax::is_finite), .fixture = "is_finite", .jit_ulp = 0});
  r.push_back({.primitive = "not", .call = unary(lax::bitwise_not), .dtypes = {i32t}, .smooth = Domain{-50, 50},
               .fixture = "not", .jit_ulp = 0});
  // Complex parts: native kernels refuse complex numbers (jit_scalar_ops_test's support
  // test), so no jit scalar-op row; derivatives in unary_transforms_test RealImagConj.
  for (auto [name, f] : {Unary{"real", lax::real}, Unary{"imag", lax::imag}, Unary{"conj", lax::conj}})
    r.push_back({.primitive = name, .call = unary(f), .dtypes = {c128}, .complex_derivatives = true, .fixture = name});
  r.push_back({.primitive = "stop_gradient", .call = unary(stop_gradient), .jit_ulp = 0,
               .skip = kCheckGrad,
               .skip_reason = "its derivative is zero by definition, so finite differences (which see the identity) disagree",
               .covered_by = "unary_transforms_test.cpp (StopGradient)"});
  for (int64_t y : {3, -2, 0, 2, 1}) {
    const std::string key = y < 0 ? "integer_pow_m" + std::to_string(-y) : "integer_pow_" + std::to_string(y);
    r.push_back({.primitive = "integer_pow", .variant = "y" + std::to_string(y),
                 .call = one([y](auto a) { return lax::integer_pow(a[0], y); }), .params = {{"y", y}},
                 .smooth = y < 0 ? Domain{0.5, 2} : Domain{-2, 2}, .second_order = true,
                 .fixture = y == 3 || y == -2 || y == 0 ? key : std::string()});
  }

  // ---- elementwise binary ----
  auto smooth_binary = [&](const char* name, const char* fixture, Array (*f)(const Array&, const Array&), Domain d,
                           bool libmvec = false, uint64_t ulp = 0) {
    r.push_back({.primitive = name, .arity = 2, .call = binary(f), .smooth = d, .second_order = true,
                 .fixture = fixture, .calls_libmvec = libmvec, .jit_ulp = ulp});
  };
  smooth_binary("add", "add", lax::add, moderate);
  smooth_binary("sub", "sub", lax::sub, moderate);
  smooth_binary("mul", "mul", lax::mul, moderate);
  smooth_binary("div", "div", lax::div, {0.5, 2});
  smooth_binary("pow", "pow", lax::pow, {0.5, 2}, true, kMathUlp);
  r.back().fixture_complex_tol_scale = 10;
  smooth_binary("max", "max", lax::max, moderate);
  smooth_binary("min", "min", lax::min, moderate);
  smooth_binary("atan2", "atan2", lax::atan2, {0.5, 2}, true, kMathUlp);
  // rem(x, y) = x - trunc(x / y) y: operands with x / y away from integers, so trunc is
  // locally constant.
  r.push_back({.primitive = "rem", .arity = 2, .call = binary(lax::rem), .second_order = true, .fixture = "rem",
               .jit_ulp = 0, .example = [](uint64_t seed) {
                 Array y = uniform({2, 3}, 0.5, 2, DType::Float64, seed);
                 Array q = uniform({2, 3}, -3, 3, DType::Float64, seed + 1);  // integer part, then a fraction
                 Array frac = uniform({2, 3}, 0.2, 0.8, DType::Float64, seed + 2);
                 Array x = lax::mul(lax::add(lax::floor(q), frac), y);
                 return std::vector<Array>{x, y};
               }});
  // Negative bases are fine with integer exponents; the exponent carries no tangent.
  r.push_back({.primitive = "pow", .variant = "int_exponent", .arity = 2, .call = binary(lax::pow),
               .dtypes = {f64t, i32t}, .smooth = Domain{-3, 3}, .second_order = true});
  r.push_back({.primitive = "nextafter", .arity = 2, .call = binary(lax::nextafter), .fixture = "nextafter", .jit_ulp = 0});
  // JAX's polygamma and zeta: differentiable in x (polygamma) and q (zeta) only.
  r.push_back({.primitive = "polygamma", .arity = 2, .call = binary(lax::polygamma), .second_order = true,
               .jit_ulp = 0, .example = [](uint64_t seed) {
                 Array m = lax::floor(uniform({2, 3}, 0, 4, DType::Float64, seed));
                 return std::vector<Array>{m, uniform({2, 3}, 0.5, 4, DType::Float64, seed + 1)};
               }, .fixed_operands = 1});
  r.push_back({.primitive = "zeta", .arity = 2, .call = binary(lax::zeta), .second_order = true, .jit_ulp = 0,
               .example = [](uint64_t seed) {
                 return std::vector<Array>{uniform({2, 3}, 1.5, 4, DType::Float64, seed),
                                           uniform({2, 3}, 0.5, 3, DType::Float64, seed + 1)};
               }, .fixed_operands = 1});
  for (auto [name, f] : {Binary{"and", lax::bitwise_and}, Binary{"or", lax::bitwise_or}, Binary{"xor", lax::bitwise_xor}})
    r.push_back({.primitive = name, .arity = 2, .call = binary(f), .dtypes = {i32t, i32t}, .smooth = Domain{-50, 50},
                 .fixture = name, .jit_ulp = 0});
  r.push_back({.primitive = "or", .variant = "bool", .arity = 2, .call = binary(lax::bitwise_or),
               .dtypes = {DType::Bool, DType::Bool}});
  for (auto [name, f] : {Binary{"shift_left", lax::shift_left}, Binary{"shift_right_logical", lax::shift_right_logical},
                         Binary{"shift_right_arithmetic", lax::shift_right_arithmetic}})
    r.push_back({.primitive = name, .arity = 2, .call = binary(f), .dtypes = {i32t, i32t}, .fixture = name,
                 .jit_ulp = 0, .example = [](uint64_t seed) {
                   return std::vector<Array>{uniform({2, 3}, -50, 50, DType::Int32, seed),
                                             uniform({2, 3}, 0, 8, DType::Int32, seed + 1)};
                 }});
  for (auto [name, f] : {Binary{"eq", lax::eq}, Binary{"ne", lax::ne}, Binary{"lt", lax::lt},
                         Binary{"le", lax::le}, Binary{"gt", lax::gt}, Binary{"ge", lax::ge}})
    r.push_back({.primitive = name, .arity = 2, .call = binary(f), .fixture = name, .jit_ulp = 0});
  r.push_back({.primitive = "eq", .variant = "int", .arity = 2, .call = binary(lax::eq), .dtypes = {i32t, i32t},
               .smooth = Domain{-2, 2}});

  // ---- the rest of the elementwise family ----
  r.push_back({.primitive = "clamp", .arity = 3, .call = one([](auto a) { return lax::clamp(a[0], a[1], a[2]); }),
               .second_order = true, .jit_ulp = 0, .example = [](uint64_t seed) {
                 return std::vector<Array>{uniform({2, 3}, -2, -0.5, DType::Float64, seed),
                                           uniform({2, 3}, -3, 3, DType::Float64, seed + 1),
                                           uniform({2, 3}, 0.5, 2, DType::Float64, seed + 2)};
               }});
  r.push_back({.primitive = "select_n", .variant = "bool", .arity = 3,
               .call = one([](auto a) { return lax::select_n(a[0], {a[1], a[2]}); }),
               .dtypes = {DType::Bool, f64t, f64t}, .smooth = Domain{-2, 2}, .second_order = true});
  r.push_back({.primitive = "select_n", .variant = "int", .arity = 4,
               .call = one([](auto a) { return lax::select_n(a[0], {a[1], a[2], a[3]}); }), .second_order = true,
               .example = [](uint64_t seed) {
                 return std::vector<Array>{uniform({2, 3}, 0, 3, DType::Int32, seed), uniform({2, 3}, -2, 2, DType::Float64, seed + 1),
                                           uniform({2, 3}, -2, 2, DType::Float64, seed + 2),
                                           uniform({2, 3}, -2, 2, DType::Float64, seed + 3)};
               }});
  r.push_back({.primitive = "convert_element_type", .variant = "to_complex128",
               .call = one([](auto a) { return lax::convert_element_type(a[0], DType::Complex128); }),
               .params = {{"new_dtype", DType::Complex128}, {"weak_type", false}}, .second_order = true});
  r.push_back({.primitive = "convert_element_type", .variant = "to_int32",
               .call = one([](auto a) { return lax::convert_element_type(a[0], DType::Int32); }),
               .params = {{"new_dtype", DType::Int32}, {"weak_type", false}}});
  r.push_back({.primitive = "bitcast_convert_type", .variant = "to_int32",
               .call = one([](auto a) { return lax::bitcast_convert_type(a[0], DType::Int32); })});
  r.push_back({.primitive = "bitcast_convert_type", .variant = "to_float64",
               .call = one([](auto a) { return lax::bitcast_convert_type(a[0], DType::Float64); }), .dtypes = {DType::Int64},
               .smooth = Domain{0, 1e6}});

  // ---- shapes and data movement ----
  r.push_back({.primitive = "iota", .arity = 0, .call = one([](auto) { return lax::broadcasted_iota(DType::Float64, {2, 3}, 1); }),
               .example = [](uint64_t) { return std::vector<Array>{}; }, .skip = kCheckVmap | kCheckGrad,
               .skip_reason = "it has no operands to batch or differentiate", .covered_by = "lax_shape_test.cpp"});
  r.push_back({.primitive = "broadcast_in_dim", .call = one([](auto a) { return lax::broadcast_in_dim(a[0], {4, 2, 3}, {1, 2}); }),
               .second_order = true});
  r.push_back({.primitive = "reshape", .call = one([](auto a) { return lax::reshape(a[0], {3, 2}); }), .second_order = true});
  r.push_back({.primitive = "transpose", .call = one([](auto a) { return lax::transpose(a[0], {1, 0}); }), .second_order = true});
  r.push_back({.primitive = "squeeze", .call = one([](auto a) { return lax::squeeze(a[0], {1}); }), .second_order = true,
               .example = [](uint64_t seed) { return std::vector<Array>{f64_matrix({3, 1, 2}, seed)}; }});
  r.push_back({.primitive = "expand_dims", .call = one([](auto a) { return lax::expand_dims(a[0], {0, 2}); }), .second_order = true});
  r.push_back({.primitive = "rev", .call = one([](auto a) { return lax::rev(a[0], {0, 1}); }), .second_order = true});
  r.push_back({.primitive = "slice", .call = one([](auto a) { return lax::slice(a[0], {0, 1}, {2, 3}, {1, 1}); }),
               .second_order = true});
  r.push_back({.primitive = "slice", .variant = "strided", .call = one([](auto a) { return lax::slice(a[0], {1, 0}, {5, 4}, {2, 3}); }),
               .example = [](uint64_t seed) { return std::vector<Array>{f64_matrix({5, 4}, seed)}; }});
  r.push_back({.primitive = "dynamic_slice", .arity = 3,
               .call = one([](auto a) { return lax::dynamic_slice(a[0], {a[1], a[2]}, {2, 2}); }), .second_order = true,
               .example = [](uint64_t seed) {
                 // Starts in and out of range (clamped).
                 return std::vector<Array>{f64_matrix({4, 5}, seed), Array(static_cast<int32_t>(seed % 4)),
                                           Array(static_cast<int32_t>(seed % 7) - 1)};
               }});
  r.push_back({.primitive = "dynamic_update_slice", .arity = 4,
               .call = one([](auto a) { return lax::dynamic_update_slice(a[0], a[1], {a[2], a[3]}); }), .second_order = true,
               .example = [](uint64_t seed) {
                 return std::vector<Array>{f64_matrix({4, 5}, seed), f64_matrix({2, 3}, seed + 1),
                                           Array(static_cast<int32_t>(seed % 3)), Array(static_cast<int32_t>(seed % 5))};
               }});
  r.push_back({.primitive = "pad", .arity = 2,
               .call = one([](auto a) { return lax::pad(a[0], a[1], {{1, 0, 1}, {-1, 2, 0}}); }), .second_order = true,
               .example = [](uint64_t seed) {
                 return std::vector<Array>{f64_matrix({2, 3}, seed), uniform({}, -1, 1, DType::Float64, seed + 1)};
               }});
  r.push_back({.primitive = "concatenate", .arity = 2, .call = one([](auto a) { return lax::concatenate({a[0], a[1]}, 1); }),
               .second_order = true, .example = [](uint64_t seed) {
                 return std::vector<Array>{f64_matrix({2, 3}, seed), f64_matrix({2, 1}, seed + 1)};
               }});

  // ---- gather / scatter ----
  r.push_back({.primitive = "gather", .arity = 2,
               .call = one([](auto a) { return lax::gather(a[0], a[1], kGatherRows, {1, 4}); }), .second_order = true,
               .example = [](uint64_t seed) {
                 // A repeated row (sums in the transpose) and an out-of-range one (clamped).
                 const int32_t k = static_cast<int32_t>(seed % 5);
                 return std::vector<Array>{f64_matrix({5, 4}, seed), i32({k, 0, k, 7}, {4, 1})};
               }});
  r.push_back({.primitive = "gather", .variant = "fill", .arity = 2,
               .call = one([](auto a) {
                 return lax::gather(a[0], a[1], kGatherRows, {1, 4}, lax::GatherScatterMode::FillOrDrop, Array(0.25));
               }),
               .example = [](uint64_t seed) {
                 return std::vector<Array>{f64_matrix({5, 4}, seed), i32({1, 7, -1, static_cast<int32_t>(seed % 5)}, {4, 1})};
               }});
  r.push_back({.primitive = "scatter", .arity = 3, .call = scatter_call(lax::scatter), .example = scatter_operands});
  r.push_back({.primitive = "scatter_add", .arity = 3, .call = scatter_call(lax::scatter_add), .second_order = true,
               .example = [](uint64_t seed) {
                 // Repeated and dropped indices.
                 std::vector<Array> ops = scatter_operands(seed);
                 ops[1] = i32({1, 3, 1, 7}, {4, 1});
                 ops[2] = f64_matrix({4, 4}, seed + 2);
                 return ops;
               }});
  r.push_back({.primitive = "scatter_mul", .arity = 3, .call = scatter_call(lax::scatter_mul), .second_order = true,
               .example = scatter_operands});
  r.push_back({.primitive = "scatter_min", .arity = 3, .call = scatter_call(lax::scatter_min), .example = scatter_operands});
  r.push_back({.primitive = "scatter_max", .arity = 3, .call = scatter_call(lax::scatter_max), .example = scatter_operands});

  // ---- reductions and cumulative ----
  auto reduction = [&](const char* name, Array (*f)(const Array&, const std::vector<int64_t>&), DType d, Domain dom) {
    r.push_back({.primitive = name, .call = one([f](auto a) { return f(a[0], {1}); }), .dtypes = {d}, .smooth = dom,
                 .second_order = true,
                 // Eager sums pairwise, kernels vectorize: float sums and products may round
                 // differently.
                 .jit_rtol = is_floating(d) ? 1e-14 : 0});
  };
  reduction("reduce_sum", lax::reduce_sum, f64t, moderate);
  reduction("reduce_prod", lax::reduce_prod, f64t, {0.5, 1.5});
  reduction("reduce_max", lax::reduce_max, f64t, moderate);
  reduction("reduce_min", lax::reduce_min, f64t, moderate);
  reduction("reduce_and", lax::reduce_and, DType::Bool, moderate);
  reduction("reduce_or", lax::reduce_or, DType::Bool, moderate);
  r.push_back({.primitive = "reduce_sum", .variant = "all_axes", .call = one([](auto a) { return lax::reduce_sum(a[0], {0, 1}); }),
               .jit_rtol = 1e-14});
  r.push_back({.primitive = "argmax", .call = one([](auto a) { return lax::argmax(a[0], 1, DType::Int64); })});
  r.push_back({.primitive = "argmin", .call = one([](auto a) { return lax::argmin(a[0], 0, DType::Int32); })});
  for (auto [name, f] : {Cumulative{"cumsum", lax::cumsum}, Cumulative{"cumprod", lax::cumprod},
                         Cumulative{"cummax", lax::cummax}, Cumulative{"cummin", lax::cummin}}) {
    r.push_back({.primitive = name, .call = one([f](auto a) { return f(a[0], 1, false); }), .smooth = Domain{0.5, 1.5},
                 .second_order = true});
    r.push_back({.primitive = name, .variant = "reverse", .call = one([f](auto a) { return f(a[0], 0, true); }),
                 .smooth = Domain{0.5, 1.5}});
  }
  r.push_back({.primitive = "sort", .call = one([](auto a) { return lax::sort(a[0], 1); }), .second_order = true});
  // Two operands sorted by the first: the second follows its permutation.
  r.push_back({.primitive = "sort", .variant = "two_operands", .arity = 2,
               .call = [](std::span<const Array> a) { return lax::sort({a[0], a[1]}, 0, true, 1); }});

  // ---- linear algebra ----
  r.push_back({.primitive = "dot_general", .arity = 2,
               .call = one([](auto a) { return lax::dot_general(a[0], a[1], {{2}, {1}, {0}, {0}}); }), .second_order = true,
               .example = [](uint64_t seed) {
                 return std::vector<Array>{f64_matrix({2, 3, 4}, seed), f64_matrix({2, 4, 2}, seed + 1)};
               },
               .jit_rtol = 1e-14});
  r.push_back({.primitive = "conv_general_dilated", .arity = 2,
               .call = one([](auto a) { return lax::conv_general_dilated(a[0], a[1], {1, 2}, {{1, 0}, {0, 1}}, {}, {1, 2}); }),
               .second_order = true,
               .example = [](uint64_t seed) {
                 return std::vector<Array>{f64_matrix({1, 2, 4, 5}, seed), f64_matrix({3, 2, 2, 2}, seed + 1)};
               },
               .jit_rtol = 1e-14});
  r.push_back({.primitive = "triangular_solve", .arity = 2,
               .call = one([](auto a) { return lax::triangular_solve(a[0], a[1], true, true); }), .second_order = true,
               .example = [](uint64_t seed) {
                 // A well-conditioned lower triangle (the other half is not read).
                 Array a = lax::add(f64_matrix({3, 3}, seed), lax::mul(jnp::eye(3, std::nullopt, 0, DType::Float64),
                                                                       lax::broadcast_in_dim(Array(3.0), {3, 3}, {})));
                 return std::vector<Array>{a, f64_matrix({3, 2}, seed + 1)};
               }});
  r.push_back({.primitive = "cholesky", .call = one([](auto a) { return lax::cholesky(symmetrize(a[0])); }),
               .second_order = true, .example = [](uint64_t seed) { return std::vector<Array>{spd(3, seed)}; }});
  // lu's pivots and permutation are integer outputs; its factor is differentiable.
  r.push_back({.primitive = "lu",
               .call = [](std::span<const Array> a) {
                 lax::LuResult f = lax::lu(a[0]);
                 return std::vector<Array>{f.lu, f.pivots, f.permutation};
               },
               .example = [](uint64_t seed) { return std::vector<Array>{f64_matrix({3, 3}, seed)}; }});
  r.push_back({.primitive = "qr",
               .call = [](std::span<const Array> a) {
                 lax::QrResult f = lax::qr(a[0], false);
                 return std::vector<Array>{f.q, f.r};
               },
               .example = [](uint64_t seed) { return std::vector<Array>{f64_matrix({4, 3}, seed)}; }});
  // Eigen- and singular vectors through sign-invariant products (v * v).
  r.push_back({.primitive = "eigh",
               .call = [](std::span<const Array> a) {
                 lax::EighResult f = lax::eigh(symmetrize(a[0]));
                 return std::vector<Array>{f.eigenvalues, lax::mul(f.eigenvectors, f.eigenvectors)};
               },
               .example = [](uint64_t seed) { return std::vector<Array>{f64_matrix({3, 3}, seed)}; }});
  r.push_back({.primitive = "svd",
               .call = [](std::span<const Array> a) {
                 lax::SvdResult f = lax::svd(a[0], false, true);
                 return std::vector<Array>{f.s, lax::mul(f.u, f.u), lax::mul(f.vh, f.vh)};
               },
               .example = [](uint64_t seed) { return std::vector<Array>{f64_matrix({4, 3}, seed)}; }});

  // ---- PRNG ----
  r.push_back({.primitive = "threefry2x32", .arity = 4,
               .call = [](std::span<const Array> a) {
                 auto [y0, y1] = lax::threefry2x32(a[0], a[1], a[2], a[3]);
                 return std::vector<Array>{y0, y1};
               },
               .example = [](uint64_t seed) {
                 std::vector<Array> ops;
                 for (uint64_t k = 0; k < 4; ++k) ops.push_back(uniform({5}, 0, 4e9, DType::UInt32, seed + k));
                 return ops;
               }});

  // ---- call primitives ----
  r.push_back({.primitive = "closed_call", .call = one([](auto a) { return named_call(body, "op_table_body")(a[0]); }),
               .second_order = true});
  // jit binds its primitive only under a transformation (eagerly it runs the executable):
  // the vmap and grad checks see the `jit` equation; grad's linearization splits it into
  // jit and linear_jit and transposes the latter.
  r.push_back({.primitive = "jit", .call = one([](auto a) {
                 static const auto jitted = jx::jit(body, JitOptions{.name = "op_table_body"});
                 return jitted(a[0]);
               }),
               .second_order = true});
  r.push_back({.primitive = "linear_jit", .call = one([](auto a) {
                 static const auto jitted = jx::jit(body, JitOptions{.name = "op_table_linear"});
                 return jitted(a[0]);
               }),
               .skip = kCheckJit | kCheckVmap,
               .skip_reason = "it is made only by linearizing a jit equation (the grad check does that, and transposes it)",
               .covered_by = "jit_primitive_test.cpp"});
  // Control flow (cond_test.cpp, while_loop_test.cpp, while_grad_test.cpp; reverse mode
  // through while needs max_steps): the predicate depends on the
  // operand, so the vmap check runs the batched-predicate rules.
  r.push_back({.primitive = "cond", .call = one([](auto a) {
                 return lax::cond(jnp::sum(a[0]) > 0.0, [](const Array& x) { return body(x); },
                                  [](const Array& x) { return lax::cos(x); }, a[0]);
               }),
               .second_order = true});
  r.push_back({.primitive = "while", .call = one([](auto a) {
                 using Carry = std::tuple<Array, Array>;
                 auto [i, x] = lax::while_loop([](const Carry& c) { return std::get<0>(c) < 3; },
                                               [](const Carry& c) { return Carry{std::get<0>(c) + 1, body(std::get<1>(c))}; },
                                               Carry{Array(0), a[0]}, {.max_steps = 5});
                 return x;
               })});
  // jnp functions with JAX's derivative rules stage to custom_jvp_call.
  r.push_back({.primitive = "custom_jvp_call", .arity = 2, .call = binary(jnp::logaddexp), .second_order = true});
  // jx::custom_vmap stages to custom_vmap_call; its rule here is sin's own batching, so the
  // vmap check (against a loop) holds (custom_derivatives_test.cpp checks the rule is used).
  r.push_back({.primitive = "custom_vmap_call", .call = one([](auto a) {
                 static const auto f = custom_vmap([](const Array& x) { return lax::sin(x); },
                                                   [](int64_t, const std::vector<bool>& batched, const Array& x) {
                                                     return std::pair{lax::sin(x), batched[0]};
                                                   });
                 return f(a[0]);
               }),
               .second_order = true});
  // jx::custom_vjp stages to custom_vjp_call (reverse mode runs its bwd, which a
  // linearized program holds as custom_lin until transposed). Forward mode raises, as in
  // JAX, so check_grads (which takes jvps) does not apply.
  r.push_back({.primitive = "custom_vjp_call", .call = one([](auto a) {
                 static const auto f = custom_vjp([](const Array& x) { return lax::sin(x); },
                                                  [](const Array& x) { return std::pair{lax::sin(x), lax::cos(x)}; },
                                                  [](const Array& c, const Array& g) { return std::tuple{lax::mul(c, g)}; });
                 return f(a[0]);
               }),
               .skip = kCheckGrad,
               .skip_reason = "forward-mode differentiation of a custom_vjp function raises, as in JAX",
               .covered_by = "custom_vjp_test.cpp (reverse mode against finite differences)"});
  r.push_back({.primitive = "custom_lin", .call = one([](auto a) {
                 static const auto f = custom_vjp([](const Array& x) { return lax::sin(x); },
                                                  [](const Array& x) { return std::pair{lax::sin(x), lax::cos(x)}; },
                                                  [](const Array& c, const Array& g) { return std::tuple{lax::mul(c, g)}; });
                 return jx::grad([&](const Array& x) { return numpy::sum(f(x)); })(a[0]);
               }),
               .skip = kCheckJit | kCheckVmap | kCheckGrad,
               .skip_reason = "custom_lin lives only in linearized programs, between partial evaluation and transposition",
               .covered_by = "custom_vjp_test.cpp"});
  // while_backward: the backward pass of a while loop without max_steps under jit.
  r.push_back({.primitive = "while_backward", .call = one([](auto a) {
                 auto loss = [](const Array& x) {
                   return numpy::sum(lax::while_loop([](const Array& v) { return numpy::sum(v) < 10.0; },
                                                     [](const Array& v) { return lax::mul(v, lax::sin(v)); }, x));
                 };
                 return jx::jit(jx::grad(loss))(a[0]);
               }),
               .skip = kCheckJit | kCheckVmap | kCheckGrad,
               .skip_reason = "while_backward is staged only by jit(grad) of an unbounded while_loop; it is neither "
                              "differentiated nor batched over its known operands",
               .covered_by = "while_grad_test.cpp (against eager and the unrolled loop)"});
  // ---- collectives: over the axis of a vmap naming it (pmap_test.cpp runs them on devices) ----
  auto over_lanes = [](auto f) {
    return one([f](auto a) { return jx::vmap([f](const Array& x) { return f(x); }, {.axis_name = "r"})(a[0]); });
  };
  // A collective needs a bound axis: these rows bind it with vmap's axis_name, whose
  // batching rule computes across the lanes, so no staged program holds it at top level.
  static const char* const kLanesOnly = "a collective runs here under vmap's named axis, which computes it across lanes";
  auto lanes = [](uint64_t seed) { return std::vector<Array>{uniform({2, 2, 3}, -2, 2, DType::Float64, seed)}; };
  r.push_back({.primitive = "psum", .call = over_lanes([](const Array& x) { return lax::psum(x, "r"); }),
               .second_order = true, .example = lanes, .skip = kCheckJit, .skip_reason = kLanesOnly, .covered_by = "pmap_test.cpp (pmap and jit of pmap)"});
  r.push_back({.primitive = "pmax", .call = over_lanes([](const Array& x) { return lax::pmax(x, "r"); }),
               .example = lanes, .skip = kCheckJit, .skip_reason = kLanesOnly, .covered_by = "pmap_test.cpp (pmap and jit of pmap)"});
  r.push_back({.primitive = "pmin", .call = over_lanes([](const Array& x) { return lax::pmin(x, "r"); }),
               .example = lanes, .skip = kCheckJit, .skip_reason = kLanesOnly, .covered_by = "pmap_test.cpp (pmap and jit of pmap)"});
  r.push_back({.primitive = "all_gather",
               .call = over_lanes([](const Array& x) { return lax::all_gather(x, "r", {.axis = 1}); }),
               .second_order = true, .example = lanes, .skip = kCheckJit, .skip_reason = kLanesOnly, .covered_by = "pmap_test.cpp (pmap and jit of pmap)"});
  r.push_back({.primitive = "psum_scatter", .call = over_lanes([](const Array& x) { return lax::psum_scatter(x, "r"); }),
               .second_order = true, .example = lanes, .skip = kCheckJit, .skip_reason = kLanesOnly, .covered_by = "pmap_test.cpp (pmap and jit of pmap)"});
  r.push_back({.primitive = "ppermute",
               .call = over_lanes([](const Array& x) { return lax::ppermute(x, "r", {{0, 1}, {1, 0}}); }),
               .second_order = true, .example = lanes, .skip = kCheckJit, .skip_reason = kLanesOnly, .covered_by = "pmap_test.cpp (pmap and jit of pmap)"});
  r.push_back({.primitive = "all_to_all",
               .call = over_lanes([](const Array& x) { return lax::all_to_all(x, "r", 0, 1); }),
               .second_order = true, .example = lanes, .skip = kCheckJit, .skip_reason = kLanesOnly, .covered_by = "pmap_test.cpp (pmap and jit of pmap)"});
  r.push_back({.primitive = "axis_index",
               .call = over_lanes([](const Array& x) {
                 return lax::mul(x, lax::convert_element_type(
                                        lax::broadcast_in_dim(lax::axis_index("r"), x.shape(), {}), x.dtype()));
               }),
               .example = lanes, .skip = kCheckJit, .skip_reason = kLanesOnly, .covered_by = "pmap_test.cpp (pmap and jit of pmap)"});
  // shard_map over one device; linear_shard_map is its reverse-mode half.
  auto sharded_sin = [](auto a) {
    static const auto f = jx::shard_map([](const Array& b) { return lax::sin(b); }, jx::Mesh({jx::devices()[0]}, "d"),
                                        {jx::P("d")}, {jx::P("d")});
    return f(a[0]);
  };
  r.push_back({.primitive = "shard_map", .call = one(sharded_sin), .second_order = true});
  r.push_back({.primitive = "linear_shard_map", .call = one([sharded_sin](auto a) {
                 return jx::grad([&](const Array& x) { return numpy::sum(sharded_sin(std::vector<Array>{x})); })(a[0]);
               }),
               .skip = kCheckJit | kCheckVmap | kCheckGrad,
               .skip_reason = "it is made only by linearizing a shard_map (the grad check of shard_map does that)",
               .covered_by = "pmap_test.cpp"});
  // ---- control flow ----
  // A carry through the rows of x (init: its first row), each step emitting a y.
  r.push_back({.primitive = "scan", .call = [](std::span<const Array> a) {
                 const Array& x = a[0];
                 Array init = lax::squeeze(lax::slice(x, {0, 0}, {1, x.shape(1)}), {0});
                 auto [c, ys] = lax::scan([](const Array& c, const Array& xi) {
                   Array next = lax::add(lax::mul(c, lax::sin(xi)), xi);
                   return std::pair(next, lax::mul(next, c));
                 }, init, x);
                 return std::vector<Array>{c, ys};
               },
               .second_order = true});
  // Rematerialization (checkpoint_test.cpp): a checkpointed body naming an intermediate.
  r.push_back({.primitive = "checkpoint", .call = one([](auto a) {
                 auto f = jx::checkpoint([](const Array& x) { return body(jx::checkpoint_name(body(x), "h")); },
                                         {.policy = jx::checkpoint_policies::save_only_these_names({"h"})});
                 return f(a[0]);
               }),
               .second_order = true});
  r.push_back({.primitive = "checkpoint_name", .call = one([](auto a) { return jx::checkpoint_name(a[0], "n"); }),
               .second_order = true});
  r.push_back({.primitive = "optimization_barrier", .call = unary(lax::sin),
               .skip = kCheckJit | kCheckVmap | kCheckGrad,
               .skip_reason = "only checkpoint's partial evaluation makes it, in the recomputation",
               .covered_by = "checkpoint_test.cpp"});
  // No lax call makes a fusion equation; `call` is the elementwise op such a kernel
  // would hold (unused: every generic check is skipped).
  r.push_back({.primitive = "fusion", .call = unary(lax::exp),
               .skip = kCheckJit | kCheckVmap | kCheckGrad,
               .skip_reason = "only the jit's fusion pass makes it, in optimized programs",
               .covered_by = "jit_fusion_test.cpp"});
  // A host callback with no results: nothing for the generic value checks to compare.
  r.push_back({.primitive = "debug_callback", .call = unary(lax::exp),
               .skip = kCheckJit | kCheckVmap | kCheckGrad,
               .skip_reason = "an effect without results; its output is host text or a host call",
               .covered_by = "debug_test.cpp"});
  return r;
}

}  // namespace

uint64_t OpRow::jit_ulp_for(DType d) const {
  bool is_inline = (d == DType::Float32 && (inline_dtypes == Inline::Float32 || inline_dtypes == Inline::Float32AndFloat64)) ||
                   (d == DType::Float64 && inline_dtypes == Inline::Float32AndFloat64);
  // A row with fixed inline dtypes may also be chosen inline for others (tanh: float32
  // is an odd rational, float64 fast_functions.h's code where it measured faster).
  if (inline_dtypes != Inline::None && (d == DType::Float32 || d == DType::Float64))
    for (math::FastFunction f : math::kFastFunctions)
      if (primitive == math::fast_function_name(f))
        is_inline = is_inline || compiler::codegen::inline_fast_function(f, d, cpu::vector_isa());
  return is_inline ? inline_ulp : jit_ulp.value_or(0);
}

std::vector<Array> OpRow::operands(uint64_t seed) const {
  if (example) return example(seed);
  const Domain d = smooth.value_or(Domain{-2, 2});
  std::vector<Array> out;
  for (int i = 0; i < arity; ++i) {
    const DType t = dtypes.empty() ? DType::Float64 : dtypes[static_cast<size_t>(i)];
    out.push_back(uniform({2, 3}, d.lo, d.hi, t, seed + 101 * static_cast<uint64_t>(i)));
  }
  return out;
}

Array uniform(const Shape& shape, double lo, double hi, DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  const int64_t n = shape_size(shape);
  if (is_complex(dtype)) {
    std::vector<complex128_t> v(static_cast<size_t>(n));
    for (auto& z : v) z = complex128_t(u(rng), u(rng));
    return lax::convert_element_type(Array(v, shape), dtype);
  }
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    x = u(rng);
    if (dtype == DType::Bool) x = x >= (lo + hi) / 2 ? 1 : 0;
    else if (!is_inexact(dtype)) x = std::floor(x);
  }
  return lax::convert_element_type(Array(v, shape), dtype);
}

const std::vector<OpRow>& rows() {
  static const std::vector<OpRow> table = build_rows();
  return table;
}

std::vector<const OpRow*> rows_of(std::string_view primitive) {
  std::vector<const OpRow*> out;
  for (const OpRow& row : rows())
    if (row.primitive == primitive) out.push_back(&row);
  return out;
}

const OpRow* row_with_fixture(std::string_view key) {
  for (const OpRow& row : rows())
    if (!row.fixture.empty() && row.fixture == key) return &row;
  return nullptr;
}

}  // namespace jx::op_table
