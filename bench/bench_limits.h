// The hardware limit of a workload, measured in the same run (../shared/BENCHMARKS.md):
//   T_min = max(bytes / stream_bandwidth, sum(elements * cost_per_element) / threads)
// and, for matrix products, their multiply-adds at the FMA units' peak (fma_peak_flops).
// stream_bandwidth: bench_common.h's STREAM triad on all threads (a read kernel for the
// read-mostly reductions); cost_per_element: glibc's libmvec routine for the widest
// vectors the CPU has (AVX-512 _ZGVeN16v_sinf, else AVX2 _ZGVdN8v_sinf, ...) called
// directly on a cache-resident buffer with every thread busy. Also the tutorial hand-fused with the same routines, the best a
// jit kernel can do. Shared by jx_bench and jit_bench.
#pragma once

#include <cblas.h>
#include <dlfcn.h>
#include <immintrin.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "backend/cpu/onednn.h"
#include "core/array_internal.h"

namespace jx_bench {

inline double g_bandwidth = 0;       // bytes/second (triad), set by measure_bandwidth()
inline double g_read_bandwidth = 0;  // bytes/second (a sum), set by measure_bandwidth()
inline bool g_limit_quick = false;

inline double fma_peak_flops(jx::DType dtype);

// The run's hardware limits, measured first, before any library has threads of its own
// to leave spinning: the bandwidths, and the FMA peak (measured after a matmul section
// had timed oneDNN and OpenBLAS, whose workers spin on after a call, it came out 193.5
// GFLOP/s where the machine does 244-247, below what MKL and jx's own kernel reached).
inline double measure_bandwidth(bool quick) {
  g_limit_quick = quick;
  g_bandwidth = stream_bandwidth(quick);
  g_read_bandwidth = read_bandwidth(quick);
  emit("limit", "stream_triad", "limit", 1.0 / g_bandwidth, Extra().num("bytes", 1.0));
  emit("limit", "stream_read", "limit", 1.0 / g_read_bandwidth, Extra().num("bytes", 1.0));
  (void)fma_peak_flops(jx::float64);
  return g_bandwidth;
}

// ---- the compute term: libmvec's vector routines called directly ----

// The widest libmvec variants this CPU runs: AVX-512 (16 floats / 8 doubles), else AVX2
// (8 / 4), else none (the limit is then the memory term only).
inline const bool g_mvec_avx512 = __builtin_cpu_supports("avx512f");
inline const bool g_mvec_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");

#pragma GCC push_options
#pragma GCC target("avx512f")
using VecFnF32x16 = __m512 (*)(__m512);
using VecFnF64x8 = __m512d (*)(__m512d);
inline void mvec_pass_f32_512(void* fn, const float* in, float* out, int64_t n) {
  auto f = reinterpret_cast<VecFnF32x16>(fn);
  for (int64_t i = 0; i < n; i += 16) _mm512_storeu_ps(out + i, f(_mm512_loadu_ps(in + i)));
}
inline void mvec_pass_f64_512(void* fn, const double* in, double* out, int64_t n) {
  auto f = reinterpret_cast<VecFnF64x8>(fn);
  for (int64_t i = 0; i < n; i += 8) _mm512_storeu_pd(out + i, f(_mm512_loadu_pd(in + i)));
}
inline void mvec_sin_cos_f32_512(void* s, void* c, const float* x, const float* y, float* out, int64_t n) {
  auto fs = reinterpret_cast<VecFnF32x16>(s), fc = reinterpret_cast<VecFnF32x16>(c);
  for (int64_t i = 0; i < n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_add_ps(fs(_mm512_loadu_ps(x + i)), fc(_mm512_loadu_ps(y + i))));
}
inline void mvec_sin_cos_f64_512(void* s, void* c, const double* x, const double* y, double* out, int64_t n) {
  auto fs = reinterpret_cast<VecFnF64x8>(s), fc = reinterpret_cast<VecFnF64x8>(c);
  for (int64_t i = 0; i < n; i += 8)
    _mm512_storeu_pd(out + i, _mm512_add_pd(fs(_mm512_loadu_pd(x + i)), fc(_mm512_loadu_pd(y + i))));
}
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
using VecFnF32x8 = __m256 (*)(__m256);
using VecFnF64x4 = __m256d (*)(__m256d);
inline void mvec_pass_f32_256(void* fn, const float* in, float* out, int64_t n) {
  auto f = reinterpret_cast<VecFnF32x8>(fn);
  for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(in + i)));
}
inline void mvec_pass_f64_256(void* fn, const double* in, double* out, int64_t n) {
  auto f = reinterpret_cast<VecFnF64x4>(fn);
  for (int64_t i = 0; i < n; i += 4) _mm256_storeu_pd(out + i, f(_mm256_loadu_pd(in + i)));
}
inline void mvec_sin_cos_f32_256(void* s, void* c, const float* x, const float* y, float* out, int64_t n) {
  auto fs = reinterpret_cast<VecFnF32x8>(s), fc = reinterpret_cast<VecFnF32x8>(c);
  for (int64_t i = 0; i < n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_add_ps(fs(_mm256_loadu_ps(x + i)), fc(_mm256_loadu_ps(y + i))));
}
inline void mvec_sin_cos_f64_256(void* s, void* c, const double* x, const double* y, double* out, int64_t n) {
  auto fs = reinterpret_cast<VecFnF64x4>(s), fc = reinterpret_cast<VecFnF64x4>(c);
  for (int64_t i = 0; i < n; i += 4)
    _mm256_storeu_pd(out + i, _mm256_add_pd(fs(_mm256_loadu_pd(x + i)), fc(_mm256_loadu_pd(y + i))));
}
#pragma GCC pop_options

