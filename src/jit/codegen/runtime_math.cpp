// Scalar functions native kernels call by name where libm has no equivalent of eager's
// computation (erf_inv, digamma, thread-safe lgamma, pow with an integer exponent
// array). Each calls the very code eager runs, so kernels agree with eager to the bit.
// extern "C" with default visibility: the JIT finds them among the process's symbols
// (or through codegen::runtime_math_symbols()).
#include <cstdint>

#include "cpu/vector_math.h"

namespace {

// x^n by binary exponentiation, exactly as eager's pow with an integer exponent
// (src/lax/elementwise_binary.cpp, power_by_squaring): same multiplications, same order.
template <class C>
C power_by_squaring(C x, int64_t n) {
  uint64_t e = n < 0 ? uint64_t{0} - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  C acc(1);
  bool started = false;
  while (e) {
    if (e & 1) {
      acc = started ? acc * x : x;
      started = true;
    }
    e >>= 1;
    if (e) x = x * x;
  }
  if (n < 0) return C(1) / acc;
  return acc;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) double jx_rt_erf_inv_f64(double x) { return jx::cpu::erf_inv(x); }
__attribute__((visibility("default"))) double jx_rt_digamma_f64(double x) { return jx::cpu::digamma(x); }
__attribute__((visibility("default"))) float jx_rt_lgamma_f32(float x) { return jx::cpu::lgamma(x); }
__attribute__((visibility("default"))) double jx_rt_lgamma_f64(double x) { return jx::cpu::lgamma(x); }
__attribute__((visibility("default"))) float jx_rt_powi_f32(float x, int64_t n) { return power_by_squaring(x, n); }
__attribute__((visibility("default"))) double jx_rt_powi_f64(double x, int64_t n) { return power_by_squaring(x, n); }

}  // extern "C"
