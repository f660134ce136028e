#include <sys/sysinfo.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "backend/backend.h"
#include "core/array_internal.h"
#include "core/convert.h"
#include "backend/cpu/strided.h"
#include "jx/primitive.h"
#include "core/hot_tls.h"

namespace jx {

int64_t shape_size(const Shape& shape, std::string_view op) {
  // As NumPy: zero dims are skipped in the product, so every partial product of a valid
  // shape (the outer/inner sizes kernels compute) fits too, even when the count is 0.
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) detail::fail(op, "negative dimension in shape ", detail::shape_str(shape));
    if (d == 0) empty = true;
    else if (__builtin_mul_overflow(n, d, &n))
      detail::fail(op, "shape ", detail::shape_str(shape), " has more than 2^63 - 1 elements");
  }
  return empty ? 0 : n;
}

std::string Aval::str() const {
  static constexpr const char* kShort[] = {"bool", "i8",   "i16", "i32", "i64", "u8",  "u32",
                                           "f16",  "bf16", "f32", "f64", "c64", "c128"};
  std::ostringstream os;
  os << kShort[static_cast<int>(dtype)];
  if (weak_type) os << "{weak}";
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "]";
  return os.str();
}

namespace detail {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ",";
  os << ")";
  return os.str();
}

int64_t checked_nbytes(const Shape& shape, DType dtype, std::string_view op) {
  const int64_t n = shape_size(shape, op);
  int64_t bytes;
  if (__builtin_mul_overflow(n, itemsize(dtype), &bytes))
    fail(op, "shape ", shape_str(shape), " of ", dtype_name(dtype), " needs more than 2^63 - 1 bytes (", n,
         " elements of ", itemsize(dtype), " bytes)");
  return bytes;
}

namespace {

// RAM + swap: no single buffer larger than this can ever be backed. Refusing it up front
// makes the failure a jx::Error whatever the kernel's overcommit policy (with
// overcommit on, the allocation would succeed and the process be killed on first touch)
// and without calling an allocator that sanitizers abort in.
int64_t machine_memory_bytes() {
  static const int64_t bytes = [] {
    struct sysinfo info {};
    if (sysinfo(&info) != 0) return std::numeric_limits<int64_t>::max();
    const unsigned __int128 total =
        (static_cast<unsigned __int128>(info.totalram) + info.totalswap) * info.mem_unit;
    return total > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(total);
  }();
  return bytes;
}

[[noreturn]] void fail_alloc(std::string_view op, const Shape& shape, DType dtype, int64_t bytes) {
  fail(op, "cannot allocate ", bytes, " bytes for an array of shape ", shape_str(shape), " and dtype ",
       dtype_name(dtype), ": out of memory (this machine has ", machine_memory_bytes(), " bytes of RAM + swap)");
}

JX_INITIAL_EXEC_TLS thread_local std::string_view t_alloc_op = "alloc";

}  // namespace

AllocScope::AllocScope(std::string_view op) : saved_(t_alloc_op) { t_alloc_op = op; }
AllocScope::~AllocScope() { t_alloc_op = saved_; }
std::string_view alloc_op() { return t_alloc_op; }

namespace {
JX_INITIAL_EXEC_TLS thread_local const void* const* t_read_buffers = nullptr;
JX_INITIAL_EXEC_TLS thread_local size_t t_num_read_buffers = 0;
}  // namespace
ReadBuffersScope::ReadBuffersScope(std::span<const void* const> reads) : saved_(read_buffers()) {
  t_read_buffers = reads.data(), t_num_read_buffers = reads.size();
}
ReadBuffersScope::~ReadBuffersScope() { t_read_buffers = saved_.data(), t_num_read_buffers = saved_.size(); }
std::span<const void* const> read_buffers() { return {t_read_buffers, t_num_read_buffers}; }
namespace {
size_t large_operands(std::span<const Array> operands, std::array<const void*, 8>& reads) {
  size_t n = 0;
  for (const Array& x : operands) {
    if (n == reads.size()) break;
    if (!x.valid()) continue;
    const ArrayImpl& impl = x.impl();
    if (impl.storage && impl.storage->nbytes >= 4096) reads[n++] = raw_data(x);
  }
  return n;
}
}  // namespace
OperandReadsScope::OperandReadsScope(std::span<const Array> operands)
    : reads_(), scope_(std::span<const void* const>(reads_.data(), large_operands(operands, reads_))) {}