// One pass of libmvec's `fn` over n elements (a multiple of 16), at the CPU's width.
inline void mvec_pass_f32(void* fn, const float* in, float* out, int64_t n) {
  g_mvec_avx512 ? mvec_pass_f32_512(fn, in, out, n) : mvec_pass_f32_256(fn, in, out, n);
}
inline void mvec_pass_f64(void* fn, const double* in, double* out, int64_t n) {
  g_mvec_avx512 ? mvec_pass_f64_512(fn, in, out, n) : mvec_pass_f64_256(fn, in, out, n);
}
// out = sin(x) + cos(y) over n (a multiple of 16) elements: the tutorial hand-fused,
// what a perfect jit kernel does.
inline void mvec_sin_cos_f32(void* s, void* c, const float* x, const float* y, float* out, int64_t n) {
  g_mvec_avx512 ? mvec_sin_cos_f32_512(s, c, x, y, out, n) : mvec_sin_cos_f32_256(s, c, x, y, out, n);
}
inline void mvec_sin_cos_f64(void* s, void* c, const double* x, const double* y, double* out, int64_t n) {
  g_mvec_avx512 ? mvec_sin_cos_f64_512(s, c, x, y, out, n) : mvec_sin_cos_f64_256(s, c, x, y, out, n);
}

// libmvec's name for `fn` ("sin") at the CPU's widest vectors (_ZGVeN16v_sinf, ...).
inline std::string libmvec_name(const std::string& fn, bool f32) {
  const std::string prefix = g_mvec_avx512 ? (f32 ? "_ZGVeN16v_" : "_ZGVeN8v_") : (f32 ? "_ZGVdN8v_" : "_ZGVdN4v_");
  return prefix + fn + (f32 ? "f" : "");
}
// That function, or null when libmvec or the ISA is missing.
inline void* libmvec_function(const std::string& fn, bool f32) {
  static void* lib = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib || !(g_mvec_avx512 || g_mvec_avx2)) return nullptr;
  return dlsym(lib, libmvec_name(fn, f32).c_str());
}

