// CPU kernels of the shape primitives (their rules: src/lax/shape_ops.cpp). Everything but
// iota (and reshape of a layout no view can express) returns a view sharing the operand's
// storage: only strides and the offset change.
#include <algorithm>

#include "backend/cpu/kernels/kernels.h"
#include "core/array_internal.h"
#include "core/convert.h"
#include "lax/data_movement.h"
#include "lax/rules.h"
#include "lax/shape_params.h"

namespace jx::cpu {
namespace {

namespace movement = lax::movement;
namespace rules = lax::rules;
using lax::shape::expand_dims_positions;
using lax::shape::insert_at;

const Array& only_operand(std::span<const Array> in) { return in[0]; }

std::vector<Array> iota_impl(std::span<const Array>, const Params& params, std::span<const Aval> out_avals) {
  const Aval& aval = out_avals[0];
  Array out = jx::detail::alloc_array(aval);
  const auto dim = static_cast<size_t>(params.get_int("dimension"));
  const int64_t n = aval.shape[dim];
  const int64_t outer = shape_size(Shape(aval.shape.begin(), aval.shape.begin() + static_cast<long>(dim)));
  const int64_t inner = shape_size(Shape(aval.shape.begin() + static_cast<long>(dim) + 1, aval.shape.end()));
  dispatch_dtype(aval.dtype, [&]<class T>() {
    T* d = jx::detail::mutable_data<T>(out);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < n; ++i, d += inner) std::fill_n(d, inner, jx::detail::convert_value<T>(i));
  });
  return {out};
}

std::vector<Array> broadcast_in_dim_impl(std::span<const Array> in, const Params& params,
                                         std::span<const Aval> out_avals) {
  const Array& x = only_operand(in);
  const Aval& aval = out_avals[0];
  const auto& bdims = params.get_ints("broadcast_dimensions");
  const auto& xs = jx::detail::strides(x);
  // New dims and size-1 dims stretched to a larger size repeat the same element: stride 0.
  std::vector<int64_t> strides(aval.shape.size(), 0);
  for (size_t i = 0; i < bdims.size(); ++i) {
    auto d = static_cast<size_t>(bdims[i]);
    if (x.shape()[i] == aval.shape[d]) strides[d] = xs[i];
  }
  return {jx::detail::make_view(x, aval, std::move(strides), x.impl().offset)};
}

std::vector<Array> reshape_impl(std::span<const Array> in, const Params&, std::span<const Aval> out_avals) {
  const Array& x = only_operand(in);
  const Aval& aval = out_avals[0];
  std::vector<int64_t> strides;
  if (movement::reshape_strides(x.shape(), jx::detail::strides(x), aval.shape, strides))
    return {jx::detail::make_view(x, aval, std::move(strides), x.impl().offset)};
  // The layout cannot be expressed with strides (e.g. flattening a transpose): copy.
  Array dense = movement::copy_to_fresh(x, x.aval());
  return {jx::detail::make_view(dense, aval, jx::detail::contiguous_strides(aval.shape), 0)};
}

std::vector<Array> transpose_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
  const Array& x = only_operand(in);
  const auto& xs = jx::detail::strides(x);
  std::vector<int64_t> strides;
  for (int64_t p : params.get_ints("permutation")) strides.push_back(xs[static_cast<size_t>(p)]);
  return {jx::detail::make_view(x, out_avals[0], std::move(strides), x.impl().offset)};
}

std::vector<Array> squeeze_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
  const Array& x = only_operand(in);
  auto dims = rules::canonical_axes("squeeze", params.get_ints("dimensions"), x.shape());
  const auto& xs = jx::detail::strides(x);
  std::vector<int64_t> strides;
  for (size_t i = 0; i < xs.size(); ++i)
    if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) == dims.end()) strides.push_back(xs[i]);
  return {jx::detail::make_view(x, out_avals[0], std::move(strides), x.impl().offset)};
}

std::vector<Array> expand_dims_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
  const Array& x = only_operand(in);
  auto positions = expand_dims_positions(params.get_ints("dimensions"), x.shape());
  return {jx::detail::make_view(x, out_avals[0], insert_at(jx::detail::strides(x), positions, 0), x.impl().offset)};
}

std::vector<Array> rev_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
  const Array& x = only_operand(in);
  std::vector<int64_t> strides = jx::detail::strides(x);
  int64_t offset = x.impl().offset;
  const bool empty = x.size() == 0;  // keep the offset of an empty array where it was
  for (int64_t d : rules::canonical_axes("rev", params.get_ints("dimensions"), x.shape())) {
    auto i = static_cast<size_t>(d);
    if (!empty) offset += (x.shape()[i] - 1) * strides[i];
    strides[i] = -strides[i];
  }
  return {jx::detail::make_view(x, out_avals[0], std::move(strides), offset)};
}

}  // namespace

void add_shape_kernels(detail::KernelTable& table) {
  table.add("iota", iota_impl);
  table.add("broadcast_in_dim", broadcast_in_dim_impl);
  table.add("reshape", reshape_impl);
  table.add("transpose", transpose_impl);
  table.add("squeeze", squeeze_impl);
  table.add("expand_dims", expand_dims_impl);
  table.add("rev", rev_impl);
}

}  // namespace jx::cpu
