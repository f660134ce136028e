// cpu::gemm against a plain triple loop, for the shapes that take BLAS's matrix-vector
// routine (one row or one column) and a general one: every combination of transposed
// operands, leading dimensions wider than the rows, and an output that starts as NaN
// (beta = 0 must overwrite it, as a recycled buffer's old contents). And OpenBLAS's
// workers, restarted by jx with a short spin, sleep after a product (blas_threads.h), and
// its kernel set uses the CPU's vectors where OpenBLAS did not know the CPU (blas_kernels.h).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/blas.h"
#include "backend/cpu/blas_kernels.h"
#include "backend/cpu/blas_threads.h"
#include "backend/cpu/onednn.h"
#include "backend/cpu/packed_gemm.h"
#include "backend/cpu/thread_pool.h"

namespace {

using jx::cpu::Op;

// Element (i, j) of op(X) where X is stored row-major with leading dimension ld.
template <class T>
T at(const std::vector<T>& x, Op op, int64_t ld, int64_t i, int64_t j) {
  return op == Op::None ? x[static_cast<size_t>(i * ld + j)] : x[static_cast<size_t>(j * ld + i)];
}

// A product's operands: op(A) m x k and op(B) k x n stored row-major with spare columns
// (A is k x m when transposed, B n x k), normal values, and a NaN-filled C.
template <class T>
struct GemmCase {
  Op oa, ob;
  int64_t m, n, k, lda, ldb, ldc;
  std::vector<T> a, b, c;
  GemmCase(Op oa_, Op ob_, int64_t m_, int64_t n_, int64_t k_) : oa(oa_), ob(ob_), m(m_), n(n_), k(k_) {
    std::mt19937 rng(static_cast<uint32_t>(m * 131 + n * 17 + k));
    std::normal_distribution<double> normal;
    const int64_t a_rows = oa == Op::None ? m : k, a_cols = oa == Op::None ? k : m;
    const int64_t b_rows = ob == Op::None ? k : n, b_cols = ob == Op::None ? n : k;
    lda = a_cols + 3, ldb = b_cols + 5, ldc = n + 2;
    a.resize(static_cast<size_t>(a_rows * lda));
    b.resize(static_cast<size_t>(b_rows * ldb));
    for (T& v : a) v = static_cast<T>(normal(rng));
    for (T& v : b) v = static_cast<T>(normal(rng));
    c.assign(static_cast<size_t>(m * ldc), std::numeric_limits<T>::quiet_NaN());
  }
  std::string trace() const {
    return "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
           " op_a=" + std::to_string(static_cast<int>(oa)) + " op_b=" + std::to_string(static_cast<int>(ob));
  }
  T got(int64_t i, int64_t j) const { return c[static_cast<size_t>(i * ldc + j)]; }
};

template <class T>
void check_gemm(Op oa, Op ob, int64_t m, int64_t n, int64_t k) {
  GemmCase<T> g(oa, ob, m, n, k);
  SCOPED_TRACE(g.trace());
  jx::cpu::gemm<T>(oa, ob, m, n, k, g.a.data(), g.lda, g.b.data(), g.ldb, g.c.data(), g.ldc);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t p = 0; p < k; ++p) want += double(at(g.a, oa, g.lda, i, p)) * double(at(g.b, ob, g.ldb, p, j));
      ASSERT_NEAR(g.got(i, j), want, 1e-4 * (1 + std::abs(want))) << "element (" << i << ", " << j << ")";
    }
}

TEST(CpuBlas, MatrixVectorProductsMatchALoop) {
  for (Op oa : {Op::None, Op::Transpose})
    for (Op ob : {Op::None, Op::Transpose})
      for (auto [m, n, k] : {std::tuple{1, 64, 64}, std::tuple{1, 7, 33}, std::tuple{9, 1, 5}, std::tuple{1, 1, 40},
                             std::tuple{64, 1, 64}, std::tuple{5, 6, 7}}) {
        check_gemm<float>(oa, ob, m, n, k);
        check_gemm<double>(oa, ob, m, n, k);
      }
}

