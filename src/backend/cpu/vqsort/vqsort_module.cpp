// libjx_vqsort.so: Highway's vqsort behind the table of vqsort_module.h. Built as a module
// of its own (CMakeLists.txt), never linked into libjx, so that only a process that sorts
// loads Highway.
#include "backend/cpu/vqsort/vqsort_module.h"

#include <hwy/contrib/sort/vqsort.h>

namespace {

// No thread_local sorter here: the dynamic TLS of a dlopen'ed module crashed
// LeakSanitizer's exit-time scan of the worker threads; the caller keeps one per chunk.
void* new_sorter() { return new hwy::Sorter(); }
void delete_sorter(void* sorter) { delete static_cast<hwy::Sorter*>(sorter); }

template <class T>
void sort_ascending(const void* sorter, T* p, size_t n) {
  (*static_cast<const hwy::Sorter*>(sorter))(p, n, hwy::SortAscending());
}

void sort_u128(const void* sorter, uint64_t* pairs, size_t n) {
  static_assert(sizeof(hwy::uint128_t) == 16 && offsetof(hwy::uint128_t, lo) == 0 && offsetof(hwy::uint128_t, hi) == 8,
                "the module's pairs are Highway's uint128_t");
  (*static_cast<const hwy::Sorter*>(sorter))(reinterpret_cast<hwy::uint128_t*>(pairs), n, hwy::SortAscending());
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const jx::cpu::VqsortFunctions* jx_vqsort_functions() {
  static const jx::cpu::VqsortFunctions table{
      .abi_version = jx::cpu::kVqsortAbiVersion,
      .new_sorter = new_sorter,
      .delete_sorter = delete_sorter,
      .i16 = sort_ascending<int16_t>,
      .u16 = sort_ascending<uint16_t>,
      .i32 = sort_ascending<int32_t>,
      .u32 = sort_ascending<uint32_t>,
      .i64 = sort_ascending<int64_t>,
      .u64 = sort_ascending<uint64_t>,
      .u128 = sort_u128,
  };
  return &table;
}