// Seconds per element and thread of libmvec's widest variant of `fn` ("sin") on values
// uniform in [lo, hi), with every jx thread running it at once on its own L1-resident
// buffer; NaN when libmvec or AVX2 is missing (the limit is then the memory term only).
inline double mvec_cost(const std::string& fn, jx::DType dtype, double lo, double hi) {
  static std::map<std::string, double> memo;
  const bool f32 = dtype == jx::float32;
  std::string symbol = libmvec_name(fn, f32);
  std::string memo_key = symbol + "/" + std::to_string(lo) + "/" + std::to_string(hi);
  if (auto it = memo.find(memo_key); it != memo.end()) return it->second;
  void* f = libmvec_function(fn, f32);
  double cost = std::nan("");
  if (f) {
    const int64_t n = 2048;  // 8 or 16 KiB in, the same out: L1-resident
    const int64_t passes = g_limit_quick ? 1000 : 4000;
    const int threads = jx::cpu::num_threads();
    auto work = [&](int t) {
      std::vector<float> inf(n), outf(n);
      std::vector<double> ind(n), outd(n);
      for (int64_t i = 0; i < n; ++i) {
        double u = static_cast<double>((i * 7919 + t * 104729) % n) / static_cast<double>(n);
        ind[i] = lo + u * (hi - lo);
        inf[i] = static_cast<float>(ind[i]);
      }
      for (int64_t p = 0; p < passes; ++p) {
        if (f32) mvec_pass_f32(f, inf.data(), outf.data(), n);
        else mvec_pass_f64(f, ind.data(), outd.data(), n);
      }
    };
    cost = best_seconds_spread([&] {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
      for (auto& th : pool) th.join();
    }, 9) / static_cast<double>(n * passes);
    emit("limit", "libmvec_" + fn + dtype_suffix(dtype), "limit", cost,
         Extra().num("ns_per_element_per_thread", cost * 1e9).num("lo", lo).num("hi", hi).str("symbol", symbol));
  }
  memo[memo_key] = cost;
  return cost;
}

// The limit of a workload: `bytes` that must be read (and written) once, and the
// transcendental calls (elements x seconds per element per thread) it cannot avoid. The
// bytes move at the faster of memory's bandwidth and the bandwidth over the workload's
// own bytes (a run of consecutive calls finds them in cache where they fit: a true lower
// bound only so), measured as the workload moves them: read-mostly workloads (reductions,
// a logsumexp) with the read kernel, the others with the triad.
enum class Traffic { kReadWrite, kReadMostly };
inline double bandwidth_for(double bytes, Traffic traffic) {
  return traffic == Traffic::kReadMostly ? std::max(g_read_bandwidth, read_bandwidth_over(bytes))
                                         : std::max(g_bandwidth, stream_bandwidth_over(bytes));
}
inline void limit(const std::string& section, const std::string& workload, double bytes,
           const std::vector<std::pair<double, double>>& calls = {}, Traffic traffic = Traffic::kReadWrite) {
  double compute = 0;
  for (auto [elements, cost] : calls)
    if (!std::isnan(cost)) compute += elements * cost;
  compute /= jx::cpu::num_threads();
  const double bandwidth = bandwidth_for(bytes, traffic), memory = bytes / bandwidth;
  emit(section, workload, "limit", std::max(memory, compute),
       Extra().num("bytes", bytes).num("memory_s", memory).num("compute_s", compute).num("bandwidth", bandwidth));
}

// ---- each workload's limit (one definition for jx_bench and jit_bench) ----

// sin(x) + cos(y): `elements` sines, `cos_elements` cosines of values in [0, cos_hi).
inline void limit_sin_cos(const std::string& workload, jx::DType dtype, double elements, double cos_elements,
                          double cos_hi, double bytes) {
  std::vector<std::pair<double, double>> calls = {{elements, mvec_cost("sin", dtype, 0, 1)}};
  if (cos_elements > 0) calls.push_back({cos_elements, mvec_cost("cos", dtype, 0, cos_hi)});
  limit("tutorial", workload, bytes, calls);
}
inline void limit_selu(const std::string& workload, double n) {
  limit("selu", workload, 2.0 * 4 * n, {{n, mvec_cost("exp", jx::float32, -4, 4)}});
}
// The fused sum reads its three inputs.
inline void limit_fused_sum(const std::string& workload, jx::DType dtype, double n) {
  limit("reduction", workload, 3.0 * n * jx::itemsize(dtype), {}, Traffic::kReadMostly);
}
// Softmax reads x once and writes the result; logsumexp reads x and writes one per row.
inline void limit_softmax(const std::string& workload, double rows, double cols) {
  limit("softmax", workload, 2 * 4 * rows * cols, {{rows * cols, mvec_cost("exp", jx::float32, -8, 0)}});
}
inline void limit_logsumexp(const std::string& workload, double rows, double cols) {
  limit("softmax", workload, 4 * (rows * cols + rows),
        {{rows * cols, mvec_cost("exp", jx::float32, -8, 0)}, {rows, mvec_cost("log", jx::float32, 1, cols)}},
        Traffic::kReadMostly);
}
// A cross-entropy reads the logits and the labels (int32) once: an exp per logit, a log
// per row; its gradient also writes one float per logit.
inline void limit_cross_entropy(const std::string& workload, double rows, double cols, bool gradient) {
  const double bytes = 4 * (rows * cols + rows) + (gradient ? 4 * rows * cols : 0);
  limit("softmax", workload, bytes,
        {{rows * cols, mvec_cost("exp", jx::float32, -8, 0)}, {rows, mvec_cost("log", jx::float32, 1, cols)}},
        gradient ? Traffic::kReadWrite : Traffic::kReadMostly);
}
// ---- the compute term of a product: the FMA units' peak ----