TEST(CpuBlas, NothingToContractGivesZeros) {
  for (auto [m, n] : {std::pair{1, 5}, std::pair{4, 1}}) {
    std::vector<float> a(8, 1.0f), b(8, 1.0f);
    std::vector<float> c(static_cast<size_t>(m * n), std::numeric_limits<float>::quiet_NaN());
    jx::cpu::gemm<float>(Op::None, Op::None, m, n, 0, a.data(), 1, b.data(), n, c.data(), n);
    for (float v : c) EXPECT_EQ(v, 0.0f);
  }
}

// float32 products where oneDNN leads (onednn.h) run there, against the same loop: every
// combination of transposes, leading dimensions wider than the rows, a NaN-filled output.
TEST(CpuBlas, SmallAndMiddleFloat32ProductsRunOnOneDnnAndMatchALoop) {
  if (!dlopen("libdnnl.so.2", RTLD_LAZY | RTLD_LOCAL))
    GTEST_SKIP() << "libdnnl.so.2 (Debian's libdnnl2, which scripts/install_deps.sh installs) is missing";
  using jx::cpu::onednn_takes;
  EXPECT_TRUE(onednn_takes(32, 32, 32));
  EXPECT_TRUE(onednn_takes(256, 256, 256));
  EXPECT_TRUE(onednn_takes(512, 64, 512));
  EXPECT_TRUE(onednn_takes(256, 256, 8));
  EXPECT_FALSE(onednn_takes(16, 16, 16));      // below oneDNN's lead
  EXPECT_FALSE(onednn_takes(512, 512, 512));   // level: OpenBLAS keeps it
  EXPECT_FALSE(onednn_takes(768, 768, 768));   // OpenBLAS leads
  EXPECT_FALSE(onednn_takes(64, 1024, 256));   // a dimension past 512
  EXPECT_FALSE(onednn_takes(int64_t{1} << 40, int64_t{1} << 40, 2));  // no overflow in the size test
  if (jx::cpu::num_threads() > 1) {
    std::atomic<int> inside{0};
    jx::cpu::parallel_for(2, 1, [&](int64_t, int64_t) { inside += onednn_takes(256, 256, 256); });
    EXPECT_EQ(inside.load(), 0) << "a chunk of jx's pool must not start oneDNN's threads";
  }
  for (Op oa : {Op::None, Op::Transpose})
    for (Op ob : {Op::None, Op::Transpose})
      for (auto [m, n, k] : {std::tuple{32, 32, 32}, std::tuple{96, 80, 72}, std::tuple{256, 200, 130},
                             std::tuple{300, 40, 100}}) {
        ASSERT_TRUE(onednn_takes(m, n, k));
        check_gemm<float>(oa, ob, m, n, k);
      }
}

// The kernel builds this CPU runs (packed_gemm.h): AVX-512 and AVX2 on an AVX-512 CPU,
// AVX2 alone on one with AVX2 and FMA.
std::vector<jx::cpu::GemmKernel> kernels_this_cpu_runs() {
  std::vector<jx::cpu::GemmKernel> kernels;
  for (auto kernel : {jx::cpu::GemmKernel::Avx2, jx::cpu::GemmKernel::Avx512})
    if (kernel <= jx::cpu::packed_gemm_kernel()) kernels.push_back(kernel);
  return kernels;
}

const char* kernel_name(jx::cpu::GemmKernel kernel) {
  return kernel == jx::cpu::GemmKernel::Avx512 ? "AVX-512" : "AVX2";
}

