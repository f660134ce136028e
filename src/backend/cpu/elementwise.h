// Elementwise CPU kernels: one dtype dispatch per call, then typed loops over the
// operands' strided runs. Contiguous runs get a plain unit-stride loop the compiler
// vectorizes, a stride-0 operand (a broadcast scalar) is read once, other strides are
// walked in place (no copies); large outputs are split over the thread pool.
//
// An "op" is a small functor. Its scalar form, `R operator()(C...)`, takes compute
// types (detail::compute_t: float for float16/bfloat16) and is constrained (requires)
// to the types it supports. Optional faster forms, used for float32/float64 (and for
// the half types through float buffers):
//   static constexpr VecOp vec;      unary with a libmvec variant
//   static constexpr VecOp2 vec2;    binary with a libmvec variant
//   void block(const C* x, C* y, int64_t n) const;   unary over a contiguous block
#pragma once

#include <algorithm>
#include <array>
#include <cstdlib>
#include <concepts>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/array_internal.h"
#include "core/convert.h"
#include "backend/cpu/strided.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/vector_math.h"
#include "jx/primitive.h"

namespace jx::cpu {

using detail::compute_t;

// Elements per block in the block kernels: big enough to amortize a libmvec call and
// the gather of a strided operand, small enough to live on the stack and in L1.
inline constexpr int64_t kBlock = 256;

// ---- integer arithmetic without undefined behaviour ----
// Signed overflow wraps (two's complement), as XLA defines it.

template <class T>
using wrap_unsigned_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <class T>
constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Element kinds of the compute type C, for constraining elementwise op functors.
namespace kinds {
template <class C>
concept Real = std::is_floating_point_v<C>;
template <class C>
concept Complex = is_complex_v<C>;
template <class C>
concept Inexact = Real<C> || Complex<C>;
template <class C>
concept Int = is_int_v<C>;
template <class C>
concept Number = Int<C> || Inexact<C>;
template <class C>
concept Ordered = Int<C> || Real<C> || std::is_same_v<C, bool>;
}  // namespace kinds

template <class T>
inline T wrap_add(T a, T b) {
  if constexpr (is_int_v<T>) return static_cast<T>(wrap_unsigned_t<T>(a) + wrap_unsigned_t<T>(b));
  else return a + b;
}
template <class T>
inline T wrap_sub(T a, T b) {
  if constexpr (is_int_v<T>) return static_cast<T>(wrap_unsigned_t<T>(a) - wrap_unsigned_t<T>(b));
  else return a - b;
}
template <class T>
inline T wrap_mul(T a, T b) {
  if constexpr (is_int_v<T>) return static_cast<T>(wrap_unsigned_t<T>(a) * wrap_unsigned_t<T>(b));
  else return a * b;
}
template <class T>
inline T wrap_neg(T a) {
  if constexpr (is_int_v<T>) return static_cast<T>(wrap_unsigned_t<T>(0) - wrap_unsigned_t<T>(a));
  else return -a;
}

// Converts a computed value to the stored element type.
template <class Out, class V>
inline Out store(V v) {
  if constexpr (std::is_same_v<Out, V>) return v;
  else if constexpr (is_half_v<Out>) return Out(static_cast<float>(v));
  else return static_cast<Out>(v);
}

// The element type an op's result R is stored as when the input element type is T:
// float results of float16/bfloat16 inputs stay in the input's storage type.
template <class T, class R>
using stored_t = std::conditional_t<is_half_v<T> && std::is_same_v<R, float>, T, R>;

// ---- walking strided runs ----

// Calls run(offsets, n, inner_strides) for each run of consecutive innermost elements
// that covers the flat (row-major) element range [begin, end) of `loop`.
template <size_t K, class F>
void for_runs(const StridedLoop<K>& loop, int64_t begin, int64_t end, F&& run) {
  const int nd = loop.ndim();
  const int64_t inner = loop.shape[nd - 1];
  std::array<int64_t, K> inner_strides;
  for (size_t k = 0; k < K; ++k) inner_strides[k] = loop.strides[k][nd - 1];
  std::vector<int64_t> idx(static_cast<size_t>(nd - 1), 0);
  std::array<int64_t, K> row_off{};
  int64_t row = begin / inner, col = begin % inner;
  for (int d = nd - 2; d >= 0; --d) {
    idx[d] = row % loop.shape[d];
    row /= loop.shape[d];
    for (size_t k = 0; k < K; ++k) row_off[k] += idx[d] * loop.strides[k][d];
  }
  for (int64_t pos = begin; pos < end;) {
    const int64_t n = std::min(inner - col, end - pos);
    std::array<int64_t, K> off;
    for (size_t k = 0; k < K; ++k) off[k] = row_off[k] + col * inner_strides[k];
    run(off, n, inner_strides);
    pos += n;
    col = 0;
    for (int d = nd - 2; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < K; ++k) row_off[k] += loop.strides[k][d];
      if (idx[d] < loop.shape[d]) break;
      for (size_t k = 0; k < K; ++k) row_off[k] -= loop.shape[d] * loop.strides[k][d];
      idx[d] = 0;
    }
  }
}

