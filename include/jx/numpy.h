// jx::numpy: NumPy's names and semantics on top of jx::lax.
//   namespace jnp = jx::numpy;
// Where JAX deliberately differs from NumPy (immutability, clamped out-of-bounds
// gathers, static `size` arguments) jx follows JAX; each such function says so.
#pragma once

#include "jx/numpy/core.h"
#include "jx/numpy/creation.h"
#include "jx/numpy/indexing.h"
#include "jx/numpy/manipulation.h"
#include "jx/numpy/math.h"
#include "jx/numpy/products.h"
#include "jx/numpy/reductions.h"
#include "jx/numpy/sorting.h"