// jx's kernel (packed_gemm.h), each build the CPU runs, at every edge of its tiling: rows
// past the last tile (every count below 12 and 6 rows), columns past the last panel (16
// and 8 doubles, 32 and 16 floats), depth past a 384-deep block, more threads than panels
// (rows split), all four transposes, leading dimensions wider than the rows and a
// NaN-filled C. Each element is held to T's rounding bound of its sum (k eps times the
// sum of the products' magnitudes).
template <class T>
void check_packed_kernel_at_every_edge() {
  const auto kernels = kernels_this_cpu_runs();
  if (kernels.empty()) GTEST_SKIP() << "the CPU has neither AVX-512 nor AVX2 with FMA: products stay on the BLAS";
  for (auto kernel : kernels)
    for (Op oa : {Op::None, Op::Transpose})
      for (Op ob : {Op::None, Op::Transpose})
        for (auto [m, n, k] : {std::tuple{1, 1, 1}, std::tuple{5, 7, 3}, std::tuple{12, 16, 384},
                               std::tuple{13, 17, 385}, std::tuple{6, 8, 384}, std::tuple{7, 9, 20},
                               std::tuple{23, 40, 800}, std::tuple{100, 70, 300}, std::tuple{64, 64, 64},
                               std::tuple{130, 5, 40}, std::tuple{35, 530, 20}, std::tuple{11, 33, 10}}) {
          GemmCase<T> g(oa, ob, m, n, k);
          SCOPED_TRACE(g.trace() + " on the " + kernel_name(kernel) + " kernel");
          ASSERT_TRUE(jx::cpu::packed_gemm_on(kernel, oa, ob, m, n, k, g.a.data(), g.lda, g.b.data(), g.ldb,
                                              g.c.data(), g.ldc));
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              long double want = 0, magnitude = 0;
              for (int64_t p = 0; p < k; ++p) {
                const long double term =
                    static_cast<long double>(at(g.a, oa, g.lda, i, p)) * at(g.b, ob, g.ldb, p, j);
                want += term;
                magnitude += std::abs(term);
              }
              const double bound =
                  2.0 * static_cast<double>(k) * std::numeric_limits<T>::epsilon() * static_cast<double>(magnitude);
              ASSERT_NEAR(g.got(i, j), static_cast<double>(want), bound) << "element (" << i << ", " << j << ")";
            }
            for (int64_t j = n; j < g.ldc; ++j)
              ASSERT_TRUE(std::isnan(g.got(i, j))) << "wrote past column " << n << " of row " << i;
          }
        }
}

TEST(CpuBlas, PackedFloat64KernelMatchesALoopAtEveryEdge) { check_packed_kernel_at_every_edge<double>(); }
TEST(CpuBlas, PackedFloat32KernelMatchesALoopAtEveryEdge) { check_packed_kernel_at_every_edge<float>(); }

// A build the CPU lacks refuses (the product stays on the BLAS) and writes nothing.
TEST(CpuBlas, PackedKernelRefusesABuildTheCpuLacks) {
  GemmCase<double> g(Op::None, Op::None, 20, 20, 20);
  const auto widest = jx::cpu::packed_gemm_kernel();
  EXPECT_FALSE(jx::cpu::packed_gemm_on(jx::cpu::GemmKernel::None, Op::None, Op::None, g.m, g.n, g.k, g.a.data(),
                                       g.lda, g.b.data(), g.ldb, g.c.data(), g.ldc));
  if (widest != jx::cpu::GemmKernel::Avx512) {
    EXPECT_FALSE(jx::cpu::packed_gemm_on(jx::cpu::GemmKernel::Avx512, Op::None, Op::None, g.m, g.n, g.k, g.a.data(),
                                         g.lda, g.b.data(), g.ldb, g.c.data(), g.ldc));
  }
  for (double x : g.c) ASSERT_TRUE(std::isnan(x));
  EXPECT_EQ(jx::cpu::packed_gemm_any_size(Op::None, Op::None, g.m, g.n, g.k, g.a.data(), g.lda, g.b.data(), g.ldb,
                                          g.c.data(), g.ldc),
            widest != jx::cpu::GemmKernel::None);
}

