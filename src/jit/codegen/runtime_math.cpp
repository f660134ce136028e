// Scalar functions native kernels call by name where libm has no equivalent of eager's
// computation (erf_inv, digamma, thread-safe lgamma, pow with an integer exponent
// array), and the transcendentals eager computes with libmvec (jx_vm_*, below). Each
// calls the very code eager runs, so kernels agree with eager to the bit.
// extern "C" with default visibility: the JIT finds them among the process's symbols
// (or through codegen::runtime_math_symbols()).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/vector_math.h"

#define JX_RT_EXPORT __attribute__((visibility("default")))

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

// ---- one element through eager's vector math (jx_vm_<fn>_<f32|f64>_<isa>) ----
// The scalar half of every transcendental in a native kernel. The loop vectorizer turns
// these calls into libmvec's vector variant of the same ISA (vector_math_library() maps
// each name to exactly one variant), and whatever it leaves scalar (loop remainders,
// loops it does not vectorize) computes the element with that same variant, through
// eager's own dispatch (the partial last vector of cpu::vec_unary). So a kernel gives
// eager's result at every position, to the bit. The ISA is part of the name, fixed when
// the kernel is compiled, so a kernel stays self-consistent if cpu::set_vector_isa
// changes afterwards; _scalar is eager's scalar path (plain libm).

#define JX_VM_ONE_ISA_UNARY(fn, Name, isa, Isa)                                                                \
  JX_RT_EXPORT float jx_vm_##fn##_f32_##isa(float x) {                                                       \
    float y;                                                                                                 \
    jx::cpu::vec_unary(jx::cpu::VecOp::Name, jx::cpu::VectorIsa::Isa, &x, &y, 1);                            \
    return y;                                                                                                \
  }                                                                                                          \
  JX_RT_EXPORT double jx_vm_##fn##_f64_##isa(double x) {                                                     \
    double y;                                                                                                \
    jx::cpu::vec_unary(jx::cpu::VecOp::Name, jx::cpu::VectorIsa::Isa, &x, &y, 1);                            \
    return y;                                                                                                \
  }
#define JX_VM_ONE_ISA_BINARY(fn, Name, isa, Isa)                                                               \
  JX_RT_EXPORT float jx_vm_##fn##_f32_##isa(float a, float b) {                                              \
    float y;                                                                                                 \
    jx::cpu::vec_binary(jx::cpu::VecOp2::Name, jx::cpu::VectorIsa::Isa, &a, &b, &y, 1);                      \
    return y;                                                                                                \
  }                                                                                                          \
  JX_RT_EXPORT double jx_vm_##fn##_f64_##isa(double a, double b) {                                           \
    double y;                                                                                                \
    jx::cpu::vec_binary(jx::cpu::VecOp2::Name, jx::cpu::VectorIsa::Isa, &a, &b, &y, 1);                      \
    return y;                                                                                                \
  }
#define JX_VM_UNARY(Name, fn)                         \
  JX_VM_ONE_ISA_UNARY(fn, Name, scalar, Scalar)       \
  JX_VM_ONE_ISA_UNARY(fn, Name, avx2, Avx2)           \
  JX_VM_ONE_ISA_UNARY(fn, Name, avx512, Avx512)
#define JX_VM_BINARY(Name, fn)                        \
  JX_VM_ONE_ISA_BINARY(fn, Name, scalar, Scalar)      \
  JX_VM_ONE_ISA_BINARY(fn, Name, avx2, Avx2)          \
  JX_VM_ONE_ISA_BINARY(fn, Name, avx512, Avx512)
JX_VEC_UNARY_OPS(JX_VM_UNARY)
JX_VEC_BINARY_OPS(JX_VM_BINARY)
#undef JX_VM_UNARY
#undef JX_VM_BINARY
#undef JX_VM_ONE_ISA_UNARY
#undef JX_VM_ONE_ISA_BINARY

}  // extern "C"

namespace jx::compiler::codegen {

// Every jx_vm_* function above by name, for runtime_math_symbols() (scalar_ops.cpp).
std::vector<std::pair<std::string, void*>> vector_math_runtime_symbols() {
  std::vector<std::pair<std::string, void*>> out;
  auto add = [&](const char* name, auto* fn) { out.emplace_back(name, reinterpret_cast<void*>(fn)); };
#define JX_VM_ONE_ISA(fn, isa)                          \
  add("jx_vm_" #fn "_f32_" #isa, &jx_vm_##fn##_f32_##isa); \
  add("jx_vm_" #fn "_f64_" #isa, &jx_vm_##fn##_f64_##isa);
#define JX_VM_SYMBOLS(Name, fn) JX_VM_ONE_ISA(fn, scalar) JX_VM_ONE_ISA(fn, avx2) JX_VM_ONE_ISA(fn, avx512)
  JX_VEC_UNARY_OPS(JX_VM_SYMBOLS)
  JX_VEC_BINARY_OPS(JX_VM_SYMBOLS)
#undef JX_VM_SYMBOLS
#undef JX_VM_ONE_ISA
  return out;
}

}  // namespace jx::compiler::codegen
