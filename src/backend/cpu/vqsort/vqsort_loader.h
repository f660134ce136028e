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

// vqsort's scratch buffers for one thread at a time (loading the module on first use);
// each call sorts p[0, n) ascending.
class Vqsorter {
 public:
  Vqsorter() : f_(vqsort()), sorter_(f_.new_sorter()) {}
  ~Vqsorter() { f_.delete_sorter(sorter_); }
  Vqsorter(const Vqsorter&) = delete;
  Vqsorter& operator=(const Vqsorter&) = delete;

  void operator()(int16_t* p, size_t n) const { f_.i16(sorter_, p, n); }
  void operator()(uint16_t* p, size_t n) const { f_.u16(sorter_, p, n); }
  void operator()(int32_t* p, size_t n) const { f_.i32(sorter_, p, n); }
  void operator()(uint32_t* p, size_t n) const { f_.u32(sorter_, p, n); }
  void operator()(int64_t* p, size_t n) const { f_.i64(sorter_, p, n); }
  void operator()(uint64_t* p, size_t n) const { f_.u64(sorter_, p, n); }
  // n pairs {lo, hi} as 128-bit integers hi * 2^64 + lo.
  void sort_pairs(uint64_t* pairs, size_t n) const { f_.u128(sorter_, pairs, n); }

 private:
  const VqsortFunctions& f_;
  void* sorter_;
};

}  // namespace jx::cpu