// Tiles for operands that run across the output's order (a transposed view): the tile's
// rows share the operand's cache lines, and its few columns (one page each, for a large
// transposed operand) stay within the TLB. Tall and narrow measured fastest here.
inline constexpr int64_t kTileRows = 64, kTileCols = 16;

// Whether some operand's innermost stride jumps over cache lines while its next-outer
// stride is smaller: walking the output row by row would then touch a new line (and
// often a new page) for every element.
template <size_t K>
bool has_transposed_operand(const StridedLoop<K>& loop) {
  const int nd = loop.ndim();
  if (nd < 2) return false;
  for (size_t k = 0; k < K; ++k) {
    int64_t inner = std::abs(loop.strides[k][nd - 1]), outer = std::abs(loop.strides[k][nd - 2]);
    if (inner >= 16 && outer < inner) return true;
  }
  return false;
}

// Calls run(offsets, n, inner_strides) for every run of the last two dims, tile by tile
// (kTileRows x kTileCols); parallel over blocks of kTileRows rows.
template <size_t K, class F>
void tiled_runs(const StridedLoop<K>& loop, F& run, int64_t grain) {
  const int nd = loop.ndim();
  const int64_t rows = loop.shape[nd - 2], cols = loop.shape[nd - 1];
  const int64_t blocks_per_plane = (rows + kTileRows - 1) / kTileRows;
  int64_t planes = 1;
  for (int d = 0; d < nd - 2; ++d) planes *= loop.shape[d];
  std::array<int64_t, K> inner, row_stride;
  for (size_t k = 0; k < K; ++k) {
    inner[k] = loop.strides[k][nd - 1];
    row_stride[k] = loop.strides[k][nd - 2];
  }
  auto blocks = [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = (b % blocks_per_plane) * kTileRows, r1 = std::min(rows, r0 + kTileRows);
      std::array<int64_t, K> base{};
      for (int64_t d = nd - 3, rem = b / blocks_per_plane; d >= 0; --d) {
        const int64_t i = rem % loop.shape[d];
        rem /= loop.shape[d];
        for (size_t k = 0; k < K; ++k) base[k] += i * loop.strides[k][d];
      }
      for (int64_t c0 = 0; c0 < cols; c0 += kTileCols) {
        const int64_t n = std::min(kTileCols, cols - c0);
        for (int64_t r = r0; r < r1; ++r) {
          std::array<int64_t, K> off;
          for (size_t k = 0; k < K; ++k) off[k] = base[k] + r * row_stride[k] + c0 * inner[k];
          run(off, n, inner);
        }
      }
    }
  };
  const int64_t num_blocks = planes * blocks_per_plane, block_size = kTileRows * cols;
  if (num_blocks * block_size <= grain) blocks(0, num_blocks);
  else parallel_for(num_blocks, std::max<int64_t>(1, grain / block_size), blocks);
}

