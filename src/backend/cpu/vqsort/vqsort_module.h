// The C interface between libjx and libjx_vqsort.so, the module holding Highway's vqsort
// (vqsort_module.cpp). libjx loads the module on its first sort (vqsort_loader.h): the
// Highway library runs a static initializer that measures its timer for about 5 ms, a
// cost every process linked against it pays at startup, sorting or not.
#pragma once

#include <cstddef>
#include <cstdint>

namespace jx::cpu {

// A sorter holds vqsort's scratch buffers, for one thread at a time. Each sort function
// sorts p[0, n) ascending in place with one (vqsort: vectorized quicksort, dispatched on
// the CPU's instruction set at run time); u128 sorts n pairs {lo, hi} of 64-bit words as
// the 128-bit integers hi * 2^64 + lo (Highway's uint128_t layout).
struct VqsortFunctions {
  int abi_version;
  void* (*new_sorter)();
  void (*delete_sorter)(void* sorter);
  void (*i16)(const void* sorter, int16_t* p, size_t n);
  void (*u16)(const void* sorter, uint16_t* p, size_t n);
  void (*i32)(const void* sorter, int32_t* p, size_t n);
  void (*u32)(const void* sorter, uint32_t* p, size_t n);
  void (*i64)(const void* sorter, int64_t* p, size_t n);
  void (*u64)(const void* sorter, uint64_t* p, size_t n);
  void (*u128)(const void* sorter, uint64_t* pairs, size_t n);
};

// Bumped whenever VqsortFunctions changes, so a stale module is refused, not misread.
inline constexpr int kVqsortAbiVersion = 1;
inline constexpr char kVqsortModuleName[] = "libjx_vqsort.so";
inline constexpr char kVqsortEntryPoint[] = "jx_vqsort_functions";

}  // namespace jx::cpu

// The module's one exported symbol.
extern "C" const jx::cpu::VqsortFunctions* jx_vqsort_functions();
