// CPU kernels of gather and the scatters (their rules: src/lax/gather_scatter.cpp).
//
// Both kernels share one shape of work: for every batch position g (the leading axes of
// `indices`) a start offset into the operand is computed once from indices[g, :], then a
// fixed window is moved. The window's loop nest (shape and both sides' strides, with
// contiguous dims merged) is the same for every g, so it is built once; each window is
// then a memcpy, a strided row, or a short nest of rows.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/strided.h"
#include "backend/cpu/thread_pool.h"
#include "core/array_internal.h"
#include "core/convert.h"
#include "lax/data_movement.h"
#include "lax/gather_scatter_params.h"

namespace jx::cpu {
namespace {

namespace movement = lax::movement;
using lax::GatherScatterMode;
using lax::gather_scatter::complement;
using lax::gather_scatter::GatherSpec;
using lax::gather_scatter::ScatterSpec;

// ---- the shared window walk ----

// A window's loop nest after merging: outermost first, element strides on both sides.
struct WindowLoop {
  std::vector<int64_t> shape, dst, src;
  int64_t size = 0;

  WindowLoop(const Shape& window, const std::vector<int64_t>& dst_strides, const std::vector<int64_t>& src_strides)
      : size(shape_size(window)) {
    cpu::StridedLoop<2> loop(window, {&dst_strides, &src_strides});
    shape = loop.shape;
    dst = loop.strides[0];
    src = loop.strides[1];
  }
};

// Calls row(dst_offset, src_offset, n, dst_stride, src_stride) for each innermost row.
template <class Row>
void walk_rows(const WindowLoop& w, size_t d, int64_t dst_off, int64_t src_off, Row&& row) {
  if (d + 1 == w.shape.size()) {
    row(dst_off, src_off, w.shape[d], w.dst[d], w.src[d]);
    return;
  }
  for (int64_t i = 0; i < w.shape[d]; ++i) walk_rows(w, d + 1, dst_off + i * w.dst[d], src_off + i * w.src[d], row);
}

template <class W>
void copy_window(const WindowLoop& w, W* dst, const W* src) {
  walk_rows(w, 0, 0, 0, [&](int64_t doff, int64_t soff, int64_t n, int64_t ds, int64_t ss) {
    W* d = dst + doff;
    const W* s = src + soff;
    if (n == 1) *d = *s;
    else if (ds == 1 && ss == 1) std::memcpy(d, s, static_cast<size_t>(n) * sizeof(W));
    else for (int64_t i = 0; i < n; ++i) d[i * ds] = s[i * ss];
  });
}

template <class W>
void fill_window(const WindowLoop& w, W* dst, W value) {
  walk_rows(w, 0, 0, 0, [&](int64_t doff, int64_t, int64_t n, int64_t ds, int64_t) {
    for (int64_t i = 0; i < n; ++i) dst[doff + i * ds] = value;
  });
}

// Where each index-vector component points: its operand dim's stride and the largest
// start that keeps the window inside the operand.
struct StartMap {
  std::vector<int64_t> stride, limit;
  // Offsets may be negative (operands with negative strides), so "out of bounds" has
  // its own value.
  static constexpr int64_t kOutOfBounds = std::numeric_limits<int64_t>::min();
};

// Steps through the batch positions (row-major over `shape`) keeping a running offset,
// so no division happens per position.
struct BatchOdometer {
  const Shape& shape;
  const std::vector<int64_t>& strides;
  std::vector<int64_t> idx;
  int64_t offset = 0;