bool aliases_read_buffers(const void* out) {
  const auto at = reinterpret_cast<uintptr_t>(out);
  for (const void* in : read_buffers())
    if (((at - reinterpret_cast<uintptr_t>(in)) & 4095) < kAliasingReach) return true;
  return false;
}

int64_t check_allocatable(const Shape& shape, DType dtype, std::string_view op) {
  const int64_t bytes = checked_nbytes(shape, dtype, op);
  if (bytes > machine_memory_bytes()) fail_alloc(op, shape, dtype, bytes);
  return bytes;
}

Storage::Storage(size_t n, Device d, bool c) : nbytes(n), device(d), committed(c) { data = device.state()->allocator->allocate(n); }
Storage::~Storage() {
  if (data && !owner) device.state()->allocator->deallocate(data, nbytes);
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

Array alloc_array(const Aval& aval) {
  const std::string_view op = alloc_op();
  const int64_t bytes = check_allocatable(aval.shape, aval.dtype, op);
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = aval;
  try {
    impl->storage = std::make_shared<Storage>(static_cast<size_t>(bytes), Device(current_device()),
                                                  current_device_committed());
  } catch (const std::bad_alloc&) {
    fail_alloc(op, aval.shape, aval.dtype, bytes);
  }
  impl->strides = contiguous_strides(aval.shape);
  return Array(std::move(impl));
}

Array adopt_storage(std::shared_ptr<Storage> storage, const Aval& aval) {
  if (!storage || storage->nbytes < static_cast<size_t>(checked_nbytes(aval.shape, aval.dtype, "adopt_storage")))
    fail("adopt_storage", "storage too small for ", aval.str());
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = aval;
  impl->storage = std::move(storage);
  impl->strides = contiguous_strides(aval.shape);
  return Array(std::move(impl));
}

Array make_view(const Array& base, const Aval& aval, std::vector<int64_t> strides, int64_t offset) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = aval;
  impl->storage = base.impl().storage;
  impl->strides = std::move(strides);
  impl->offset = offset;
  return Array(std::move(impl));
}

Array with_weak_type(const Array& x, bool weak) {
  if (x.weak_type() == weak) return x;
  auto impl = std::make_shared<ArrayImpl>(x.impl());
  impl->aval.weak_type = weak;
  return Array(std::move(impl));
}

namespace {
// The one test of a leaked tracer (eager use, and staging's capture of constants).
void fail_if_leaked(const ArrayImpl& impl, std::string_view op) {
  const TraceState* state = impl.tracer ? impl.tracer->state() : nullptr;
  if (state && !state->alive)
    fail(op, "got a traced value ", impl.aval.str(), " that leaked out of the ", state->transformation,
         " transformation that made it (a tracer stored outside the function being transformed, then used "
         "after the transformation returned). Return it from the function instead.");
}

[[noreturn]] void fail_abstract(const ArrayImpl& impl, std::string_view op, std::string_view what) {
  fail_if_leaked(impl, op);
  const Trace* t = impl.tracer->trace();
  std::string_view name = t ? t->transformation() : std::string_view("a transformation");
  std::string_view hint = t ? t->concretization_hint() : std::string_view();
  fail(op, what, " of an abstract traced value ", impl.aval.str(), ": its value is not known under ", name,
       ". ", hint.empty() ? "Use jx::lax::select / jnp::where to choose between values, or pass the value "
                            "as a static (non-traced) argument." : hint);
}
}  // namespace

void check_not_leaked(const Array& x, std::string_view op) {
  fail_if_leaked(x.impl(), op);
  check_not_deleted(x.impl(), op);
}

void check_not_deleted(const ArrayImpl& impl, std::string_view op) {
  if (impl.deleted)
    fail(op, "the array ", impl.aval.str(), " was donated to a jitted function (JitOptions::donate_argnums) and "
         "deleted: its buffer now belongs to that call's results. Use the results instead, or do not donate it.");
}

void mark_deleted(const Array& x) {
  auto& impl = const_cast<ArrayImpl&>(x.impl());
  impl.storage.reset();
  impl.deleted = true;
}

const ArrayImpl& concrete_impl(const Array& x, std::string_view op) {
  const ArrayImpl& impl = x.impl();
  if (impl.tracer) fail_abstract(impl, op, "needs a concrete value, but got the value");
  check_not_deleted(impl, op);
  return impl;
}

// For the user-facing concrete accessors: follows tracers that know their value (jvp,
// linearize) down to a concrete array.
const ArrayImpl& known_concrete_impl(const Array& x, std::string_view op, std::string_view what) {
  const Array* cur = &x;
  while (cur->impl().tracer) {
    const Array* next = cur->impl().tracer->known_value();
    if (!next) fail_abstract(cur->impl(), op, what);
    cur = next;
  }
  check_not_deleted(cur->impl(), op);
  return cur->impl();
}

