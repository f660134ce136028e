// Highway's vqsort for the sort kernels, loaded from libjx_vqsort.so on the first sort
// (vqsort_module.h says why it is a module of its own).
#pragma once

#include <string>

#include "backend/cpu/vqsort/vqsort_module.h"

namespace jx::cpu {

// The module beside libjx, loaded once (thread-safe); raises jx::Error("[sort] ...") if
// it cannot be loaded, and tries again on the next call.
const VqsortFunctions& vqsort();

// Loads a vqsort module from `path` and checks it is one of this libjx's interface;
// raises jx::Error naming the path and the reason otherwise.
const VqsortFunctions& load_vqsort_module(const std::string& path);

// Sorts p[0, n) ascending through the module.
inline void vqsort_ascending(int16_t* p, size_t n) { vqsort().i16(p, n); }
inline void vqsort_ascending(uint16_t* p, size_t n) { vqsort().u16(p, n); }
inline void vqsort_ascending(int32_t* p, size_t n) { vqsort().i32(p, n); }
inline void vqsort_ascending(uint32_t* p, size_t n) { vqsort().u32(p, n); }
inline void vqsort_ascending(int64_t* p, size_t n) { vqsort().i64(p, n); }
inline void vqsort_ascending(uint64_t* p, size_t n) { vqsort().u64(p, n); }

}  // namespace jx::cpu
