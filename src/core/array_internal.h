// What kernels and interpreters need of a concrete array: allocation, views, raw data.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "jx/array.h"

namespace jx::detail {

// ---- checked size arithmetic ----
// Every extent, element count and byte count jx forms goes through these, so a size
// near 2^63 raises "[op] ..." instead of wrapping into a small or negative one.
// `what` (streamed only on failure) says which quantity overflowed.

template <class... What>
int64_t checked_add(int64_t a, int64_t b, std::string_view op, const What&... what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail(op, "size overflow: ", a, " + ", b, " exceeds 2^63 - 1", what...);
  return r;
}
template <class... What>
int64_t checked_sub(int64_t a, int64_t b, std::string_view op, const What&... what) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) fail(op, "size overflow: ", a, " - ", b, " exceeds int64", what...);
  return r;
}
template <class... What>
int64_t checked_mul(int64_t a, int64_t b, std::string_view op, const What&... what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(op, "size overflow: ", a, " * ", b, " exceeds 2^63 - 1", what...);
  return r;
}

// Bytes of an array of `shape` and `dtype`: raises naming op, shape and dtype for a
// negative dimension or an element or byte count past 2^63 - 1.
int64_t checked_nbytes(const Shape& shape, DType dtype, std::string_view op);
// checked_nbytes, and the bytes must fit in this machine's memory (RAM + swap): what
// alloc_array requires. Ops that will materialize a result call it first, so the error
// names them rather than a primitive they are built from.
int64_t check_allocatable(const Shape& shape, DType dtype, std::string_view op);

// Names the operation whose buffers are being allocated, for out-of-memory errors
// (Primitive::eval opens one around each impl). Scopes nest; the default is "alloc".
class AllocScope {
 public:
  explicit AllocScope(std::string_view op);
  ~AllocScope();
  AllocScope(const AllocScope&) = delete;
  AllocScope& operator=(const AllocScope&) = delete;

 private:
  std::string_view saved_;
};
std::string_view alloc_op();

// The buffers the kernel about to write read (Primitive::run_impl's operands, a jitted
// step's inputs). A kernel storing to one buffer while loading from another that sits
// up to kAliasingReach bytes before it modulo a page stalls its loads ("4K aliasing":
// the CPU first checks a load against earlier stores by their addresses' low 12 bits;
// a layer norm over 160000 x 10 floats took 0.89 ms at distance 0 and 64, 0.45 at 128,
// 0.36 from 256), so a fresh large output takes a page offset out of their reach
// (cpu_backend.cpp) and a recycled one is passed over (the jit's buffer pool). Scopes
// nest; the span must outlive the scope.
inline constexpr uintptr_t kAliasingReach = 256;
class ReadBuffersScope {
 public:
  explicit ReadBuffersScope(std::span<const void* const> reads);
  ~ReadBuffersScope();
  ReadBuffersScope(const ReadBuffersScope&) = delete;
  ReadBuffersScope& operator=(const ReadBuffersScope&) = delete;

 private:
  std::span<const void* const> saved_;
};
// Buffers of this many bytes and more start at staggered page offsets (cpu_backend.cpp).
inline constexpr int64_t kStaggeredBytes = int64_t{256} << 10;
inline bool any_staggered(std::span<const Aval> avals) {
  for (const Aval& a : avals)
    if (a.size() * itemsize(a.dtype) >= kStaggeredBytes) return true;
  return false;
}
// The scope of an eager operation's operands of a page or more (at most 8).
class OperandReadsScope {
 public:
  explicit OperandReadsScope(std::span<const Array> operands);
  OperandReadsScope(const OperandReadsScope&) = delete;
  OperandReadsScope& operator=(const OperandReadsScope&) = delete;

 private:
  std::array<const void*, 8> reads_;
  ReadBuffersScope scope_;
};
std::span<const void* const> read_buffers();
// Whether a kernel storing at `out` while loading the read buffers would alias them.
bool aliases_read_buffers(const void* out);

// ---- arrays ----

// A fresh, contiguous, uninitialized array (64-byte aligned). A shape that is not
// representable or memory that is not there raises jx::Error naming alloc_op(), the
// shape and the bytes requested.
Array alloc_array(const Aval& aval);
// A rule's or impl's one result, moved into its vector: std::vector<T>{x} copies `x`
// once more out of the initializer list (an Aval's shape storage; an Array's count,
// atomically, up and down).
template <class T>
std::vector<T> single(T x) {
  std::vector<T> out;
  out.reserve(1);
  out.push_back(std::move(x));
  return out;
}
// A fresh contiguous array over `storage` (at least aval's size in bytes), for buffers
// the jit runtime recycles.
Array adopt_storage(std::shared_ptr<Storage> storage, const Aval& aval);
// A view sharing `base`'s storage with its own shape, element strides and offset.
Array make_view(const Array& base, const Aval& aval, std::vector<int64_t> strides, int64_t offset);
// Same data with the weak_type flag replaced (no copy).
Array with_weak_type(const Array& x, bool weak);

// Whether x may stand for itself as a constant of another computation (eager use, or a
// constant a staging trace captures: make_jaxpr, jit): raises the leaked-tracer error
// naming `op` when x is a tracer whose transformation has already returned; concrete
// arrays and tracers of running transformations pass.
void check_not_leaked(const Array& x, std::string_view op);
// Raises jx::Error naming `op` when the array was donated (ArrayImpl::deleted).
void check_not_deleted(const ArrayImpl& impl, std::string_view op);
// Deletes a donated array: every handle sharing its impl sees it deleted, and its
// storage is released (to the jitted call's results that took it).
void mark_deleted(const Array& x);
// The concrete impl, or jx::Error naming `op` if x is null, traced or deleted.
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