  BatchOdometer(const Shape& s, const std::vector<int64_t>& st, int64_t start)
      : shape(s), strides(st), idx(s.size(), 0) {
    for (size_t d = shape.size(); d-- > 0;) {
      idx[d] = start % shape[d];
      start /= shape[d];
      offset += idx[d] * strides[d];
    }
  }
  void next() {
    for (size_t d = shape.size(); d-- > 0;) {
      offset += strides[d];
      if (++idx[d] < shape[d]) return;
      offset -= shape[d] * strides[d];
      idx[d] = 0;
    }
  }
};

// Index vectors as a contiguous int32 or int64 array: kernels are compiled for those two
// only; other integer dtypes are widened once here.
Array prepare_indices(const Array& indices) {
  const DType d = indices.dtype();
  const DType want = (d == DType::Int64 || d == DType::UInt32) ? DType::Int64 : DType::Int32;
  if (d == want) return jx::detail::contiguous(indices);
  Array out = jx::detail::alloc_array(Aval{indices.shape(), want, false});
  indices.copy_to(jx::detail::mutable_data<void>(out), want);
  return out;
}

template <class F>
decltype(auto) dispatch_index(DType d, F&& f) {
  if (d == DType::Int64) return f.template operator()<int64_t>();
  return f.template operator()<int32_t>();
}

// Calls visit(start, batch_offset) for batch positions [begin, end) in row-major order:
// `start` is the window's element offset into the operand (kOutOfBounds when it does not
// fit and `clamp` is off) and batch_offset the position's offset in the batch-side array
// (gather's output, scatter's updates).
template <class I, class Visit>
void for_each_window(const I* index, size_t vec, const StartMap& starts, bool clamp, const Shape& batch_shape,
                     const std::vector<int64_t>& batch_strides, int64_t begin, int64_t end, Visit&& visit) {
  // Held in locals so that stores through the kernels' element pointers force no reloads.
  const int64_t* stride = starts.stride.data();
  const int64_t* limit = starts.limit.data();
  auto start_of = [&](int64_t b) -> int64_t {
    const I* v = index + static_cast<size_t>(b) * vec;
    int64_t off = 0;
    for (size_t k = 0; k < vec; ++k) {
      auto s = static_cast<int64_t>(v[k]);
      if (clamp) s = std::clamp<int64_t>(s, 0, limit[k]);
      else if (s < 0 || s > limit[k]) return StartMap::kOutOfBounds;
      off += s * stride[k];
    }
    return off;
  };
  if (batch_shape.size() == 1) {
    const int64_t step = batch_strides[0];
    for (int64_t b = begin; b < end; ++b) visit(start_of(b), b * step);
    return;
  }
  BatchOdometer pos(batch_shape, batch_strides, begin);
  for (int64_t b = begin; b < end; ++b, pos.next()) visit(start_of(b), pos.offset);
}

// ---- gather ----

// JAX's default fill for out-of-bounds windows: NaN for inexact types, the minimum of a
// signed type, the maximum of an unsigned type, true for bool.
template <class T>
T default_fill() {
  if constexpr (std::is_same_v<T, bool>) return true;
  else if constexpr (is_half_v<T> || std::is_floating_point_v<T>) return T(std::numeric_limits<float>::quiet_NaN());
  else if constexpr (is_complex_v<T>) return T(std::numeric_limits<typename T::value_type>::quiet_NaN(), 0);
  else if constexpr (std::is_signed_v<T>) return std::numeric_limits<T>::min();
  else return std::numeric_limits<T>::max();
}

std::vector<Array> gather_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
  const Array& x = in[0];
  const Array& indices = in[1];
  const Aval& aval = out_avals[0];
  Array out = jx::detail::alloc_array(aval);
  if (aval.size() == 0) return {out};
  GatherSpec g(params);
  const int64_t width = x.itemsize();
  const auto& xs = jx::detail::strides(x);
  const auto& os = jx::detail::strides(out);

  // The window: uncollapsed operand dims, landing on the output's offset dims.
  auto window_dims = complement(x.ndim(), g.collapsed_slice_dims);
  Shape window;
  std::vector<int64_t> window_dst, window_src;
  for (size_t j = 0; j < window_dims.size(); ++j) {
    auto d = static_cast<size_t>(window_dims[j]);
    window.push_back(g.slice_sizes[d]);
    window_src.push_back(xs[d]);
    window_dst.push_back(os[static_cast<size_t>(g.offset_dims[j])]);
  }
  const WindowLoop loop(window, window_dst, window_src);

  // Batch positions: the output dims that are not offset dims.
  Shape batch_shape(indices.shape().begin(), indices.shape().end() - 1);
  std::vector<int64_t> batch_strides;
  for (int64_t i = 0; i < aval.ndim(); ++i)
    if (std::find(g.offset_dims.begin(), g.offset_dims.end(), i) == g.offset_dims.end())
      batch_strides.push_back(os[static_cast<size_t>(i)]);

  StartMap starts;
  for (int64_t d : g.start_index_map) {
    auto i = static_cast<size_t>(d);
    starts.stride.push_back(xs[i]);
    starts.limit.push_back(x.shape()[i] - g.slice_sizes[i]);
  }
  // PromiseInBounds is free to do anything out of bounds; clamping keeps it memory-safe.
  const bool clamp = g.mode != GatherScatterMode::FillOrDrop;

