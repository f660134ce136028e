// OpenBLAS's kernel set, replaced where OpenBLAS did not recognize the CPU.
//
// A DYNAMIC_ARCH OpenBLAS (Debian's) picks its kernels from the CPU's family and model
// number when it loads. A model newer than the release falls through to its oldest x86-64
// set, Prescott (SSE3): Debian 12's 0.3.21 on an Intel Xeon of model 207 (Emerald Rapids)
// runs sgemm and dgemm there at a fifth of their speed with the AVX-512 set (1024^3
// float32 35 ms against 7.5, float64 65 against 16). When OpenBLAS's choice uses no AVX2
// but the CPU has it, jx has OpenBLAS choose again, by name, the set the CPU's features
// call for: Cooperlake (AVX-512 with BF16), SkylakeX (AVX-512), or Haswell (AVX2 and FMA).
// A choice that uses AVX2 is OpenBLAS's deliberate one and is kept (Zen's AVX2 kernels on
// an AVX-512 Zen 4, say), as is a user's OPENBLAS_CORETYPE and any other BLAS.
#pragma once

#include <string>

namespace jx::cpu {

// What OpenBLAS's kernel sets need of the CPU.
struct CpuFeatures {
  bool avx2_fma = false, avx512 = false /* F, CD, BW, DQ, VL */, avx512_bf16 = false;
};
CpuFeatures cpu_features();  // this CPU's

// The kernel set jx gives OpenBLAS in place of `chosen` (OpenBLAS's own choice) on a CPU
// with these features, or "" to keep `chosen`.
std::string blas_kernels_instead_of(const std::string& chosen, const CpuFeatures& cpu);

// The kernel set OpenBLAS chose when it loaded, and the one it runs now ("" when the
// BLAS is not OpenBLAS). They differ where jx replaced the first.
struct BlasKernels {
  std::string chosen_by_openblas, running;
};
BlasKernels blas_kernels();

}  // namespace jx::cpu