// 12 independent multiply-adds of vectors of doubles (GCC's vector types) per round (past the
// FMA latency times the ports), so the loop runs at the units' throughput; the sum is
// returned so nothing is dropped. Inlined into a caller compiled for the ISA, where the
// multiply-add contracts to one FMA instruction.
typedef double DoublesOf32Bytes __attribute__((vector_size(32)));
typedef double DoublesOf64Bytes __attribute__((vector_size(64)));
template <class Vec>
__attribute__((always_inline)) inline double fma_rounds(int64_t rounds, double seed) {
  constexpr int kLanes = sizeof(Vec) / sizeof(double);
  Vec acc[12];
  Vec x, y;
  for (int l = 0; l < kLanes; ++l) x[l] = 1.0 - 1e-12, y[l] = seed * 1e-15;
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i)
    for (int l = 0; l < kLanes; ++l) acc[i][l] = seed + i;
  for (int64_t r = 0; r < rounds; ++r)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = acc[i] * x + y;
  double sum = 0;
  for (int i = 0; i < 12; ++i)
    for (int l = 0; l < kLanes; ++l) sum += acc[i][l];
  return sum;
}
__attribute__((target("avx512f,fma"))) inline double fma_rounds_512(int64_t rounds, double seed) {
  return fma_rounds<DoublesOf64Bytes>(rounds, seed);
}
__attribute__((target("avx2,fma"))) inline double fma_rounds_256(int64_t rounds, double seed) {
  return fma_rounds<DoublesOf32Bytes>(rounds, seed);
}

// Floating-point operations per second of `dtype` multiply-adds (2 per lane) at the CPU's
// widest FMA vectors, every jx thread running them at once; NaN without FMA (the matmul
// limit is then the library called directly). float32 has twice float64's lanes.
inline double fma_peak_flops(jx::DType dtype) {
  static const double float64_peak = [] {
    if (!g_mvec_avx512 && !g_mvec_avx2) return std::nan("");
    const int64_t rounds = g_limit_quick ? 2'000'000 : 10'000'000;
    const int threads = jx::cpu::num_threads();
    std::vector<double> sink(static_cast<size_t>(threads));
    const double seconds = best_seconds_spread([&] {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          sink[t] = g_mvec_avx512 ? fma_rounds_512(rounds, t) : fma_rounds_256(rounds, t);
        });
      for (auto& th : pool) th.join();
    }, 5);
    const double lanes = g_mvec_avx512 ? 8 : 4;
    const double flops = 2.0 * 12 * lanes * static_cast<double>(rounds) * threads / seconds;
    emit("limit", "fma_peak_float64", "limit", 1.0 / flops,
         Extra().num("gflops", flops * 1e-9).num("threads", threads).num("checksum", sink[0]));
    return flops;
  }();
  return dtype == jx::float32 ? 2 * float64_peak : float64_peak;
}

