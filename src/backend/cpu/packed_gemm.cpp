#include "backend/cpu/packed_gemm.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include "backend/cpu/onednn.h"
#include "backend/cpu/thread_pool.h"

namespace jx::cpu {
namespace {

bool cpu_runs(GemmKernel kernel) {
#ifdef JX_PACKED_GEMM
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return kernel == GemmKernel::Avx512 ? avx512 : kernel == GemmKernel::Avx2 && avx2;
#else
  (void)kernel;
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
void run(GemmKernel kernel, const GemmJob<T>& job, const RowsDone* rows_done) {
#ifdef JX_PACKED_GEMM
  const GemmTile tile = kernel == GemmKernel::Avx512 ? kGemmTileAvx512 : kGemmTileAvx2;
  const int64_t tile_rows = tile.rows, panel_cols = gemm_panel_cols<T>(tile);
  // Threads split C's columns by panels (each packs only its own B); with more threads
  // than panels the rows are split too, in whole tiles. Work on finished rows splits
  // by rows alone, so that each thread's rows are final when its part ends.
  const int64_t panels = (job.n + panel_cols - 1) / panel_cols;
  const int64_t row_tiles = (job.m + tile_rows - 1) / tile_rows;
  const int64_t threads = in_parallel_chunk() ? 1 : num_threads();
  const int64_t column_parts = rows_done ? 1 : std::min<int64_t>(threads, panels);
  const int64_t row_parts = std::clamp<int64_t>(threads / column_parts, 1, row_tiles);
  // Where row part q starts: whole tiles, or for work on finished rows equal shares of
  // rows (each share's last tile short): 256 rows in 132 and 124 kept one thread 3% longer
  // than 128 and 128.
  const auto row_edge = [&](int64_t q) {
    return rows_done ? job.m * q / row_parts : std::min(job.m, row_tiles * q / row_parts * tile_rows);
  };
  parallel_for(column_parts * row_parts, 1, [&](int64_t begin, int64_t end) {
    T* scratch = static_cast<T*>(scratch_of_this_thread());
    for (int64_t part = begin; part < end; ++part) {
      const int64_t col_part = part % column_parts, row_part = part / column_parts;
      const int64_t row_begin = row_edge(row_part), row_end = row_edge(row_part + 1);
      const int64_t panel_begin = panels * col_part / column_parts, panel_end = panels * (col_part + 1) / column_parts;
      if (kernel == GemmKernel::Avx512) gemm_part_avx512(job, row_begin, row_end, panel_begin, panel_end, scratch);
      else gemm_part_avx2(job, row_begin, row_end, panel_begin, panel_end, scratch);
      if (rows_done && row_end > row_begin) (*rows_done)(row_begin, row_end);
    }
  });
#else
  (void)kernel, (void)job, (void)rows_done;
#endif
}

}  // namespace

GemmKernel packed_gemm_kernel() {
  if (cpu_runs(GemmKernel::Avx512)) return GemmKernel::Avx512;
  return cpu_runs(GemmKernel::Avx2) ? GemmKernel::Avx2 : GemmKernel::None;
}

template <class T>
bool packed_gemm_takes(int64_t m, int64_t n, int64_t k) {
  const int64_t smallest = std::min({m, n, k}), largest = std::max({m, n, k});
  switch (packed_gemm_kernel()) {
    case GemmKernel::Avx512:
      // Measured on the Xeon: packed_gemm.h.
      return smallest >= 64 && largest <= 1024;
    case GemmKernel::Avx2: {
      // On the 2-core Zen 3 (AVX2, 41-45 GFLOP/s of float64 FMA per core), 2 threads,
      // best of 7 rounds, GFLOP/s OpenBLAS (Zen kernels) : jx, float64: 16^3 18.6 : 21.0,
      // 32^3 26.6 : 45.7, 48^3 32.3 : 68.4, 64^3 34.0 : 53.8, 128^3 37.7 : 66.2, 256^3
      // 51.5-74.0 : 69.1-80.5, 384^3 64.7-68.2 : 60.8-65.7, 512^3 64.5-75.9 : 57.4-80.4,
      // 1024^3 62.9-70.6 : 59.7-67.0; skinny shapes: 64 x 1024 x 64 43.9 : 55.7, 1024 x 64
      // x 1024 45.4 : 65.9, 512 x 32 x 512 32.3 : 80.5, 512 x 512 x 32 23.1 : 37.8; 8^3
      // and 12^3 7.3 : 5.4, 12.3 : 10.8. One core alone, both are at its peak from 128^3
      // to 1024^3 (jx 1-8% ahead to 512^3, level at 1024^3): what OpenBLAS loses is its
      // threading on small work. So jx's kernel takes products of up to 2^26 multiply-adds
      // (406^3) with every dimension from 16 to 1024. float32 ones only where oneDNN
      // declines (blas.cpp asks it first), with an epilogue too: oneDNN led jx's kernel
      // on most float32 shapes up to 512 (GFLOP/s, oneDNN : jx, 256^3 130-180 : 115-179,
      // 64 x 256 x 128 152.5 : 128.6-137.9, 128 x 256 x 64 131.4-143.5 : 120.8-124.3),
      // and an MLP's value and gradient (mlp_value_and_grad_b64: its forward product and
      // a weight gradient fused with their epilogues on jx's kernel) ran 115-141 ->
      // 144-186 us.
      constexpr double kMaxWork = double(int64_t{1} << 26);
      const bool fits = smallest >= 16 && largest <= 1024 && double(m) * double(n) * double(k) <= kMaxWork;
      return fits && (!std::is_same_v<T, float> || !onednn_takes(m, n, k));
    }
    case GemmKernel::None:
      break;
  }
  return false;
}

template <class T>
bool packed_gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                 T* c, int64_t ldc) {
  return packed_gemm_takes<T>(m, n, k) && packed_gemm_any_size(op_a, op_b, m, n, k, a, lda, b, ldb, c, ldc);
}

template <class T>
bool packed_gemm_any_size(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                          int64_t ldb, T* c, int64_t ldc, const RowsDone* rows_done) {
  return packed_gemm_on(packed_gemm_kernel(), op_a, op_b, m, n, k, a, lda, b, ldb, c, ldc, rows_done);
}

template <class T>
bool packed_gemm_on(GemmKernel kernel, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                    const T* b, int64_t ldb, T* c, int64_t ldc, const RowsDone* rows_done) {
  if (!cpu_runs(kernel) || std::min({m, n, k}) < 1) return false;
  // For real matrices the conjugate transpose is the transpose.
  run(kernel, GemmJob<T>{op_a != Op::None, op_b != Op::None, m, n, k, a, lda, b, ldb, c, ldc}, rows_done);
  return true;
}

#define JX_PACKED_GEMM_INSTANTIATE(T)                                                                              \
  template bool packed_gemm_takes<T>(int64_t, int64_t, int64_t);                                                   \
  template bool packed_gemm<T>(Op, Op, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, T*, int64_t); \
  template bool packed_gemm_any_size<T>(Op, Op, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, T*, \
                                        int64_t, const RowsDone*);                                         \
  template bool packed_gemm_on<T>(GemmKernel, Op, Op, int64_t, int64_t, int64_t, const T*, int64_t, const T*,       \
                                  int64_t, T*, int64_t, const RowsDone*);
JX_PACKED_GEMM_INSTANTIATE(float)
JX_PACKED_GEMM_INSTANTIATE(double)
#undef JX_PACKED_GEMM_INSTANTIATE

}  // namespace jx::cpu
