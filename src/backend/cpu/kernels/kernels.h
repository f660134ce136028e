// The CPU backend's kernels: the eager implementations of the built-in primitives, one
// file per family (the families of src/lax/), each adding its primitives' impls to the
// CPU's KernelTable by name. CpuBackend::load_kernels calls every add_*_kernels once, at
// the first kernel lookup; a primitive's rules (shape, jvp, batching, lowering) stay in
// its block in src/lax/.
#pragma once

#include "backend/backend.h"

namespace jx::cpu {

void add_unary_kernels(detail::KernelTable& table);           // elementwise_unary
void add_binary_kernels(detail::KernelTable& table);          // elementwise_binary
void add_elementwise_misc_kernels(detail::KernelTable& table);  // select_n, converts, ...
void add_shape_kernels(detail::KernelTable& table);           // iota, reshape, transpose, ...
void add_slicing_kernels(detail::KernelTable& table);         // slice, pad, concatenate, ...
void add_gather_scatter_kernels(detail::KernelTable& table);
void add_reduction_kernels(detail::KernelTable& table);
void add_cumulative_kernels(detail::KernelTable& table);
void add_sort_kernels(detail::KernelTable& table);
void add_dot_kernels(detail::KernelTable& table);
void add_conv_kernels(detail::KernelTable& table);
void add_linalg_kernels(detail::KernelTable& table);
void add_prng_kernels(detail::KernelTable& table);
void add_collective_kernels(detail::KernelTable& table);  // psum, all_gather, ... (src/distributed/)

}  // namespace jx::cpu
