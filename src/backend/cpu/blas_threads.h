// OpenBLAS's worker threads, made to sleep soon after their work.
//
// The pthreads build of OpenBLAS (Debian's default) keeps its workers spinning for
// 2^OPENBLAS_THREAD_TIMEOUT cycles (2^28 unless set: about 0.13 s of a core here) after
// each BLAS call, and once when the library loads. On a machine with as many cores as
// threads that spin competes with jx's own pool for the cores: an elementwise epilogue
// after a GEMM (gelu(A @ B + b)) or the compile of a first jitted call runs beside a
// worker that yields but does not sleep. OpenBLAS reads the variable only when it loads,
// so jx sets it for OpenBLAS (when the user has not) in a constructor, re-reads it
// through OpenBLAS's own openblas_read_env, and restarts the workers (the path OpenBLAS
// takes around fork) when jx first works: the restarted workers spin 2^18 cycles (about
// 0.1 ms) before they sleep, long enough for back-to-back GEMMs to find them awake.
// Other BLAS libraries, the OpenMP build and a user's own setting are left alone.
#pragma once

namespace jx::cpu {

// The spin jx gives OpenBLAS's workers, as a power of two of cycles.
inline constexpr int kBlasSpinExponent = 18;

// Restarts OpenBLAS's workers with the spin set at load, once per process (later calls
// return at once). Called when jx's thread pool starts and before jx's BLAS calls.
void settle_blas_threads();

// OpenBLAS's spin as it will apply to its next workers (the exponent), or 0 when the
// BLAS is not the pthreads OpenBLAS.
int blas_spin_exponent();

}  // namespace jx::cpu
