// CPU kernels of the elementwise unary primitives (their rules: src/lax/elementwise_unary.cpp).
// float32/float64 transcendentals go to libmvec (`vec`); float16 and bfloat16 compute in
// float32; complex inputs use std::complex (glibc's c* functions).
#include <cmath>
#include <complex>
#include <numbers>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/vector_math.h"
#include "core/array_internal.h"

namespace jx::cpu {
namespace {

using namespace kinds;

// ---- complex helpers std::complex lacks ----

// log(1 + z) without losing the digits of a small z in 1 + z.
template <class R>
std::complex<R> complex_log1p(std::complex<R> z) {
  if (std::abs(z) >= R(0.5)) return std::log(R(1) + z);
  R x = z.real(), y = z.imag();
  // |1 + z|^2 = 1 + t with t = 2x + x^2 + y^2.
  return {R(0.5) * std::log1p(x * (R(2) + x) + y * y), std::atan2(y, R(1) + x)};
}

// exp(z) - 1, with e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y/2).
template <class R>
std::complex<R> complex_expm1(std::complex<R> z) {
  R x = z.real(), y = z.imag();
  if (y == 0) return {std::expm1(x), y};
  R s = std::sin(y * R(0.5));
  return {std::expm1(x) * std::cos(y) - R(2) * s * s, std::exp(x) * std::sin(y)};
}

// ---- op functors (see cpu/elementwise.h for the protocol) ----

struct Neg {
  template <Number C>
  C operator()(C x) const { return wrap_neg(x); }
};
struct Abs {
  template <Int C>
    requires std::is_signed_v<C>
  C operator()(C x) const { return x < 0 ? wrap_neg(x) : x; }  // abs(INT_MIN) wraps to INT_MIN
  template <Real C>
  C operator()(C x) const { return std::fabs(x); }
  template <Complex C>
  typename C::value_type operator()(C z) const { return std::abs(z); }
};
struct Sign {
  template <Int C>
  C operator()(C x) const {
    if constexpr (std::is_signed_v<C>) return static_cast<C>((x > 0) - (x < 0));
    else return static_cast<C>(x != 0);
  }
  template <Real C>
  C operator()(C x) const { return x > 0 ? C(1) : x < 0 ? C(-1) : x; }  // keeps ±0 and NaN
  template <Complex C>
  C operator()(C z) const {
    auto r = std::abs(z);
    return r == 0 ? C(0) : z / r;
  }
};
struct Floor {
  template <Real C>
  C operator()(C x) const { return std::floor(x); }
};
struct Ceil {
  template <Real C>
  C operator()(C x) const { return std::ceil(x); }
};
struct RoundAwayFromZero {
  template <Real C>
  C operator()(C x) const { return std::round(x); }
};
struct RoundToNearestEven {
  template <Real C>
  C operator()(C x) const { return std::nearbyint(x); }  // the default rounding mode is to nearest even
};
struct Exp {
  static constexpr VecOp vec = VecOp::Exp;
  template <Complex C>
  C operator()(C z) const { return std::exp(z); }
};
struct Exp2 {
  static constexpr VecOp vec = VecOp::Exp2;
  template <Complex C>
  C operator()(C z) const { return std::exp(z * std::numbers::ln2_v<typename C::value_type>); }
};
struct Log {
  static constexpr VecOp vec = VecOp::Log;
  template <Complex C>
  C operator()(C z) const { return std::log(z); }
};
struct Log1p {
  static constexpr VecOp vec = VecOp::Log1p;
  template <Complex C>
  C operator()(C z) const { return complex_log1p(z); }
};
struct Expm1 {
  static constexpr VecOp vec = VecOp::Expm1;
  template <Complex C>
  C operator()(C z) const { return complex_expm1(z); }
};
struct Sqrt {  // sqrtps/sqrtpd: the compiler vectorizes this one itself
  template <Inexact C>
  C operator()(C x) const { return std::sqrt(x); }
};
struct Rsqrt {
  template <Inexact C>
  C operator()(C x) const { return C(1) / std::sqrt(x); }
};
struct Cbrt {
  static constexpr VecOp vec = VecOp::Cbrt;
};

// Functions whose float form is libmvec's and whose complex form is std::complex's.
#define JX_VEC_OP_WITH_COMPLEX(Name, fn)            \
  struct Name {                                     \
    static constexpr VecOp vec = VecOp::Name;       \
    template <Complex C>                            \
    C operator()(C z) const { return std::fn(z); }  \
  };
JX_VEC_OP_WITH_COMPLEX(Sin, sin)
JX_VEC_OP_WITH_COMPLEX(Cos, cos)
JX_VEC_OP_WITH_COMPLEX(Tan, tan)
JX_VEC_OP_WITH_COMPLEX(Asin, asin)
JX_VEC_OP_WITH_COMPLEX(Acos, acos)
JX_VEC_OP_WITH_COMPLEX(Atan, atan)
JX_VEC_OP_WITH_COMPLEX(Sinh, sinh)
JX_VEC_OP_WITH_COMPLEX(Cosh, cosh)
JX_VEC_OP_WITH_COMPLEX(Tanh, tanh)
JX_VEC_OP_WITH_COMPLEX(Asinh, asinh)
JX_VEC_OP_WITH_COMPLEX(Acosh, acosh)
JX_VEC_OP_WITH_COMPLEX(Atanh, atanh)
#undef JX_VEC_OP_WITH_COMPLEX

struct Logistic {
  // 1 / (1 + exp(-x)), with the exp vectorized; the output buffer holds the temporary.
  template <Real C>
  void block(const C* x, C* y, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) y[i] = -x[i];
    vec_unary(VecOp::Exp, y, y, n);
    for (int64_t i = 0; i < n; ++i) y[i] = C(1) / (C(1) + y[i]);
  }
  template <Complex C>
  C operator()(C z) const { return C(1) / (C(1) + std::exp(-z)); }
};
struct Erf {
  // float32 (and the half types, computed in it): the polynomial jit kernels inline, so
  // eager and jit agree bit for bit; float64: libmvec, as jit calls it.
  template <Real C>
  void block(const C* x, C* y, int64_t n) const {
    if constexpr (std::is_same_v<C, float>) erf_f32(x, y, n);
    else vec_unary(VecOp::Erf, x, y, n);
  }
};
struct Erfc {
  static constexpr VecOp vec = VecOp::Erfc;
};
struct ErfInv {
  template <Real C>
  C operator()(C x) const { return static_cast<C>(erf_inv(static_cast<double>(x))); }
};
struct Lgamma {
  template <Real C>
  C operator()(C x) const { return lgamma(x); }
};
struct Digamma {
  template <Real C>
  C operator()(C x) const { return static_cast<C>(digamma(static_cast<double>(x))); }
};
struct IsFinite {
  template <Real C>
  bool operator()(C x) const { return std::isfinite(x); }
};
struct Not {
  bool operator()(bool x) const { return !x; }
  template <Int C>
  C operator()(C x) const { return static_cast<C>(~x); }
};
struct RealPart {
  template <Complex C>
  typename C::value_type operator()(C z) const { return z.real(); }
};
struct ImagPart {
  template <Complex C>
  typename C::value_type operator()(C z) const { return z.imag(); }
};
struct Conj {
  template <Complex C>
  C operator()(C z) const { return std::conj(z); }
  template <Real C>
  std::complex<C> operator()(C x) const { return {x, -C(0)}; }  // x - 0j, as NumPy prints it
};

std::vector<Array> round_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
  Array out = detail::alloc_array(out_avals[0]);
  if (params.get_int("rounding_method") == 0) apply_unary("round", RoundAwayFromZero{}, in[0], out);
  else apply_unary("round", RoundToNearestEven{}, in[0], out);
  return {out};
}

}  // namespace

