// The arithmetic src/math/fast_functions.h's templates run on, over GCC vectors of one
// x86 register (32 bytes: AVX2, 64: AVX-512): eager's instantiation of the inline
// functions jit kernels emit. Each operation is the IEEE (or integer) instruction the
// kernels' LLVM IR lowers to, fma only where the template writes one, so a lane rounds
// exactly as a kernel's lane and as ScalarArithmetic, the C++ twin.
//
// Included only by the translation units compiled for that ISA (inline_math_avx2.cpp,
// inline_math_avx512.cpp, with -ffp-contract=off so no multiply and add fuse): its
// contents are TU-local (an unnamed namespace), so no instantiation built for AVX-512
// can stand in for one a baseline caller links to.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace jx::cpu {
namespace {

template <class T, int Bytes>
struct SimdArithmetic {
  static_assert(Bytes == 32 || Bytes == 64);
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  using SignedBits = std::make_signed_t<Bits>;
  using F [[gnu::vector_size(Bytes)]] = T;
  using I [[gnu::vector_size(Bytes)]] = Bits;
  using SI [[gnu::vector_size(Bytes)]] = SignedBits;
  using B = SI;  // comparisons: all ones or zero per lane
  static constexpr int kLanes = Bytes / static_cast<int>(sizeof(T));

  F c(double v) const {
    const T s = static_cast<T>(v);
    if constexpr (Bytes == 64 && sizeof(T) == 4) return _mm512_set1_ps(s);
    else if constexpr (Bytes == 64) return _mm512_set1_pd(s);
    else if constexpr (sizeof(T) == 4) return _mm256_set1_ps(s);
    else return _mm256_set1_pd(s);
  }
  I ci(int64_t v) const {
    const Bits s = static_cast<Bits>(v);
    if constexpr (Bytes == 64 && sizeof(T) == 4) return (I)_mm512_set1_epi32(static_cast<int>(s));
    else if constexpr (Bytes == 64) return (I)_mm512_set1_epi64(static_cast<long long>(s));
    else if constexpr (sizeof(T) == 4) return (I)_mm256_set1_epi32(static_cast<int>(s));
    else return (I)_mm256_set1_epi64x(static_cast<long long>(s));
  }
  F add(F x, F y) const { return x + y; }
  F sub(F x, F y) const { return x - y; }
  F mul(F x, F y) const { return x * y; }
  F div(F x, F y) const { return x / y; }
  F neg(F x) const { return -x; }
  F fma(F x, F y, F z) const {
    if constexpr (Bytes == 64 && sizeof(T) == 4) return _mm512_fmadd_ps(x, y, z);
    else if constexpr (Bytes == 64) return _mm512_fmadd_pd(x, y, z);
    else if constexpr (sizeof(T) == 4) return _mm256_fmadd_ps(x, y, z);
    else return _mm256_fmadd_pd(x, y, z);
  }
  F abs(F x) const { return from_bits(bits(x) & ci(static_cast<int64_t>(~Bits{0} >> 1))); }
  B gt(F x, F y) const { return x > y; }
  B lt(F x, F y) const { return x < y; }
  B eq(F x, F y) const { return x == y; }
  B ine(I x, I y) const { return x != y; }
  B nge(F x, F y) const { return ~(x >= y); }  // unordered or less
  B nlt(F x, F y) const { return ~(x < y); }   // unordered or greater or equal
  B nle(F x, F y) const { return ~(x <= y); }  // unordered or greater
  B ngt(F x, F y) const { return ~(x > y); }   // unordered or less or equal
  B b_or(B x, B y) const { return x | y; }
  F select(B m, F x, F y) const { return m ? x : y; }
  I iselect(B m, I x, I y) const { return m ? x : y; }
  I bits(F x) const { return (I)x; }
  F from_bits(I i) const { return (F)i; }
  I iadd(I x, I y) const { return x + y; }
  I isub(I x, I y) const { return x - y; }
  I iand(I x, I y) const { return x & y; }
  I ixor(I x, I y) const { return x ^ y; }
  I shl(I x, int s) const { return x << s; }
  I ashr(I x, int s) const { return (I)((SI)x >> s); }
  F to_float(I x) const { return __builtin_convertvector((SI)x, F); }

  static bool any(B m) {
    if constexpr (Bytes == 64 && sizeof(T) == 4) return _mm512_test_epi32_mask((__m512i)m, (__m512i)m) != 0;
    else if constexpr (Bytes == 64) return _mm512_test_epi64_mask((__m512i)m, (__m512i)m) != 0;
    else return !_mm256_testz_si256((__m256i)m, (__m256i)m);
  }
  // The accurate function (fallback, on the whole vector: libmvec's variant, whose lanes
  // are independent) where a lane needs it, only when one does; as kernels' rare path.
  template <class Rare>
  F rare(B cond, F usual, F x, Rare fallback) const {
    if (!any(cond)) return usual;
    return cond ? fallback(x) : usual;
  }
};

// y = f(x) over n contiguous elements, a vector at a time; the partial last vector
// through a copy whose padding lanes repeat the last element (valid inputs, discarded).
template <class T, int Bytes, class Vector>
void simd_map(const T* x, T* y, int64_t n, Vector f) {
  using A = SimdArithmetic<T, Bytes>;
  constexpr int L = A::kLanes;
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    typename A::F v;
    std::memcpy(&v, x + i, sizeof v);
    const typename A::F r = f(v);
    std::memcpy(y + i, &r, sizeof r);
  }
  if (i < n) {
    T buf[L];
    for (int k = 0; k < L; ++k) buf[k] = x[i + (k < n - i ? k : n - i - 1)];
    typename A::F v;
    std::memcpy(&v, buf, sizeof v);
    const typename A::F r = f(v);
    std::memcpy(buf, &r, sizeof r);
    std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(T));
  }
}

}  // namespace
}  // namespace jx::cpu
