// What kernels and interpreters need of a concrete array: allocation, views, raw data.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "jx/array.h"

namespace jx::detail {

// A fresh, contiguous, uninitialized array (64-byte aligned).
Array alloc_array(const Aval& aval);
// A fresh contiguous array over `storage` (at least aval's size in bytes), for buffers
// the jit runtime recycles.
Array adopt_storage(std::shared_ptr<Storage> storage, const Aval& aval);
// A view sharing `base`'s storage with its own shape, element strides and offset.
Array make_view(const Array& base, const Aval& aval, std::vector<int64_t> strides, int64_t offset);
// Same data with the weak_type flag replaced (no copy).
Array with_weak_type(const Array& x, bool weak);

// The concrete impl, or jx::Error naming `op` if x is null or traced.
const ArrayImpl& concrete_impl(const Array& x, std::string_view op);
// The concrete impl behind x, following tracers that know their value (jvp/linearize
// carry primals); raises a concretization error naming `op`, `what` was attempted and
// the transformation that made the value abstract.
const ArrayImpl& known_concrete_impl(const Array& x, std::string_view op, std::string_view what);
bool is_contiguous(const Array& x);
// x itself when row-major contiguous, else a contiguous copy.
Array contiguous(const Array& x);

// Pointer to element (0, ..., 0) of a concrete array.
inline const void* raw_data(const Array& x) {
  const auto& impl = x.impl();
  return static_cast<const char*>(impl.storage->data) + impl.offset * itemsize(impl.aval.dtype);
}
template <class T>
const T* data(const Array& x) {
  return static_cast<const T*>(raw_data(x));
}
// Writable pointer: only for arrays the caller has just allocated and not yet shared.
template <class T>
T* mutable_data(const Array& fresh) {
  return static_cast<T*>(const_cast<void*>(raw_data(fresh)));
}
const std::vector<int64_t>& strides(const Array& x);

// A concrete 0-d array holding v (strongly typed unless `weak`).
template <Element T>
Array scalar(T v, bool weak = false) {
  Array out = alloc_array(Aval{{}, dtype_of<T>, weak});
  *mutable_data<T>(out) = v;
  return out;
}
// A concrete 0-d array of `dtype` holding v converted.
Array scalar_of(DType dtype, double v);

}  // namespace jx::detail
