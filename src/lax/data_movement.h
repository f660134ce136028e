// Byte-moving kernels shared by the shape, slicing and gather/scatter primitives. Moving
// data never needs the element's meaning, only its width, so these dispatch once on the
// itemsize (1, 2, 4, 8 or 16 bytes) instead of the dtype.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/array_internal.h"
#include "jx/array.h"

namespace jx::lax::movement {

// A 16-byte element (complex128) moved as a unit.
struct Bytes16 {
  uint64_t lo, hi;
};

// Calls f.template operator()<W>() with W an unsigned type as wide as one element.
template <class F>
decltype(auto) dispatch_width(int64_t width, F&& f) {
  switch (width) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
    case 16: return f.template operator()<Bytes16>();
  }
  throw Error("[data_movement] unsupported element width");
}

// Copies `shape` elements of `width` bytes from src to dst, each walked with its own
// element strides. Inner runs contiguous on both sides become memcpy; a 2-d transpose
// pattern is tiled so that both sides stay in cache. Large copies use the thread pool.
void copy_strided(int64_t width, const Shape& shape, const void* src, const std::vector<int64_t>& src_strides,
                  void* dst, const std::vector<int64_t>& dst_strides);

// Writes `n` copies of the `width`-byte value at `value` to contiguous dst.
void fill_contiguous(int64_t width, void* dst, int64_t n, const void* value);

// Writes `value` to every element of a strided region of dst.
void fill_strided(int64_t width, const Shape& shape, void* dst, const std::vector<int64_t>& dst_strides,
                  const void* value);

// A fresh contiguous copy of x (even when x is already contiguous), with aval `aval`
// (x's shape, possibly another weak_type).
Array copy_to_fresh(const Array& x, const Aval& aval);

// NumPy's no-copy reshape: the strides that view x's data with shape new_shape, if any.
bool reshape_strides(const Shape& old_shape, const std::vector<int64_t>& old_strides, const Shape& new_shape,
                     std::vector<int64_t>& new_strides);

// Reads a 0-d integer array as int64 (start indices of dynamic_slice and friends).
int64_t scalar_index(const Array& x);

}  // namespace jx::lax::movement