// for_runs over [0, size), split over the thread pool when size exceeds `grain`; tiled
// when an operand is transposed relative to the output.
template <size_t K, class F>
void parallel_runs(const StridedLoop<K>& loop, int64_t size, F&& run, int64_t grain = kParallelGrain) {
  if (size <= 0) return;
  if (has_transposed_operand(loop)) {
    tiled_runs(loop, run, grain);
    return;
  }
  if (size <= grain) {
    for_runs(loop, 0, size, run);
    return;
  }
  parallel_for(size, grain, [&](int64_t b, int64_t e) { for_runs(loop, b, e, run); });
}

// The runs of `arrays` (the output first) over the output's shape, as parallel_runs
// gives them; one flat run (chunked for the thread pool) when every array is row-major
// of that shape: a StridedLoop's vectors cost a small op more than its work (a 1-element
// add spent 15% of its time building and freeing one).
template <size_t K, class F>
void elementwise_runs(const std::array<const Array*, K>& arrays, F&& run, int64_t grain = kParallelGrain) {
  const Array& out = *arrays[0];
  bool flat = true;
  for (const Array* a : arrays) flat = flat && a->shape() == out.shape() && detail::is_contiguous(*a);
  const int64_t size = out.size();
  if (flat) {
    if (size <= 0) return;
    std::array<int64_t, K> unit;
    unit.fill(1);
    auto chunk = [&](int64_t b, int64_t e) {
      std::array<int64_t, K> off;
      off.fill(b);
      run(off, e - b, unit);
    };
    if (size <= grain) chunk(0, size);
    else parallel_for(size, grain, chunk);
    return;
  }
  std::array<const std::vector<int64_t>*, K> strides;
  for (size_t k = 0; k < K; ++k) strides[k] = &detail::strides(*arrays[k]);
  StridedLoop<K> loop(out.shape(), strides);
  parallel_runs(loop, size, run, grain);
}

// ---- typed kernels; `out` is freshly allocated (contiguous) ----

// out = f(x) elementwise; f takes compute_t<In>, its result is stored as Out.
template <class In, class Out, class F>
void map_unary(const Array& x, const Array& out, const F& f) {
  using C = compute_t<In>;
  const In* xd = detail::data<In>(x);
  Out* od = detail::mutable_data<Out>(out);
  elementwise_runs<2>({&out, &x}, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
    Out* __restrict__ o = od + off[0];
    const In* __restrict__ a = xd + off[1];
    const int64_t sa = st[1];
    if (sa == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(C(a[i])));
    } else if (sa == 0) {
      std::fill_n(o, n, store<Out>(f(C(a[0]))));
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(C(a[i * sa])));
    }
  });
}

// out = f(x, y) elementwise.
template <class A, class B, class Out, class F>
void map_binary(const Array& x, const Array& y, const Array& out, const F& f) {
  using CA = compute_t<A>;
  using CB = compute_t<B>;
  const A* xd = detail::data<A>(x);
  const B* yd = detail::data<B>(y);
  Out* od = detail::mutable_data<Out>(out);
  elementwise_runs<3>({&out, &x, &y}, [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
    Out* __restrict__ o = od + off[0];
    const A* __restrict__ a = xd + off[1];
    const B* __restrict__ b = yd + off[2];
    const int64_t sa = st[1], sb = st[2];
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(CA(a[i]), CB(b[i])));
    } else if (sa == 1 && sb == 0) {
      const CB bv = CB(b[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(CA(a[i]), bv));
    } else if (sa == 0 && sb == 1) {
      const CA av = CA(a[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(av, CB(b[i])));
    } else if (sa == 0 && sb == 0) {
      std::fill_n(o, n, store<Out>(f(CA(a[0]), CB(b[0]))));
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(CA(a[i * sa]), CB(b[i * sb])));
    }
  });
}

