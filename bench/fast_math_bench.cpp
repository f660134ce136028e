// Inline math (src/math/fast_functions.h) against eager's libmvec, per function and dtype,
// on this CPU: the measurement behind codegen::inline_fast_function's table
// (src/jit/codegen/fast_math.cpp), to re-derive it on another machine.
//
// Each function runs over a 4096-element L1-resident buffer on one thread, 400 passes,
// best of 7: the inline code as native kernels emit it (compile_fast_function_loop, the
// loop vectorizer's widening of it at the CPU's ISA) and libmvec's variant of that ISA
// called in a plain loop (a vector per call, as kernels call it). Prints ns per element
// and the ratio (above 1: inline faster), and whether kernels use the inline code now.
// In fused kernels the call also keeps the function's constants out of the kernel's
// registers, which this loop does not show: confirm a change of the table with the
// jit_bench rows (vecmath, tutorial) before and after.
//
// Usage: build/bench/fast_math_bench
#include <dlfcn.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "backend/cpu/vector_math.h"
#include "jit/codegen/fast_math.h"

namespace {

using jx::compiler::codegen::compile_fast_function_loop;
using jx::compiler::codegen::FastMathLoop;
using jx::compiler::codegen::inline_fast_function;
using jx::math::FastFunction;

template <class F>
double best_seconds(F f, int reps = 7) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// y = f(x) through libmvec's vector variant `fn`, n a multiple of the vector width.
__attribute__((target("avx2,fma"))) void libmvec_avx2(void* fn, const void* x, void* y, int64_t n, bool f64) {
  if (f64) {
    auto f = reinterpret_cast<__m256d (*)(__m256d)>(fn);
    for (int64_t i = 0; i < n; i += 4)
      _mm256_storeu_pd(static_cast<double*>(y) + i, f(_mm256_loadu_pd(static_cast<const double*>(x) + i)));
  } else {
    auto f = reinterpret_cast<__m256 (*)(__m256)>(fn);
    for (int64_t i = 0; i < n; i += 8)
      _mm256_storeu_ps(static_cast<float*>(y) + i, f(_mm256_loadu_ps(static_cast<const float*>(x) + i)));
  }
}
__attribute__((target("avx512f"))) void libmvec_avx512(void* fn, const void* x, void* y, int64_t n, bool f64) {
  if (f64) {
    auto f = reinterpret_cast<__m512d (*)(__m512d)>(fn);
    for (int64_t i = 0; i < n; i += 8)
      _mm512_storeu_pd(static_cast<double*>(y) + i, f(_mm512_loadu_pd(static_cast<const double*>(x) + i)));
  } else {
    auto f = reinterpret_cast<__m512 (*)(__m512)>(fn);
    for (int64_t i = 0; i < n; i += 16)
      _mm512_storeu_ps(static_cast<float*>(y) + i, f(_mm512_loadu_ps(static_cast<const float*>(x) + i)));
  }
}

// Inputs where each function does its ordinary work (none take the rare path); for log
// also a wide range, log-uniform over [1e-30, 1e30] (probabilities, likelihoods, scales),
// to show whether a variant's cost depends on the exponent (on an Intel Xeon model 207
// neither glibc 2.36's nor the inline float32 log did: 0.30 and 0.31 ns per element in
// both rows; a 20 ms vecmath_log row in one bench run was the machine, not the range).
double input(FastFunction f, double u, bool wide) {
  if (wide) return std::exp(std::log(1e-30) + u * (std::log(1e30) - std::log(1e-30)));
  switch (f) {
    case FastFunction::Log:
    case FastFunction::Log1p: return 0.01 + 10 * u;
    case FastFunction::Expm1:
    case FastFunction::Tanh: return -5 + 10 * u;
    default: return -100 + 200 * u;
  }
}

}  // namespace

int main() {
  const jx::cpu::VectorIsa isa = jx::cpu::vector_isa();
  if (isa == jx::cpu::VectorIsa::Scalar) {
    std::printf("fast_math_bench: no AVX2 or AVX-512 vector math on this CPU; nothing to compare\n");
    return 0;
  }
  void* libmvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!libmvec) {
    std::printf("fast_math_bench: libmvec.so.1 not found\n");
    return 0;
  }
  const bool avx512 = isa == jx::cpu::VectorIsa::Avx512;
  constexpr int64_t n = 4096;
  constexpr int passes = 400;
  std::printf("inline math vs libmvec, one thread, %ld-element L1-resident buffers, ISA %s (ns per element)\n",
              static_cast<long>(n), jx::cpu::vector_isa_name(isa));
  std::printf("%-9s %-8s %9s %9s %8s  %s\n", "fn", "dtype", "inline", "libmvec", "ratio", "kernels use");
  for (FastFunction f : jx::math::kFastFunctions) {
    for (bool f64 : {false, true})
    for (bool wide : {false, true}) {
      if (wide && f != FastFunction::Log) continue;
      std::vector<float> xf(n), yf(n);
      std::vector<double> xd(n), yd(n);
      for (int64_t i = 0; i < n; ++i) {
        xd[static_cast<size_t>(i)] = input(f, static_cast<double>((i * 7919) % n) / n, wide);
        xf[static_cast<size_t>(i)] = static_cast<float>(xd[static_cast<size_t>(i)]);
      }
      const void* x = f64 ? static_cast<const void*>(xd.data()) : xf.data();
      void* y = f64 ? static_cast<void*>(yd.data()) : yf.data();
      const std::string name = std::string(f64 ? (avx512 ? "_ZGVeN8v_" : "_ZGVdN4v_") : (avx512 ? "_ZGVeN16v_" : "_ZGVdN8v_")) +
                               jx::math::fast_function_name(f) + (f64 ? "" : "f");
      void* fn = dlsym(libmvec, name.c_str());
      FastMathLoop loop = compile_fast_function_loop(f, f64, isa, false);
      const double t_inline = best_seconds([&] {
        for (int p = 0; p < passes; ++p) loop.run(x, y, n);
      }) / (passes * n);
      double t_libmvec = 0;
      if (fn) {
        t_libmvec = best_seconds([&] {
          for (int p = 0; p < passes; ++p) avx512 ? libmvec_avx512(fn, x, y, n, f64) : libmvec_avx2(fn, x, y, n, f64);
        }) / (passes * n);
      }
      const bool chosen = inline_fast_function(f, f64 ? jx::DType::Float64 : jx::DType::Float32, isa);
      std::printf("%-9s %-8s %9.3f %9.3f %7.2fx  %s\n", (std::string(jx::math::fast_function_name(f)) + (wide ? " wide" : "")).c_str(), f64 ? "float64" : "float32",
                  t_inline * 1e9, t_libmvec * 1e9, t_libmvec > 0 ? t_libmvec / t_inline : 0.0,
                  chosen ? "inline" : "libmvec");
    }
  }
  return 0;
}
