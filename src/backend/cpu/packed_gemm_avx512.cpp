// jx's GEMM kernel (packed_gemm_kernel.inc) at AVX-512's width: a tile of 12 rows by two
// 64-byte registers. Compiled for AVX-512 (CMakeLists.txt), run only where the CPU has it
// (packed_gemm.cpp).
#include "backend/cpu/packed_gemm.h"

#ifdef JX_PACKED_GEMM
#include <immintrin.h>

namespace jx::cpu {
namespace {

constexpr GemmTile kTile = kGemmTileAvx512;

// One 512-bit vector of T: 8 doubles or 16 floats; a mask is one bit per lane.
template <class T>
struct Vec;
template <>
struct Vec<double> {
  using Reg = __m512d;
  using Mask = __mmask8;
  static constexpr int kLanes = 8;
  static Reg zero() { return _mm512_setzero_pd(); }
  static Reg load(const double* p) { return _mm512_load_pd(p); }
  static Reg loadu(const double* p) { return _mm512_loadu_pd(p); }
  static Reg broadcast(double x) { return _mm512_set1_pd(x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_pd(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm512_add_pd(a, b); }
  static void storeu(double* p, Reg x) { _mm512_storeu_pd(p, x); }
  static Mask first_lanes(int left) { return static_cast<Mask>((1u << left) - 1); }
  static Reg maskz_loadu(Mask m, const double* p) { return _mm512_maskz_loadu_pd(m, p); }
  static void mask_storeu(double* p, Mask m, Reg x) { _mm512_mask_storeu_pd(p, m, x); }
};
template <>
struct Vec<float> {
  using Reg = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg load(const float* p) { return _mm512_load_ps(p); }
  static Reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static Reg broadcast(float x) { return _mm512_set1_ps(x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static void storeu(float* p, Reg x) { _mm512_storeu_ps(p, x); }
  static Mask first_lanes(int left) { return static_cast<Mask>((1u << left) - 1); }
  static Reg maskz_loadu(Mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static void mask_storeu(float* p, Mask m, Reg x) { _mm512_mask_storeu_ps(p, m, x); }
};

}  // namespace
}  // namespace jx::cpu

#define JX_GEMM_PART gemm_part_avx512
#include "backend/cpu/packed_gemm_kernel.inc"
#endif  // JX_PACKED_GEMM
