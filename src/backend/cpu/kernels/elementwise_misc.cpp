// CPU kernels of select_n, the type-changing primitives convert_element_type and
// bitcast_convert_type (their rules: src/lax/elementwise_misc.cpp).
#include <cstring>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels/kernels.h"
#include "core/array_internal.h"

namespace jx::cpu {
namespace {

// ---- select_n ----

// Case index of a predicate value; out-of-range integers clamp to the first or last
// case (XLA leaves them implementation-defined; clamping keeps every read in bounds).
template <class W>
inline int64_t case_index(W w, int64_t num_cases) {
  if constexpr (std::is_same_v<W, bool>) {
    return w ? 1 : 0;
  } else {
    if (w <= W(0)) return 0;
    return static_cast<uint64_t>(w) >= static_cast<uint64_t>(num_cases) ? num_cases - 1 : static_cast<int64_t>(w);
  }
}

// Calls f.template operator()<E>() with E an element type as wide as `width` bytes:
// selecting moves elements without reading their values.
template <class F>
void dispatch_element_width(int64_t width, F&& f) {
  switch (width) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
    case 16: return f.template operator()<complex128_t>();
  }
  detail::internal_fail("select_n", "unsupported element width ", width);
}

std::vector<Array> select_n_impl(std::span<const Array> in, const Params&, std::span<const Aval> out_avals) {
  const Aval& out_aval = out_avals[0];
  const Array& which = in[0];
  std::span<const Array> cases = in.subspan(1);
  const auto num_cases = static_cast<int64_t>(cases.size());
  if (which.ndim() == 0) {  // one case wins everywhere: return it (arrays are immutable)
    int64_t k = 0;
    dispatch_dtype(which.dtype(), [&]<class W>() {
      if constexpr (std::is_arithmetic_v<W>) k = case_index(*detail::data<W>(which), num_cases);
    });
    return {detail::with_weak_type(cases[k], out_aval.weak_type)};
  }
  Array out = detail::alloc_array(out_aval);
  if (out.size() == 0) return {out};
  dispatch_dtype(which.dtype(), [&]<class W>() {
    if constexpr (std::is_arithmetic_v<W>) {
      dispatch_element_width(out.itemsize(), [&]<class E>() {
        if (num_cases == 1) {
          map_unary<E, E>(cases[0], out, [](const E& v) { return v; });
        } else if (num_cases == 2) {
          map_ternary<W, E, E, E>(which, cases[0], cases[1], out, [](W w, const E& a, const E& b) {
            return case_index(w, 2) ? b : a;
          });
        } else {
          // Many cases: read them contiguously, indexed by the output's flat position.
          std::vector<Array> dense;
          std::vector<const E*> ptrs;
          for (const Array& c : cases) {
            dense.push_back(detail::contiguous(c));
            ptrs.push_back(detail::data<E>(dense.back()));
          }
          E* od = detail::mutable_data<E>(out);
          const W* wd = detail::data<W>(which);
          StridedLoop<2> loop(out.shape(), {&detail::strides(out), &detail::strides(which)});
          parallel_runs(loop, out.size(), [&](const std::array<int64_t, 2>& off, int64_t n,
                                                   const std::array<int64_t, 2>& st) {
            for (int64_t i = 0; i < n; ++i)
              od[off[0] + i] = ptrs[case_index(wd[off[1] + i * st[1]], num_cases)][off[0] + i];
          });
        }
      });
    }
  });
  return {out};
}

// ---- convert_element_type ----

std::vector<Array> convert_element_type_impl(std::span<const Array> in, const Params&,
                                             std::span<const Aval> out_avals) {
  const Array& x = in[0];
  if (x.dtype() == out_avals[0].dtype) return {detail::with_weak_type(x, out_avals[0].weak_type)};
  Array out = detail::alloc_array(out_avals[0]);
  if (out.size() == 0) return {out};
  // convert_value gives every pair defined results (floats saturate, NaN -> 0, ...).
  dispatch_dtype(x.dtype(), [&]<class In>() {
    dispatch_dtype(out.dtype(), [&]<class Out>() {
      map_unary<In, Out>(x, out, [](compute_t<In> v) { return detail::convert_value<Out>(v); });
    });
  });
  return {out};
}

// ---- bitcast_convert_type ----

std::vector<Array> bitcast_convert_type_impl(std::span<const Array> in, const Params&,
                                             std::span<const Aval> out_avals) {
  const Array& x = in[0];
  const Aval& out_aval = out_avals[0];
  if (itemsize(x.dtype()) == itemsize(out_aval.dtype))  // same width: a view with new meaning
    return {detail::make_view(x, out_aval, detail::strides(x), x.impl().offset)};
  Array src = detail::contiguous(x);
  Array out = detail::alloc_array(out_aval);
  if (out.nbytes() > 0)
    std::memcpy(detail::mutable_data<void>(out), detail::raw_data(src), static_cast<size_t>(out.nbytes()));
  return {out};
}

}  // namespace

void add_elementwise_misc_kernels(detail::KernelTable& table) {
  table.add("select_n", select_n_impl);
  table.add("convert_element_type", convert_element_type_impl);
  table.add("bitcast_convert_type", bitcast_convert_type_impl);
}

}  // namespace jx::cpu