// Work on finished rows (the jit's fused matmul epilogue), each build the CPU runs: every
// row of C reported once, by ranges that do not overlap, each final when reported (a copy
// taken in the callback matches the loop), with more row bands than threads' tiles (5
// rows) and fewer.
TEST(CpuBlas, PackedKernelReportsEachFinishedRowOnce) {
  const auto kernels = kernels_this_cpu_runs();
  if (kernels.empty()) GTEST_SKIP() << "the CPU has neither AVX-512 nor AVX2 with FMA: products stay on the BLAS";
  for (auto kernel : kernels)
    for (auto [m, n, k] : {std::tuple{256, 96, 70}, std::tuple{5, 40, 30}, std::tuple{1, 33, 800}}) {
      GemmCase<float> g(Op::None, Op::Transpose, m, n, k);
      SCOPED_TRACE(g.trace() + " on the " + kernel_name(kernel) + " kernel");
      std::mutex mu;
      std::vector<int> seen(static_cast<size_t>(m), 0);
      std::vector<float> snapshot(g.c.size(), 0.0f);
      const jx::cpu::RowsDone rows_done = [&](int64_t begin, int64_t end) {
        std::lock_guard<std::mutex> lock(mu);
        for (int64_t i = begin; i < end; ++i) {
          ++seen[static_cast<size_t>(i)];
          std::copy_n(g.c.begin() + i * g.ldc, g.n, snapshot.begin() + i * g.ldc);
        }
      };
      ASSERT_TRUE(jx::cpu::packed_gemm_on(kernel, g.oa, g.ob, m, n, k, g.a.data(), g.lda, g.b.data(), g.ldb,
                                          g.c.data(), g.ldc, &rows_done));
      for (int64_t i = 0; i < m; ++i) {
        ASSERT_EQ(seen[static_cast<size_t>(i)], 1) << "row " << i;
        for (int64_t j = 0; j < n; ++j) {
          double want = 0;
          for (int64_t p = 0; p < k; ++p)
            want += double(at(g.a, g.oa, g.lda, i, p)) * double(at(g.b, g.ob, g.ldb, p, j));
          ASSERT_NEAR(snapshot[static_cast<size_t>(i * g.ldc + j)], want, 1e-4 * (1 + std::abs(want)))
              << "element (" << i << ", " << j << ") when its rows were reported";
        }
      }
    }
}

// The sizes jx's kernel takes (measured in packed_gemm.cpp's packed_gemm_takes), and
// products there through gemm<double> and gemm<float> (past oneDNN's sizes) against the loop.
TEST(CpuBlas, MiddleProductsRunOnJxsKernel) {
  using jx::cpu::GemmKernel;
  using jx::cpu::packed_gemm_takes;
  const GemmKernel kernel = jx::cpu::packed_gemm_kernel();
  const bool avx512 = kernel == GemmKernel::Avx512, avx2 = kernel == GemmKernel::Avx2;
  EXPECT_EQ(packed_gemm_takes<double>(256, 256, 256), avx512 || avx2);
  EXPECT_EQ(packed_gemm_takes<double>(64, 1024, 64), avx512 || avx2);
  EXPECT_EQ(packed_gemm_takes<double>(32, 256, 256), avx2);    // too few rows for the 12 x 16 tile, not the 6 x 8
  EXPECT_FALSE(packed_gemm_takes<double>(8, 256, 256));        // tiles mostly empty: OpenBLAS
  EXPECT_EQ(packed_gemm_takes<double>(512, 512, 512), avx512);  // AVX2: OpenBLAS's threads pay off past 2^26
  EXPECT_FALSE(packed_gemm_takes<double>(256, 256, 2048));     // OpenBLAS leads past 1024
  EXPECT_FALSE(packed_gemm_takes<double>(int64_t{1} << 40, int64_t{1} << 40, 128));
  for (Op oa : {Op::None, Op::Transpose})
    for (Op ob : {Op::None, Op::Transpose}) {
      check_gemm<double>(oa, ob, 64, 64, 64);
      check_gemm<double>(oa, ob, 100, 129, 300);
      check_gemm<double>(oa, ob, 17, 200, 33);
      ASSERT_FALSE(jx::cpu::onednn_takes(600, 130, 100));
      check_gemm<float>(oa, ob, 600, 130, 100);
    }
  EXPECT_EQ(packed_gemm_takes<float>(512, 512, 512), avx512);
  EXPECT_EQ(packed_gemm_takes<float>(600, 130, 100), avx512 || avx2);
  // With AVX2 alone, float32 products oneDNN takes stay on it, with an epilogue too.
  if (avx2) {
    EXPECT_EQ(packed_gemm_takes<float>(256, 256, 256), !jx::cpu::onednn_takes(256, 256, 256));
  }
  EXPECT_FALSE(packed_gemm_takes<float>(2048, 2048, 2048));
}

// The process's CPU time (user + system) in seconds.
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