// out = f(x, y, z) elementwise (clamp, two-way select).
template <class A, class B, class D, class Out, class F>
void map_ternary(const Array& x, const Array& y, const Array& z, const Array& out, const F& f) {
  using CA = compute_t<A>;
  using CB = compute_t<B>;
  using CD = compute_t<D>;
  const A* xd = detail::data<A>(x);
  const B* yd = detail::data<B>(y);
  const D* zd = detail::data<D>(z);
  Out* od = detail::mutable_data<Out>(out);
  elementwise_runs<4>({&out, &x, &y, &z}, [&](const std::array<int64_t, 4>& off, int64_t n, const std::array<int64_t, 4>& st) {
    Out* __restrict__ o = od + off[0];
    const A* __restrict__ a = xd + off[1];
    const B* __restrict__ b = yd + off[2];
    const D* __restrict__ c = zd + off[3];
    const int64_t sa = st[1], sb = st[2], sc = st[3];
    if (sa == 1 && sb == 1 && sc == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(CA(a[i]), CB(b[i]), CD(c[i])));
    } else if (sa == 0 && sb == 1 && sc == 0) {  // clamp with scalar bounds
      const CA av = CA(a[0]);
      const CD cv = CD(c[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(av, CB(b[i]), cv));
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(CA(a[i * sa]), CB(b[i * sb]), CD(c[i * sc])));
    }
  });
}

// out = block(x) over blocks of at most kBlock elements; block(const C* in, C* out, n)
// works on contiguous compute-type buffers and may be called in place (in == out).
// Strided operands are gathered into the output (or a stack buffer for half types).
template <class T, class Block>
void map_unary_blocks(const Array& x, const Array& out, const Block& block) {
  using C = compute_t<T>;
  const T* xd = detail::data<T>(x);
  T* od = detail::mutable_data<T>(out);
  elementwise_runs<2>({&out, &x}, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
    T* o = od + off[0];
    const T* a = xd + off[1];
    const int64_t sa = st[1];
    if (sa == 0) {
      C v = C(a[0]);
      block(&v, &v, 1);
      std::fill_n(o, n, store<T>(v));
      return;
    }
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t m = std::min(kBlock, n - i);
      if constexpr (std::is_same_v<T, C>) {
        if (sa == 1) {
          block(a + i, o + i, m);
        } else {
          for (int64_t j = 0; j < m; ++j) o[i + j] = a[(i + j) * sa];
          block(o + i, o + i, m);
        }
      } else {
        C buf[kBlock];
        if constexpr (std::is_same_v<T, float16_t>) {  // F16C converts 8 at a time
          if (sa == 1) f16_to_f32(a + i, buf, m);
          else for (int64_t j = 0; j < m; ++j) buf[j] = C(a[(i + j) * sa]);
          block(buf, buf, m);
          f32_to_f16(buf, o + i, m);
        } else {
          for (int64_t j = 0; j < m; ++j) buf[j] = C(a[(i + j) * sa]);
          block(buf, buf, m);
          for (int64_t j = 0; j < m; ++j) o[i + j] = store<T>(buf[j]);
        }
      }
    }
  });
}

// out = block(x, y) with block(const C* a, const C* b, C* out, n); out may alias a or b.
template <class T, class Block>
void map_binary_blocks(const Array& x, const Array& y, const Array& out, const Block& block) {
  using C = compute_t<T>;
  const T* xd = detail::data<T>(x);
  const T* yd = detail::data<T>(y);
  T* od = detail::mutable_data<T>(out);
  elementwise_runs<3>({&out, &x, &y}, [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
    T* o = od + off[0];
    const T* a = xd + off[1];
    const T* b = yd + off[2];
    const int64_t sa = st[1], sb = st[2];
    if (sa == 0 && sb == 0) {
      C va = C(a[0]), vb = C(b[0]);
      block(&va, &vb, &va, 1);
      std::fill_n(o, n, store<T>(va));
      return;
    }
    C abuf[kBlock], bbuf[kBlock];
    if (sa == 0) std::fill_n(abuf, kBlock, C(a[0]));  // a broadcast operand is filled once
    if (sb == 0) std::fill_n(bbuf, kBlock, C(b[0]));
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t m = std::min(kBlock, n - i);
      const C* pa = abuf;
      const C* pb = bbuf;
      if constexpr (std::is_same_v<T, C>) {
        if (sa == 1) pa = a + i;
        if (sb == 1) pb = b + i;
      }
      if (pa == abuf && sa != 0)
        for (int64_t j = 0; j < m; ++j) abuf[j] = C(a[(i + j) * sa]);
      if (pb == bbuf && sb != 0)
        for (int64_t j = 0; j < m; ++j) bbuf[j] = C(b[(i + j) * sb]);
      if constexpr (std::is_same_v<T, C>) {
        block(pa, pb, o + i, m);
      } else {
        block(pa, pb, abuf, m);
        for (int64_t j = 0; j < m; ++j) o[i + j] = store<T>(abuf[j]);
        if (sa == 0) std::fill_n(abuf, kBlock, C(a[0]));  // the result overwrote it
      }
    }
  });
}