  alignas(16) unsigned char fill[16] = {};
  dispatch_dtype(x.dtype(), [&]<class T>() {
    T v = default_fill<T>();
    std::memcpy(fill, &v, sizeof(T));
  });
  if (in.size() == 3) in[2].copy_to(fill, x.dtype());

  const Array index_values = prepare_indices(indices);
  const auto vec = static_cast<size_t>(indices.shape().back());
  const int64_t batch = shape_size(batch_shape);
  const int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / std::max<int64_t>(loop.size, 1));
  const bool single = loop.size == 1;  // x[idx] on a 1-d x, x[i, j]: one element per window
  movement::dispatch_width(width, [&]<class W>() {
    const W* src = static_cast<const W*>(jx::detail::raw_data(x));
    W* dst = jx::detail::mutable_data<W>(out);
    W fill_value;
    std::memcpy(&fill_value, fill, sizeof(W));
    dispatch_index(index_values.dtype(), [&]<class I>() {
      const I* iv = jx::detail::data<I>(index_values);
      cpu::parallel_for(batch, grain, [&](int64_t begin, int64_t end) {
        if (single) {
          for_each_window(iv, vec, starts, clamp, batch_shape, batch_strides, begin, end,
                          [&](int64_t start, int64_t at) {
                            dst[at] = start == StartMap::kOutOfBounds ? fill_value : src[start];
                          });
        } else {
          for_each_window(iv, vec, starts, clamp, batch_shape, batch_strides, begin, end,
                          [&](int64_t start, int64_t at) {
                            if (start == StartMap::kOutOfBounds) fill_window<W>(loop, dst + at, fill_value);
                            else copy_window<W>(loop, dst + at, src + start);
                          });
        }
      });
    });
  });
  return {out};
}

// ---- scatter ----

// How an update combines with the value already there. Integer arithmetic wraps (done
// in uint64 so signed overflow is never UB); halves compute in float; min/max propagate
// NaN as lax.min/max do and order complex numbers lexicographically as XLA does.
enum class Combine { Set, Add, Mul, Min, Max };

template <class T>
bool is_nan_value(T v) {
  if constexpr (is_half_v<T>) return std::isnan(static_cast<float>(v));
  else if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else if constexpr (is_complex_v<T>) return std::isnan(v.real()) || std::isnan(v.imag());
  else return false;
}

template <class T>
bool less(T a, T b) {
  if constexpr (is_complex_v<T>) return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  else if constexpr (is_half_v<T>) return static_cast<float>(a) < static_cast<float>(b);
  else return a < b;
}

template <Combine C, class T>
T combine(T old, T upd) {
  if constexpr (std::is_same_v<T, bool>) {
    return (C == Combine::Add || C == Combine::Max) ? (old || upd) : (old && upd);
  } else if constexpr (C == Combine::Min || C == Combine::Max) {
    if (is_nan_value(old)) return old;
    if (is_nan_value(upd)) return upd;
    return (C == Combine::Min ? less(upd, old) : less(old, upd)) ? upd : old;
  } else if constexpr (std::is_integral_v<T>) {
    auto a = static_cast<uint64_t>(old), b = static_cast<uint64_t>(upd);
    return static_cast<T>(C == Combine::Add ? a + b : a * b);
  } else {
    using F = jx::detail::compute_t<T>;
    F a = static_cast<F>(old), b = static_cast<F>(upd);
    return T(C == Combine::Add ? a + b : a * b);
  }
}

template <Combine C, class T>
void combine_window(const WindowLoop& w, T* dst, const T* src) {
  walk_rows(w, 0, 0, 0, [&](int64_t doff, int64_t soff, int64_t n, int64_t ds, int64_t ss) {
    for (int64_t i = 0; i < n; ++i) dst[doff + i * ds] = combine<C, T>(dst[doff + i * ds], src[soff + i * ss]);
  });
}