TEST(CpuBlas, OpenBlasWorkersSleepSoonAfterAProduct) {
  const int exponent = jx::cpu::blas_spin_exponent();
  if (exponent == 0) GTEST_SKIP() << "the BLAS is not the pthreads build of OpenBLAS";
  if (const char* user = std::getenv("OPENBLAS_THREAD_TIMEOUT")) {
    GTEST_SKIP() << "OPENBLAS_THREAD_TIMEOUT=" << user << " is the user's to keep";
  }
  EXPECT_EQ(exponent, jx::cpu::kBlasSpinExponent);
  auto* threads = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!threads || threads() < 2) GTEST_SKIP() << "OpenBLAS runs one thread here: no workers to spin";
  // A product big enough for OpenBLAS to use its workers; then, while this thread sleeps
  // 200 ms, the process should burn next to no CPU. With OpenBLAS's own spin (2^28
  // cycles) a worker burned about 130 ms of it here.
  const int64_t n = 384;
  std::vector<double> a(static_cast<size_t>(n * n), 1.0), b(a), c(a.size());
  for (int round = 0; round < 2; ++round) {
    jx::cpu::gemm<double>(Op::None, Op::None, n, n, n, a.data(), n, b.data(), n, c.data(), n);
    ASSERT_EQ(c[5], static_cast<double>(n));
    const double before = process_cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_LT(process_cpu_seconds() - before, 0.03) << "OpenBLAS's workers still spin after the product";
  }
}

using jx::cpu::CpuFeatures;

TEST(CpuBlas, KernelSetFollowsTheCpusFeaturesWhereOpenBlasFellBack) {
  const CpuFeatures avx2{.avx2_fma = true}, avx512{.avx2_fma = true, .avx512 = true},
      avx512_bf16{.avx2_fma = true, .avx512 = true, .avx512_bf16 = true}, sse{};
  // OpenBLAS's fallback for a CPU it does not know, and other pre-AVX2 sets.
  EXPECT_EQ(jx::cpu::blas_kernels_instead_of("Prescott", avx512_bf16), "Cooperlake");
  EXPECT_EQ(jx::cpu::blas_kernels_instead_of("Prescott", avx512), "SkylakeX");
  EXPECT_EQ(jx::cpu::blas_kernels_instead_of("Nehalem", avx2), "Haswell");
  EXPECT_EQ(jx::cpu::blas_kernels_instead_of("Sandybridge", avx2), "Haswell");
  EXPECT_EQ(jx::cpu::blas_kernels_instead_of("Core2", sse), "");  // nothing better to run
  // A set that uses AVX2 is OpenBLAS's deliberate choice (Zen's on an AVX-512 Zen 4).
  for (const char* kept : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SAPPHIRERAPIDS"})
    EXPECT_EQ(jx::cpu::blas_kernels_instead_of(kept, avx512_bf16), "") << kept;
}

TEST(CpuBlas, OpenBlasRunsKernelsThatUseTheCpusVectors) {
  const jx::cpu::BlasKernels kernels = jx::cpu::blas_kernels();
  if (kernels.running.empty()) GTEST_SKIP() << "the BLAS is not OpenBLAS";
  if (const char* user = std::getenv("OPENBLAS_CORETYPE")) {
    GTEST_SKIP() << "OPENBLAS_CORETYPE=" << user << " is the user's to keep";
  }
  const CpuFeatures cpu = jx::cpu::cpu_features();
  EXPECT_EQ(jx::cpu::blas_kernels_instead_of(kernels.running, cpu), "")
      << "OpenBLAS runs its " << kernels.running << " kernels on a CPU with AVX2 (it chose "
      << kernels.chosen_by_openblas << ")";
  if (kernels.running != kernels.chosen_by_openblas) {
    // Replaced: the replacement's products are right, in both precisions and both
    // routines (the level-3 kernels and the matrix-vector ones).
    for (auto [m, n, k] : {std::tuple{96, 80, 72}, std::tuple{300, 1, 100}, std::tuple{1, 200, 130}}) {
      check_gemm<float>(Op::None, Op::Transpose, m, n, k);
      check_gemm<double>(Op::Transpose, Op::None, m, n, k);
    }
  }
}

}  // namespace