// ---- dispatching an op functor over the operand dtype ----

template <class Op, class C>
concept HasVec = std::is_floating_point_v<C> && requires { Op::vec; };
template <class Op, class C>
concept HasVec2 = std::is_floating_point_v<C> && requires { Op::vec2; };
template <class Op, class C>
concept HasBlock = requires(const Op& op, const C* x, C* y) { op.block(x, y, int64_t{}); };

[[noreturn]] void fail_no_kernel(std::string_view op, DType dtype);
// Guards against a shape rule and its kernel disagreeing on the output dtype.
void check_kernel_dtype(std::string_view op, const Array& out, DType kernel_dtype);

// Runs a unary op on x into the fresh array `out`.
template <class Op>
void apply_unary(std::string_view name, const Op& op, const Array& x, const Array& out) {
  if (out.size() == 0) return;
  dispatch_dtype(x.dtype(), [&]<class T>() {
    using C = compute_t<T>;
    if constexpr (HasVec<Op, C>) {
      map_unary_blocks<T>(x, out, [](const C* a, C* o, int64_t n) { vec_unary(Op::vec, a, o, n); });
    } else if constexpr (HasBlock<Op, C>) {
      map_unary_blocks<T>(x, out, [&](const C* a, C* o, int64_t n) { op.block(a, o, n); });
    } else if constexpr (std::is_invocable_v<const Op&, C>) {
      using Out = stored_t<T, std::invoke_result_t<const Op&, C>>;
      check_kernel_dtype(name, out, dtype_of<Out>);
      map_unary<T, Out>(x, out, op);
    } else {
      fail_no_kernel(name, x.dtype());
    }
  });
}

// Runs a binary op on x, y (one dtype) into the fresh array `out`.
template <class Op>
void apply_binary(std::string_view name, const Op& op, const Array& x, const Array& y, const Array& out) {
  if (out.size() == 0) return;
  dispatch_dtype(x.dtype(), [&]<class T>() {
    using C = compute_t<T>;
    if constexpr (HasVec2<Op, C>) {
      map_binary_blocks<T>(x, y, out, [](const C* a, const C* b, C* o, int64_t n) { vec_binary(Op::vec2, a, b, o, n); });
    } else if constexpr (std::is_invocable_v<const Op&, C, C>) {
      using Out = stored_t<T, std::invoke_result_t<const Op&, C, C>>;
      check_kernel_dtype(name, out, dtype_of<Out>);
      map_binary<T, T, Out>(x, y, out, op);
    } else {
      fail_no_kernel(name, x.dtype());
    }
  });
}

// Impl rules for primitives whose kernel is just an op functor.
template <class Op>
ImplRule unary_impl(std::string_view name, Op op = {}) {
  return [name = std::string(name), op](std::span<const Array> in, const Params&, std::span<const Aval> out_avals) {
    Array out = detail::alloc_array(out_avals[0]);
    apply_unary(name, op, in[0], out);
    return detail::single(std::move(out));
  };
}
template <class Op>
ImplRule binary_impl(std::string_view name, Op op = {}) {
  return [name = std::string(name), op](std::span<const Array> in, const Params&, std::span<const Aval> out_avals) {
    Array out = detail::alloc_array(out_avals[0]);
    apply_binary(name, op, in[0], in[1], out);
    return detail::single(std::move(out));
  };
}

}  // namespace jx::cpu