bool is_contiguous(const Array& x) {
  const auto& impl = x.impl();
  int64_t acc = 1;
  for (size_t i = impl.aval.shape.size(); i-- > 0;) {
    if (impl.aval.shape[i] != 1 && impl.strides[i] != acc) return false;
    acc *= impl.aval.shape[i];
  }
  return true;
}

const std::vector<int64_t>& strides(const Array& x) { return x.impl().strides; }

void convert_buffer(const void* src, DType sd, void* dst, DType dd, int64_t n) {
  if (n <= 0) return;  // empty arrays may have null buffers; memcpy(null, null, 0) is UB
  if (sd == dd) {
    std::memcpy(dst, src, static_cast<size_t>(n * itemsize(sd)));
    return;
  }
  dispatch_dtype(sd, [&]<class S>() {
    dispatch_dtype(dd, [&]<class D>() {
      const S* s = static_cast<const S*>(src);
      D* d = static_cast<D*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = convert_value<D>(s[i]);
    });
  });
}

// Copies a strided array into a contiguous row-major buffer of `dd`.
static void gather_strided(const Array& x, void* dst, DType dd) {
  const auto& impl = x.impl();
  if (impl.aval.size() == 0) return;
  DType sd = impl.aval.dtype;
  cpu::StridedLoop<1> loop(impl.aval.shape, {&impl.strides});
  int64_t isz = itemsize(sd), osz = itemsize(dd);
  const char* base = static_cast<const char*>(raw_data(x));
  char* out = static_cast<char*>(dst);
  dispatch_dtype(sd, [&]<class S>() {
    dispatch_dtype(dd, [&]<class D>() {
      loop.for_rows(0, loop.outer_size(), [&](const std::array<int64_t, 1>& off, int64_t n,
                                              const std::array<int64_t, 1>& st) {
        const S* s = reinterpret_cast<const S*>(base) + off[0];
        D* d = reinterpret_cast<D*>(out);
        for (int64_t i = 0; i < n; ++i) d[i] = convert_value<D>(s[i * st[0]]);
        out += n * osz;
      });
    });
  });
  (void)isz;
}

Array contiguous(const Array& x) {
  if (is_contiguous(x)) return x;
  Array out = alloc_array(x.aval());
  gather_strided(x, mutable_data<void>(out), x.dtype());
  return out;
}

Array scalar_of(DType dtype, double v) {
  Array out = alloc_array(Aval{{}, dtype, false});
  convert_buffer(&v, DType::Float64, mutable_data<void>(out), dtype, 1);
  return out;
}

}  // namespace detail

// ---- construction ----

namespace {
template <class T>
Array weak_scalar(T v) {
  return detail::scalar<T>(v, /*weak=*/true);
}

template <class T, class L>
void flatten_list(const L& list, std::vector<T>& out, Shape& shape, size_t depth) {
  if constexpr (std::is_arithmetic_v<std::remove_cvref_t<decltype(*list.begin())>>) {
    if (shape.size() <= depth) shape.push_back(static_cast<int64_t>(list.size()));
    else if (shape[depth] != static_cast<int64_t>(list.size()))
      detail::fail("array", "ragged nested initializer list: expected ", shape[depth],
                   " elements at depth ", depth, ", got ", list.size());
    for (auto v : list) out.push_back(static_cast<T>(v));
  } else {
    if (shape.size() <= depth) shape.push_back(static_cast<int64_t>(list.size()));
    else if (shape[depth] != static_cast<int64_t>(list.size()))
      detail::fail("array", "ragged nested initializer list: expected ", shape[depth],
                   " rows at depth ", depth, ", got ", list.size());
    for (const auto& sub : list) flatten_list<T>(sub, out, shape, depth + 1);
  }
}

template <class T, class L>
Array from_list(const L& list) {
  // std::vector<bool> packs bits, so bools are staged as bytes (the same layout as jx's bool).
  using Stored = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
  std::vector<Stored> flat;
  Shape shape;
  flatten_list<Stored>(list, flat, shape, 0);
  return Array(static_cast<const void*>(flat.data()), shape, dtype_of<T>);
}
}  // namespace

