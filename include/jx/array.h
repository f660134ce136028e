// jx::Array: an immutable n-dimensional value with cheap copies. It is either
// concrete (a strided view of a buffer on a device) or, under a transformation, a tracer.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "jx/device.h"
#include "jx/dtype.h"
#include "jx/error.h"

namespace jx {

using Shape = std::vector<int64_t>;

// Number of elements of a shape (1 for a 0-d shape). The one checked size computation:
// raises jx::Error "[op] ..." naming the shape for a negative dimension or a count past
// 2^63 - 1, so no caller sees a wrapped product.
int64_t shape_size(const Shape& shape, std::string_view op = "shape_size");

// The abstract value of an array: what tracing and shape rules see (JAX's ShapedArray).
struct Aval {
  Shape shape;
  DType dtype = DType::Float32;
  bool weak_type = false;

  int ndim() const { return static_cast<int>(shape.size()); }
  int64_t size() const { return shape_size(shape); }
  bool operator==(const Aval&) const = default;
  // "f32[3,4]" as in the IR text; a weak type is marked "f32{weak}[3,4]".
  std::string str() const;
};

class Array;

namespace detail {

class Trace;

// What a tracer keeps of its trace: the trace's name, and whether it is still running.
// Tracers share it, so a tracer that outlives its trace (a leaked tracer) can tell, and
// is never mistaken for a tracer of a later trace built at the same address.
struct TraceState {
  std::string transformation;
  bool alive = true;
};

// A value under a transformation. Subclasses (jvp, batching, staging) live with their
// interpreters; an Array holding a tracer has no buffer.
class Tracer {
 public:
  virtual ~Tracer() = default;
  virtual Trace* trace() const = 0;
  // The concrete value this tracer stands for when its transformation knows one (jvp and
  // linearize carry the primal; batching and staging do not): what lets `if (x > 0)`
  // work under grad. nullptr when abstract.
  virtual const Array* known_value() const { return nullptr; }
  // The owning trace's state, for tracers that keep it (all of jx's interpreters do).
  virtual const TraceState* state() const { return nullptr; }
};

// Owns an aligned allocation from its device's allocator (src/backend/backend.h), and
// returns it there; views share it. Throws std::bad_alloc when the memory is not there
// (alloc_array turns that into a jx::Error naming the operation and shape).
struct Storage {
  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  // Placed on `device` by request (device_put, or computed from such operands), as JAX's
  // committed arrays: operations refuse committed operands on different devices, and
  // run uncommitted operands (made on the default device) where the committed ones are.
  bool committed = false;
  // Set when this storage is another's memory seen from a different device (a shard of
  // a pmap result): it keeps that one alive and frees nothing itself.
  std::shared_ptr<Storage> owner;
  Storage() = default;
  Storage(size_t nbytes, Device device, bool committed = false);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

struct ShardingRecord;  // src/spmd/sharding_record.h

struct ArrayImpl {
  Aval aval;
  // Concrete arrays: element strides (may be 0 for broadcasts, negative for rev) and
  // the element offset of index (0, ..., 0) into storage.
  std::shared_ptr<Storage> storage;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  // Traced arrays.
  std::shared_ptr<Tracer> tracer;
  // pmap and shard_map results: how the devices hold it (jx::addressable_shards). Views
  // and results of other operations are new ArrayImpls without it.
  std::shared_ptr<const ShardingRecord> sharding;
  // Donated to a jitted call (JitOptions::donate_argnums): its storage went to that
  // call, and any use of its values raises (Array::is_deleted()).
  bool deleted = false;
};

// Row-major contiguous strides (in elements) for a shape.
std::vector<int64_t> contiguous_strides(const Shape& shape);

}  // namespace detail

// Index components for Array::operator() and Array::at(): integers, slices,
// jx::ellipsis, jx::newaxis and integer (or boolean) arrays.
struct Slice {
  std::optional<int64_t> start, stop, step;
};
struct Ellipsis {};
struct NewAxis {};
inline constexpr Ellipsis ellipsis{};
inline constexpr NewAxis newaxis{};
inline const Slice all{};

class IndexItem;
class AtRef;

class Array {
 public:
  // A null array; any operation on it raises jx::Error. Exists so containers work.
  Array() = default;