void add_unary_kernels(detail::KernelTable& table) {
  table.add("neg", unary_impl<Neg>("neg"));
  table.add("abs", unary_impl<Abs>("abs"));
  table.add("sign", unary_impl<Sign>("sign"));
  table.add("floor", unary_impl<Floor>("floor"));
  table.add("ceil", unary_impl<Ceil>("ceil"));
  table.add("round", round_impl);
  table.add("exp", unary_impl<Exp>("exp"));
  table.add("exp2", unary_impl<Exp2>("exp2"));
  table.add("log", unary_impl<Log>("log"));
  table.add("log1p", unary_impl<Log1p>("log1p"));
  table.add("expm1", unary_impl<Expm1>("expm1"));
  table.add("sqrt", unary_impl<Sqrt>("sqrt"));
  table.add("rsqrt", unary_impl<Rsqrt>("rsqrt"));
  table.add("cbrt", unary_impl<Cbrt>("cbrt"));
  table.add("sin", unary_impl<Sin>("sin"));
  table.add("cos", unary_impl<Cos>("cos"));
  table.add("tan", unary_impl<Tan>("tan"));
  table.add("asin", unary_impl<Asin>("asin"));
  table.add("acos", unary_impl<Acos>("acos"));
  table.add("atan", unary_impl<Atan>("atan"));
  table.add("sinh", unary_impl<Sinh>("sinh"));
  table.add("cosh", unary_impl<Cosh>("cosh"));
  table.add("tanh", unary_impl<Tanh>("tanh"));
  table.add("asinh", unary_impl<Asinh>("asinh"));
  table.add("acosh", unary_impl<Acosh>("acosh"));
  table.add("atanh", unary_impl<Atanh>("atanh"));
  table.add("logistic", unary_impl<Logistic>("logistic"));
  table.add("erf", unary_impl<Erf>("erf"));
  table.add("erfc", unary_impl<Erfc>("erfc"));
  table.add("erf_inv", unary_impl<ErfInv>("erf_inv"));
  table.add("lgamma", unary_impl<Lgamma>("lgamma"));
  table.add("digamma", unary_impl<Digamma>("digamma"));
  table.add("is_finite", unary_impl<IsFinite>("is_finite"));
  table.add("not", unary_impl<Not>("not"));
  table.add("real", unary_impl<RealPart>("real"));
  table.add("imag", unary_impl<ImagPart>("imag"));
  table.add("conj", unary_impl<Conj>("conj"));
}

}  // namespace jx::cpu
