#include "backend/cpu/packed_gemm.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>

#include "backend/cpu/thread_pool.h"

namespace jx::cpu {
namespace {

bool cpu_has_avx512() {
#ifdef JX_PACKED_GEMM
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

#ifdef JX_PACKED_GEMM
// A thread's packed panels of B, 64-byte aligned for the kernel's loads; kept for the
// thread's life (768 KiB, shared by both element types: a thread runs one product at a time).
void* scratch_of_this_thread() {
  struct Deleter {
    void operator()(char* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  thread_local std::unique_ptr<char[], Deleter> buffer(
      static_cast<char*>(::operator new[](kGemmScratchBytes, std::align_val_t(64))));
  return buffer.get();
}
#endif

template <class T>
void run(const GemmJob<T>& job, const RowsDone* rows_done) {
#ifdef JX_PACKED_GEMM
  // Threads split C's columns by panels (each packs only its own B); with more threads
  // than panels the rows are split too, in whole tiles. Work on finished rows splits
  // by rows alone, so that each thread's rows are final when its part ends.
  const int64_t panels = (job.n + kGemmPanelCols<T> - 1) / kGemmPanelCols<T>;
  const int64_t row_tiles = (job.m + kGemmTileRows - 1) / kGemmTileRows;
  const int64_t threads = in_parallel_chunk() ? 1 : num_threads();
  const int64_t column_parts = rows_done ? 1 : std::min<int64_t>(threads, panels);
  const int64_t row_parts = std::clamp<int64_t>(threads / column_parts, 1, row_tiles);
  // Where row part q starts: whole tiles, or for work on finished rows equal shares of
  // rows (each share's last tile short): 256 rows in 132 and 124 kept one thread 3% longer
  // than 128 and 128.
  const auto row_edge = [&](int64_t q) {
    return rows_done ? job.m * q / row_parts : std::min(job.m, row_tiles * q / row_parts * kGemmTileRows);
  };
  parallel_for(column_parts * row_parts, 1, [&](int64_t begin, int64_t end) {
    T* scratch = static_cast<T*>(scratch_of_this_thread());
    for (int64_t part = begin; part < end; ++part) {
      const int64_t col_part = part % column_parts, row_part = part / column_parts;
      const int64_t row_begin = row_edge(row_part), row_end = row_edge(row_part + 1);
      gemm_part_avx512(job, row_begin, row_end, panels * col_part / column_parts,
                       panels * (col_part + 1) / column_parts, scratch);
      if (rows_done && row_end > row_begin) (*rows_done)(row_begin, row_end);
    }
  });
#endif
}

}  // namespace

template <class T>
bool packed_gemm_takes(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kMinDim = 64, kMaxDim = 1024;
  return std::min({m, n, k}) >= kMinDim && std::max({m, n, k}) <= kMaxDim && cpu_has_avx512();
}

template <class T>
bool packed_gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                 T* c, int64_t ldc) {
  return packed_gemm_takes<T>(m, n, k) && packed_gemm_any_size(op_a, op_b, m, n, k, a, lda, b, ldb, c, ldc);
}

template <class T>
bool packed_gemm_any_size(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                          int64_t ldb, T* c, int64_t ldc, const RowsDone* rows_done) {
  if (!cpu_has_avx512() || std::min({m, n, k}) < 1) return false;
  // For real matrices the conjugate transpose is the transpose.
  run(GemmJob<T>{op_a != Op::None, op_b != Op::None, m, n, k, a, lda, b, ldb, c, ldc}, rows_done);
  return true;
}

#define JX_PACKED_GEMM_INSTANTIATE(T)                                                                              \
  template bool packed_gemm_takes<T>(int64_t, int64_t, int64_t);                                                   \
  template bool packed_gemm<T>(Op, Op, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, T*, int64_t); \
  template bool packed_gemm_any_size<T>(Op, Op, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, T*, \
                                        int64_t, const RowsDone*);
JX_PACKED_GEMM_INSTANTIATE(float)
JX_PACKED_GEMM_INSTANTIATE(double)
#undef JX_PACKED_GEMM_INSTANTIATE

}  // namespace jx::cpu