  // C++ scalars are weakly typed, as Python scalars are in JAX: `x * 2.0` keeps x's dtype.
  Array(bool v);     // NOLINT(google-explicit-constructor): scalars convert like numbers
  Array(int v);      // NOLINT
  Array(long v);     // NOLINT
  Array(long long v);     // NOLINT
  Array(unsigned v);      // NOLINT
  Array(float v);    // NOLINT
  Array(double v);   // NOLINT
  Array(complex64_t v);   // NOLINT
  Array(complex128_t v);  // NOLINT

  // Nested initializer lists behave like Python list literals in jnp.array: floating
  // literals become float32, integer literals int32 (JAX's defaults).
  Array(std::initializer_list<double> v);
  Array(std::initializer_list<std::initializer_list<double>> v);
  Array(std::initializer_list<std::initializer_list<std::initializer_list<double>>> v);
  Array(std::initializer_list<int> v);
  Array(std::initializer_list<std::initializer_list<int>> v);
  Array(std::initializer_list<bool> v);

  // From a std::vector of a C++ element type: the dtype is that type's (vector<double>
  // gives float64). `shape` defaults to 1-d.
  template <Element T>
  explicit Array(const std::vector<T>& v) : Array(v.data(), Shape{static_cast<int64_t>(v.size())}) {}
  // v must hold exactly prod(shape) elements.
  template <Element T>
  Array(const std::vector<T>& v, Shape shape) : Array(v.data(), v.size(), std::move(shape), dtype_of<T>) {}
  // Copies a row-major buffer of prod(shape) elements.
  template <Element T>
  Array(const T* data, Shape shape) : Array(static_cast<const void*>(data), std::move(shape), dtype_of<T>) {}
  Array(const void* data, Shape shape, DType dtype);

  // Shape and type.
  const Aval& aval() const;
  const Shape& shape() const { return aval().shape; }
  int ndim() const { return aval().ndim(); }
  int64_t size() const { return aval().size(); }
  int64_t shape(int axis) const;  // negative axes count from the end
  DType dtype() const { return aval().dtype; }
  bool weak_type() const { return aval().weak_type; }
  int64_t itemsize() const { return jx::itemsize(dtype()); }
  int64_t nbytes() const { return size() * itemsize(); }
  bool valid() const { return impl_ != nullptr; }
  // True once the array was donated to a jitted call (jx::JitOptions::donate_argnums):
  // its buffer belongs to that call's results, and reading it raises jx::Error. Its
  // shape and dtype stay readable, as in JAX.
  bool is_deleted() const;
  // The device holding the buffer (JAX's x.device). Raises jx::Error for a traced array.
  Device device() const;

  // Concrete values. These raise jx::Error on a traced array, naming the transformation.
  bool is_concrete() const;
  // The value of a size-1 array converted to T.
  template <Element T>
  T item() const {
    T out;
    item_into(&out, dtype_of<T>);
    return out;
  }
  // All elements in row-major order, converted to T.
  template <Element T>
  std::vector<T> to_vector() const {
    std::vector<T> out(static_cast<size_t>(size()));
    copy_to(out.data(), dtype_of<T>);
    return out;
  }
  // Writes the elements in row-major order as `dtype` into `dst`.
  void copy_to(void* dst, DType dtype) const;
  // Truthiness of a size-1 array, for `if (x > 0)`.
  explicit operator bool() const;
  // JAX's x.block_until_ready(): waits until the value is computed and returns it. A no-op
  // while CPU dispatch is synchronous; code written with it keeps working once it is not.
  Array block_until_ready() const { return *this; }

  // NumPy-style conveniences, all built on jx::numpy.
  Array astype(DType dtype) const;
  Array reshape(Shape shape) const;
  Array T() const;
  Array sum() const;
  Array mean() const;
  Array max() const;
  Array min() const;