// Matmul: its 2 n^3 operations at the FMA peak (a bound no library reaches; the faster of
// OpenBLAS and oneDNN called directly is the fallback without FMA, and the bench's
// "within 1.1x of the library" line); the GELU layer: that plus its epilogue's tanh
// (which cannot overlap the GEMM on the same cores).
inline void limit_matmul(const std::string& n_dtype, jx::DType dtype, double n, double blas_seconds) {
  const double flops = 2.0 * n * n * n, peak = fma_peak_flops(dtype);
  const double compute = std::isnan(peak) ? blas_seconds : flops / peak;
  Extra extra = Extra().num("flops", flops).num("memory_s", 0.0).num("compute_s", compute);
  emit("matmul", "matmul_" + n_dtype, "limit", compute, extra);
  double tanh_cost = mvec_cost("tanh", dtype, -3, 3);
  const double gelu = compute + n * n * (std::isnan(tanh_cost) ? 0.0 : tanh_cost) / jx::cpu::num_threads();
  emit("matmul", "gelu_matmul_" + n_dtype, "limit", gelu,
       Extra().num("flops", flops).num("memory_s", 0.0).num("compute_s", gelu));
}
inline void limit_vecmath(const std::string& workload, const VecMathCase& c) {
  double lo = c.lo, hi = c.hi;
  if (c.log_uniform) lo = 0.5, hi = 2;  // libmvec's logf costs the same for every exponent
  limit("vecmath", workload, 2.0 * 4 * kVecMathN, {{double(kVecMathN), mvec_cost(c.name, jx::float32, lo, hi)}});
}

// C = A B for square n x n arrays through the libraries called directly on host copies:
// OpenBLAS (cblas_sgemm / dgemm) and, for float32, oneDNN (dnnl_sgemm, loaded as jx loads
// it, with jx's OpenMP spin: src/backend/cpu/onednn.h) where it is installed. The matmul
// limit is the faster of the two.
class DirectGemm {
 public:
  DirectGemm(const Array& a, const Array& b) : n_(static_cast<int>(a.shape(0))), f32_(a.dtype() == jx::float32) {
    if (f32_) af_ = a.to_vector<float>(), bf_ = b.to_vector<float>(), cf_.resize(af_.size());
    else ad_ = a.to_vector<double>(), bd_ = b.to_vector<double>(), cd_.resize(ad_.size());
    if (f32_) onednn_ = jx::cpu::onednn_sgemm_function();
  }
  void openblas() {
    if (f32_)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n_, n_, n_, 1.0f, af_.data(), n_, bf_.data(), n_, 0.0f,
                  cf_.data(), n_);
    else
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n_, n_, n_, 1.0, ad_.data(), n_, bd_.data(), n_, 0.0,
                  cd_.data(), n_);
  }
  bool has_onednn() const { return onednn_ != nullptr; }
  void onednn() { onednn_('N', 'N', n_, n_, n_, 1.0f, af_.data(), n_, bf_.data(), n_, 0.0f, cf_.data(), n_); }

 private:
  int n_;
  bool f32_;
  std::vector<float> af_, bf_, cf_;
  std::vector<double> ad_, bd_, cd_;
  jx::cpu::DnnlSgemm* onednn_ = nullptr;
};

// The tutorial hand-fused in C++ (libmvec at the widest vectors, all threads, one chunk per thread as
// jit splits it) into `out`, which must be a fresh contiguous array of x's aval; false
// when libmvec / AVX2 is missing or the size is not a multiple of 16.
inline bool hand_fused_sin_cos(const Array& x, const Array& y, Array& out) {
  const bool f32 = x.dtype() == jx::float32;
  static void* s32 = libmvec_function("sin", true);
  static void* c32 = libmvec_function("cos", true);
  static void* s64 = libmvec_function("sin", false);
  static void* c64 = libmvec_function("cos", false);
  void* s = f32 ? s32 : s64;
  void* c = f32 ? c32 : c64;
  if (!s || !c || x.size() % 16 != 0 || x.shape() != y.shape()) return false;
  jx::cpu::parallel_for(x.size() / 16, 1024, [&](int64_t lo, int64_t hi) {
    int64_t b = lo * 16, n = (hi - lo) * 16;
    if (f32)
      mvec_sin_cos_f32(s, c, jx::detail::data<float>(x) + b, jx::detail::data<float>(y) + b,
                       jx::detail::mutable_data<float>(out) + b, n);
    else
      mvec_sin_cos_f64(s, c, jx::detail::data<double>(x) + b, jx::detail::data<double>(y) + b,
                       jx::detail::mutable_data<double>(out) + b, n);
  });
  return true;
}

}  // namespace jx_bench
