// Eager's inline-math loops at AVX2's width (inline_math_loops.inc): this file is
// compiled for that ISA (CMakeLists.txt) and runs only where the CPU has it
// (inline_math.cpp).
#include "backend/cpu/inline_math.h"

#ifdef JX_INLINE_MATH
#define JX_SIMD_BYTES 32
#define JX_VF __m256
#define JX_VD __m256d
#define JX_MVEC_F(fn) _ZGVdN8v_##fn##f
#define JX_MVEC_D(fn) _ZGVdN4v_##fn
#define JX_INLINE_UNARY inline_unary_avx2
#include "backend/cpu/inline_math_loops.inc"
#endif