Array::Array(bool v) : Array(detail::scalar<bool>(v)) {}
Array::Array(int v) : Array(weak_scalar<int32_t>(v)) {}
Array::Array(long v) : Array(weak_scalar<int64_t>(v)) {}
Array::Array(long long v) : Array(weak_scalar<int64_t>(v)) {}
Array::Array(unsigned v) : Array(weak_scalar<uint32_t>(v)) {}
Array::Array(float v) : Array(weak_scalar<float>(v)) {}
Array::Array(double v) : Array(weak_scalar<double>(v)) {}
Array::Array(complex64_t v) : Array(weak_scalar<complex64_t>(v)) {}
Array::Array(complex128_t v) : Array(weak_scalar<complex128_t>(v)) {}

Array::Array(std::initializer_list<double> v) : Array(from_list<float>(v)) {}
Array::Array(std::initializer_list<std::initializer_list<double>> v) : Array(from_list<float>(v)) {}
Array::Array(std::initializer_list<std::initializer_list<std::initializer_list<double>>> v)
    : Array(from_list<float>(v)) {}
Array::Array(std::initializer_list<int> v) : Array(from_list<int32_t>(v)) {}
Array::Array(std::initializer_list<std::initializer_list<int>> v) : Array(from_list<int32_t>(v)) {}
Array::Array(std::initializer_list<bool> v) : Array(from_list<bool>(v)) {}

Array::Array(const void* data, size_t count, Shape shape, DType dtype) {
  // Checked before the copy, which reads prod(shape) elements.
  const int64_t n = shape_size(shape, "array");
  if (count != static_cast<uint64_t>(n))
    detail::fail("array", "a vector of ", count, " elements cannot fill shape ", detail::shape_str(shape), " (", n,
                 " elements)");
  impl_ = Array(data, std::move(shape), dtype).impl_ptr();
}

Array::Array(const void* data, Shape shape, DType dtype) {
  detail::AllocScope scope("array");
  Array out = detail::alloc_array(Aval{std::move(shape), dtype, false});
  if (out.nbytes() > 0) {
    if (!data) detail::fail("array", "null data pointer for shape ", detail::shape_str(out.shape()));
    std::memcpy(detail::mutable_data<void>(out), data, static_cast<size_t>(out.nbytes()));
  }
  impl_ = out.impl_ptr();
}

// ---- access ----

const detail::ArrayImpl& Array::impl() const {
  if (!impl_) throw Error("[array] use of a null jx::Array (default-constructed, never assigned)");
  return *impl_;
}
const Aval& Array::aval() const { return impl().aval; }

int64_t Array::shape(int axis) const {
  int nd = ndim();
  if (axis < -nd || axis >= nd)
    detail::fail("shape", "axis ", axis, " is out of bounds for array of shape ", detail::shape_str(shape()));
  return aval().shape[static_cast<size_t>(axis < 0 ? axis + nd : axis)];
}

bool Array::is_concrete() const { return impl_ && !impl_->tracer; }
bool Array::is_deleted() const { return impl().deleted; }

namespace {
// The concrete array behind x: x itself, or the value a jvp/linearize tracer carries.
Array known_concrete(const Array& x, std::string_view op, std::string_view what) {
  const detail::ArrayImpl& impl = detail::known_concrete_impl(x, op, what);
  if (&impl == &x.impl()) return x;
  return Array(std::make_shared<detail::ArrayImpl>(impl));  // shares the storage
}
}  // namespace

void Array::copy_to(void* dst, DType dtype) const {
  Array c = known_concrete(*this, "to_vector", "cannot read the elements");
  if (detail::is_contiguous(c)) detail::convert_buffer(detail::raw_data(c), c.dtype(), dst, dtype, c.size());
  else detail::gather_strided(c, dst, dtype);
}

void Array::item_into(void* dst, DType dtype) const {
  Array c = known_concrete(*this, "item", "cannot convert to a C++ scalar");
  if (size() != 1)
    detail::fail("item", "can only convert an array of size 1 to a scalar, got shape ",
                 detail::shape_str(shape()));
  detail::convert_buffer(detail::raw_data(c), c.dtype(), dst, dtype, 1);
}

Array::operator bool() const {
  if (size() != 1)
    detail::fail("bool", "the truth value of an array with more than one element is ambiguous; shape ",
                 detail::shape_str(shape()), ". Use jnp::any or jnp::all");
  Array c = known_concrete(*this, "bool", "cannot branch on the truth value (C++ if/while/&&)");
  bool out;
  detail::convert_buffer(detail::raw_data(c), c.dtype(), &out, DType::Bool, 1);
  return out;
}

}  // namespace jx
