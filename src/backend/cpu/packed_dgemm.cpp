#include "backend/cpu/packed_dgemm.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>

#include "backend/cpu/thread_pool.h"

namespace jx::cpu {
namespace {

bool cpu_has_avx512() {
#ifdef JX_PACKED_DGEMM
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

#ifdef JX_PACKED_DGEMM
// A thread's packed panels of B, 64-byte aligned for the kernel's loads; kept for the
// thread's life (768 KiB).
double* scratch_of_this_thread() {
  struct Deleter {
    void operator()(double* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  thread_local std::unique_ptr<double[], Deleter> buffer(
      static_cast<double*>(::operator new[](sizeof(double) * kDgemmScratchDoubles, std::align_val_t(64))));
  return buffer.get();
}
#endif

void run(const DgemmJob& job) {
#ifdef JX_PACKED_DGEMM
  // Threads split C's columns by panels (each packs only its own B); with more threads
  // than panels the rows are split too, in whole tiles.
  const int64_t panels = (job.n + kDgemmPanelCols - 1) / kDgemmPanelCols;
  const int64_t row_tiles = (job.m + kDgemmTileRows - 1) / kDgemmTileRows;
  const int64_t threads = in_parallel_chunk() ? 1 : num_threads();
  const int64_t column_parts = std::min<int64_t>(threads, panels);
  const int64_t row_parts = std::clamp<int64_t>(threads / column_parts, 1, row_tiles);
  parallel_for(column_parts * row_parts, 1, [&](int64_t begin, int64_t end) {
    double* scratch = scratch_of_this_thread();
    for (int64_t part = begin; part < end; ++part) {
      const int64_t col_part = part % column_parts, row_part = part / column_parts;
      const int64_t row_begin = std::min(job.m, row_tiles * row_part / row_parts * kDgemmTileRows);
      const int64_t row_end = std::min(job.m, row_tiles * (row_part + 1) / row_parts * kDgemmTileRows);
      dgemm_part_avx512(job, row_begin, row_end, panels * col_part / column_parts,
                        panels * (col_part + 1) / column_parts, scratch);
    }
  });
#endif
}

}  // namespace

bool packed_dgemm_takes(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kMinDim = 64, kMaxDim = 1024;
  return std::min({m, n, k}) >= kMinDim && std::max({m, n, k}) <= kMaxDim && cpu_has_avx512();
}

bool packed_dgemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
                  int64_t ldb, double* c, int64_t ldc) {
  return packed_dgemm_takes(m, n, k) && packed_dgemm_any_size(op_a, op_b, m, n, k, a, lda, b, ldb, c, ldc);
}

bool packed_dgemm_any_size(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                           const double* b, int64_t ldb, double* c, int64_t ldc) {
  if (!cpu_has_avx512() || std::min({m, n, k}) < 1) return false;
  // For real matrices the conjugate transpose is the transpose.
  run(DgemmJob{op_a != Op::None, op_b != Op::None, m, n, k, a, lda, b, ldb, c, ldc});
  return true;
}

}  // namespace jx::cpu