template <Combine C>
std::vector<Array> scatter_impl(std::string_view op, std::span<const Array> in, const Params& params,
                                std::span<const Aval> out_avals) {
  const Array& x = in[0];
  const Array& indices = in[1];
  const Array& updates = in[2];
  Array out = movement::copy_to_fresh(x, out_avals[0]);
  ScatterSpec s(op, params);
  const auto& os = jx::detail::strides(out);
  const auto& us = jx::detail::strides(updates);

  // The window: update_window_dims of updates, landing on the uninserted operand dims.
  auto window_dims = complement(x.ndim(), s.inserted_window_dims);
  Shape window;
  std::vector<int64_t> window_dst, window_src;
  std::vector<int64_t> window_size(static_cast<size_t>(x.ndim()), 1);  // per operand dim
  for (size_t j = 0; j < window_dims.size(); ++j) {
    auto u = static_cast<size_t>(s.update_window_dims[j]);
    window.push_back(updates.shape()[u]);
    window_src.push_back(us[u]);
    window_dst.push_back(os[static_cast<size_t>(window_dims[j])]);
    window_size[static_cast<size_t>(window_dims[j])] = updates.shape()[u];
  }
  Shape batch_shape(indices.shape().begin(), indices.shape().end() - 1);
  const int64_t batch = shape_size(batch_shape);
  if (batch == 0 || shape_size(window) == 0) return {out};
  const WindowLoop loop(window, window_dst, window_src);

  std::vector<int64_t> batch_strides;  // the updates' scatter axes
  for (int64_t i = 0; i < updates.ndim(); ++i)
    if (!std::binary_search(s.update_window_dims.begin(), s.update_window_dims.end(), i))
      batch_strides.push_back(us[static_cast<size_t>(i)]);

  StartMap starts;
  for (int64_t d : s.scatter_dims_to_operand_dims) {
    auto i = static_cast<size_t>(d);
    starts.stride.push_back(os[i]);
    starts.limit.push_back(x.shape()[i] - window_size[i]);
  }
  // XLA skips a window that does not fit; only Clip moves it inside instead.
  const bool clamp = s.mode == GatherScatterMode::Clip;
  const Array index_values = prepare_indices(indices);
  const auto vec = static_cast<size_t>(indices.shape().back());
  const bool single = loop.size == 1;

  // Sequential in batch order, so with repeated indices the last update wins (Set) and
  // floating-point sums are deterministic.
  auto run = [&]<class T>(auto&& apply_element, auto&& apply_window) {
    const T* src = static_cast<const T*>(jx::detail::raw_data(updates));
    T* dst = jx::detail::mutable_data<T>(out);
    dispatch_index(index_values.dtype(), [&]<class I>() {
      const I* iv = jx::detail::data<I>(index_values);
      if (single) {
        for_each_window(iv, vec, starts, clamp, batch_shape, batch_strides, 0, batch, [&](int64_t start, int64_t at) {
          if (start != StartMap::kOutOfBounds) apply_element(dst + start, src + at);
        });
      } else {
        for_each_window(iv, vec, starts, clamp, batch_shape, batch_strides, 0, batch, [&](int64_t start, int64_t at) {
          if (start != StartMap::kOutOfBounds) apply_window(dst + start, src + at);
        });
      }
    });
  };
  if constexpr (C == Combine::Set) {
    movement::dispatch_width(x.itemsize(), [&]<class W>() {
      run.template operator()<W>([](W* d, const W* u) { *d = *u; },
                                 [&](W* d, const W* u) { copy_window<W>(loop, d, u); });
    });
  } else {
    dispatch_dtype(x.dtype(), [&]<class T>() {
      run.template operator()<T>([](T* d, const T* u) { *d = combine<C, T>(*d, *u); },
                                 [&](T* d, const T* u) { combine_window<C, T>(loop, d, u); });
    });
  }
  return {out};
}

template <Combine C>
ImplRule scatter_kernel(const char* name) {
  return [name](std::span<const Array> in, const Params& p, std::span<const Aval> out) {
    return scatter_impl<C>(name, in, p, out);
  };
}

}  // namespace

void add_gather_scatter_kernels(detail::KernelTable& table) {
  table.add("gather", gather_impl);
  // The scatter flavours differ only in how an update combines with the operand.
  table.add("scatter", scatter_kernel<Combine::Set>("scatter"));
  table.add("scatter_add", scatter_kernel<Combine::Add>("scatter_add"));
  table.add("scatter_mul", scatter_kernel<Combine::Mul>("scatter_mul"));
  table.add("scatter_min", scatter_kernel<Combine::Min>("scatter_min"));
  table.add("scatter_max", scatter_kernel<Combine::Max>("scatter_max"));
}

}  // namespace jx::cpu
