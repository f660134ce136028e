#include "backend/cpu/inline_math.h"

#include "jx/error.h"

namespace jx::cpu {

// The choice, per ISA: only where the inline code measured faster than libmvec's variant
// in fused kernels (bench/fast_math_bench re-measures on any CPU). Eager runs the same
// code wherever kernels do, so the two agree bit for bit either way; float32 log1p keeps
// libmvec's variant everywhere, which keeps random.normal's and truncated_normal's
// samples (through erf_inv's log1p) what they were.
//
// AVX2, measured on an AMD EPYC Zen 1, 2 threads, 64K-element kernels, ns per element
// inline / libmvec: float32 expm1 0.56 / 0.74 (expm1(x) x: 0.60 / 0.79) is inline, and
// so is float64 tanh (expm1's form, measured later on a slower day of the same machine
// with bench/fast_math_bench: 3.7-4.2 / 5.3, and the GELU of a 256 x 256 float64 matrix
// as a jit kernel 0.26 -> 0.18 ms; float32 tanh keeps the odd rational). Within noise and
// so left on libmvec: float32 sin 0.500 / 0.507. libmvec ahead: float32 cos 0.59 / 0.50,
// tan 0.84 / 0.71, log 0.61 / 0.49 and every other float64 function (sin 1.42 / 1.27,
// log 1.88 / 1.51, expm1 1.62 / 1.32): on two 128-bit FMA pipes SVML's table-free
// kernels cost what these do, and the call keeps its constants out of a fused kernel's
// registers.
//
// AVX-512, measured on an Intel Xeon (family 6, model 207), 2 threads, 64K-element jit
// kernels of the function alone, best of three alternating processes, ns per element
// inline / libmvec (and bench/fast_math_bench's one-thread ratio, two runs): float32
// sin 0.139 / 0.175 (1.33-1.54x), cos 0.161 / 0.171 (1.07-1.49x), tan 0.237 / 0.282
// (1.18-1.47x), expm1 0.168 / 0.188 (1.04-1.52x); float64 sin 0.314 / 0.404 (1.31-1.35x),
// cos 0.364 / 0.378 (1.08-1.13x), tan 0.517 / 0.556 (1.05-1.18x), log 0.489 / 0.580
// (1.06-1.08x), expm1 0.380 / 0.451 (1.16-1.21x), tanh 0.523 / 0.978 (1.78-1.81x): all
// inline. sin(x) + cos(y) over 1000 to 10^6 float32 (the size sweep) 1.3-2.4x faster with
// both inline (no call left in the kernel). Left on libmvec: float32 log 0.175 / 0.180
// (0.97-1.09x), float64 log1p 0.811 / 0.583 (0.68x).
//
// AVX2 on CPUs whose vector units are 256 bits wide (every AVX2 CPU but AMD's Zen 1 and
// Zen+, which split each 256-bit operation in two), measured on an AMD EPYC Zen 3
// (family 25, model 1) with bench/fast_math_bench, one thread, ns per element inline /
// libmvec: float32 sin 0.555 / 0.814 (1.47x), cos 0.645 / 0.856 (1.33x), expm1 0.593 /
// 1.563; float64 sin 1.503 / 1.964 (1.31x), expm1 1.878 / 2.465 (1.31x), tanh 2.429 /
// 4.994: inline. Left on libmvec: float32 tan (0.97x), log (1.12x, but 0.94x over wide
// inputs), float64 cos (0.84x), tan (0.50x), log (1.27x, 0.87x wide), log1p (1.10x);
// a second run, with a build busy on the other core, gave the chosen ones 1.45x, 1.36x,
// 2.52x, 1.23x, 1.51x and scattered the others (float64 tan 1.98x, log1p 0.58x). The
// jitted sin(x) + cos(y) of 5000 x 5000 float64 x and a broadcast row y (the tutorial's
// broadcast form): 49.6-60.6 -> 44.6-47.4 ms, alternating, beside that build.
//
// The scalar ISA is eager's exact libm path, kept bit for bit.
bool half_width_vector_units() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool half = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("znver1") != 0;
  }();
  return half;
#else
  return false;
#endif
}

bool runs_inline(math::FastFunction f, DType dtype, VectorIsa isa) {
#ifndef JX_INLINE_MATH
  return false;  // no libmvec for the rare inputs: kernels and eager use libm
#endif
  using F = math::FastFunction;
  const bool f32 = dtype == DType::Float32;
  switch (isa) {
    case VectorIsa::Avx2:
      if (half_width_vector_units()) return f32 ? f == F::Expm1 : f == F::Tanh;  // float32 tanh: the odd rational
      return f == F::Sin || f == F::Expm1 || (f32 ? f == F::Cos : f == F::Tanh);
    case VectorIsa::Avx512:
      if (f == F::Sin || f == F::Cos || f == F::Tan || f == F::Expm1) return true;
      return !f32 && (f == F::Log || f == F::Tanh);
    case VectorIsa::Scalar: return false;
  }
  return false;
}

namespace {

template <class T>
void inline_unary_at(math::FastFunction f, VectorIsa isa, const T* x, T* y, int64_t n) {
#ifdef JX_INLINE_MATH
  if (isa == VectorIsa::Avx512) return inline_unary_avx512(f, x, y, n);
  if (isa == VectorIsa::Avx2) return inline_unary_avx2(f, x, y, n);
#endif
  (void)f, (void)x, (void)y, (void)n;
  detail::internal_fail("inline_unary", "no inline code for ", vector_isa_name(isa));
}

}  // namespace

void inline_unary(math::FastFunction f, VectorIsa isa, const float* x, float* y, int64_t n) {
  inline_unary_at(f, isa, x, y, n);
}
void inline_unary(math::FastFunction f, VectorIsa isa, const double* x, double* y, int64_t n) {
  inline_unary_at(f, isa, x, y, n);
}

}  // namespace jx::cpu