  // x(1, jx::Slice{0, 3}, jx::ellipsis, jx::newaxis, idx_array): NumPy basic and
  // advanced indexing. Out-of-range integer indices raise; array indices are clamped
  // (JAX's gather semantics).
  template <class... Ix>
  Array operator()(const Ix&... ix) const;
  Array operator[](int64_t i) const;
  Array index(const std::vector<IndexItem>& items) const;
  // Functional updates: x.at(idx...).set(v) / add / mul / min / max / get.
  template <class... Ix>
  AtRef at(const Ix&... ix) const;

  // Internals, for interpreters and kernels.
  explicit Array(std::shared_ptr<const detail::ArrayImpl> impl) : impl_(std::move(impl)) {}
  const detail::ArrayImpl& impl() const;
  const std::shared_ptr<const detail::ArrayImpl>& impl_ptr() const { return impl_; }
  // Identity, for tracing.
  const void* id() const { return impl_.get(); }

 private:
  // A buffer of `count` elements for `shape`: raises unless they agree.
  Array(const void* data, size_t count, Shape shape, DType dtype);
  void item_into(void* dst, DType dtype) const;
  std::shared_ptr<const detail::ArrayImpl> impl_;
};

// One component of an index expression.
class IndexItem {
 public:
  enum class Kind { Integer, Slice, Ellipsis, NewAxis, Array };
  IndexItem(int v) : kind_(Kind::Integer), integer_(v) {}  // NOLINT
  IndexItem(long v) : kind_(Kind::Integer), integer_(v) {}  // NOLINT
  IndexItem(long long v) : kind_(Kind::Integer), integer_(v) {}  // NOLINT
  IndexItem(Slice s) : kind_(Kind::Slice), slice_(s) {}  // NOLINT
  IndexItem(Ellipsis) : kind_(Kind::Ellipsis) {}  // NOLINT
  IndexItem(NewAxis) : kind_(Kind::NewAxis) {}  // NOLINT
  IndexItem(Array a) : kind_(Kind::Array), array_(std::move(a)) {}  // NOLINT
  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }
  const Array& array() const { return array_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
  Array array_;
};

// The target of x.at(...): JAX's `x.at[idx]`.
class AtRef {
 public:
  AtRef(Array x, std::vector<IndexItem> items) : x_(std::move(x)), items_(std::move(items)) {}
  Array get() const;
  Array set(const Array& v) const;
  Array add(const Array& v) const;
  Array mul(const Array& v) const;
  Array min(const Array& v) const;
  Array max(const Array& v) const;

 private:
  Array x_;
  std::vector<IndexItem> items_;
};

template <class... Ix>
Array Array::operator()(const Ix&... ix) const {
  return index(std::vector<IndexItem>{IndexItem(ix)...});
}
template <class... Ix>
AtRef Array::at(const Ix&... ix) const {
  return AtRef(*this, std::vector<IndexItem>{IndexItem(ix)...});
}

// Operators follow jnp: broadcasting and type promotion.
Array operator+(const Array& a, const Array& b);
Array operator-(const Array& a, const Array& b);
Array operator*(const Array& a, const Array& b);
Array operator/(const Array& a, const Array& b);  // true division, as NumPy's /
Array operator%(const Array& a, const Array& b);  // NumPy's remainder (sign of divisor)
Array operator-(const Array& a);
Array operator+(const Array& a);
Array operator==(const Array& a, const Array& b);
Array operator!=(const Array& a, const Array& b);
Array operator<(const Array& a, const Array& b);
Array operator<=(const Array& a, const Array& b);
Array operator>(const Array& a, const Array& b);
Array operator>=(const Array& a, const Array& b);
Array operator&(const Array& a, const Array& b);
Array operator|(const Array& a, const Array& b);
Array operator^(const Array& a, const Array& b);
Array operator~(const Array& a);
Array operator!(const Array& a);
Array& operator+=(Array& a, const Array& b);
Array& operator-=(Array& a, const Array& b);
Array& operator*=(Array& a, const Array& b);
Array& operator/=(Array& a, const Array& b);

// NumPy's repr: Array([[1., 2.],
//                      [3., 4.]], dtype=float32)
std::ostream& operator<<(std::ostream& os, const Array& a);
std::string repr(const Array& a);
// NumPy's str: [[1. 2.]
//               [3. 4.]]
std::string str(const Array& a);

}  // namespace jx
