// jx's GEMM kernel (packed_gemm_kernel.inc) at AVX2's width: a tile of 6 rows by two
// 32-byte registers (12 accumulators, 2 rows of B and a broadcast of A: 15 of the 16
// registers). Compiled for AVX2 + FMA (CMakeLists.txt), run only where the CPU has both
// and no AVX-512 (packed_gemm.cpp).
#include "backend/cpu/packed_gemm.h"

#ifdef JX_PACKED_GEMM
#include <immintrin.h>

namespace jx::cpu {
namespace {

constexpr GemmTile kTile = kGemmTileAvx2;

// One 256-bit vector of T: 4 doubles or 8 floats; a mask is a vector whose lanes are all
// ones (taken) or all zeros.
template <class T>
struct Vec;
template <>
struct Vec<double> {
  using Reg = __m256d;
  using Mask = __m256i;
  static constexpr int kLanes = 4;
  static Reg zero() { return _mm256_setzero_pd(); }
  static Reg load(const double* p) { return _mm256_load_pd(p); }
  static Reg loadu(const double* p) { return _mm256_loadu_pd(p); }
  static Reg broadcast(double x) { return _mm256_set1_pd(x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_pd(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm256_add_pd(a, b); }
  static void storeu(double* p, Reg x) { _mm256_storeu_pd(p, x); }
  static Mask first_lanes(int left) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(left), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  static Reg maskz_loadu(Mask m, const double* p) { return _mm256_maskload_pd(p, m); }
  static void mask_storeu(double* p, Mask m, Reg x) { _mm256_maskstore_pd(p, m, x); }
};
template <>
struct Vec<float> {
  using Reg = __m256;
  using Mask = __m256i;
  static constexpr int kLanes = 8;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load(const float* p) { return _mm256_load_ps(p); }
  static Reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  static Reg broadcast(float x) { return _mm256_set1_ps(x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static void storeu(float* p, Reg x) { _mm256_storeu_ps(p, x); }
  static Mask first_lanes(int left) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Reg maskz_loadu(Mask m, const float* p) { return _mm256_maskload_ps(p, m); }
  static void mask_storeu(float* p, Mask m, Reg x) { _mm256_maskstore_ps(p, m, x); }
};

}  // namespace
}  // namespace jx::cpu

#define JX_GEMM_PART gemm_part_avx2
#include "backend/cpu/packed_gemm_kernel.inc"
#endif  // JX_PACKED_GEMM
