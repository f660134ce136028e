// Eager's inline-math loops at AVX-512's width (inline_math_loops.inc): this file is
// compiled for that ISA (CMakeLists.txt) and runs only where the CPU has it
// (inline_math.cpp).
#include "backend/cpu/inline_math.h"

#ifdef JX_INLINE_MATH
#define JX_SIMD_BYTES 64
#define JX_VF __m512
#define JX_VD __m512d
#define JX_MVEC_F(fn) _ZGVeN16v_##fn##f
#define JX_MVEC_D(fn) _ZGVeN8v_##fn
#define JX_INLINE_UNARY inline_unary_avx512
#include "backend/cpu/inline_math_loops.inc"
#endif
