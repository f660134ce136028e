// CPU kernels of the slicing primitives (their rules: src/lax/slicing.cpp). slice and
// dynamic_slice return views (a strided window of the operand's storage); the others
// write a fresh array.
#include <algorithm>

#include "backend/cpu/kernels/kernels.h"
#include "core/array_internal.h"
#include "lax/data_movement.h"
#include "lax/rules.h"

namespace jx::cpu {
namespace {

namespace movement = lax::movement;
namespace rules = lax::rules;

// The view of x starting at `start` with `sizes` elements and element `steps` per dim.
// An empty window keeps x's offset, so no pointer ever leaves the storage.
Array window_view(const Array& x, const Aval& aval, const std::vector<int64_t>& start,
                  const std::vector<int64_t>& steps) {
  const auto& xs = jx::detail::strides(x);
  std::vector<int64_t> strides(xs.size());
  int64_t offset = x.impl().offset;
  for (size_t i = 0; i < xs.size(); ++i) {
    strides[i] = xs[i] * steps[i];
    if (aval.size() > 0) offset += start[i] * xs[i];
  }
  return jx::detail::make_view(x, aval, std::move(strides), offset);
}

std::vector<Array> slice_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
  return {window_view(in[0], out_avals[0], params.get_ints("start_indices"), params.get_ints("strides"))};
}

// XLA's semantics: each start index is clamped to [0, dim - size] so the window stays
// inside the operand; out-of-range (and negative) starts never raise.
std::vector<int64_t> clamped_starts(std::span<const Array> indices, const Shape& shape, const Shape& sizes) {
  std::vector<int64_t> start(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    start[i] = std::clamp<int64_t>(movement::scalar_index(indices[i]), 0, shape[i] - sizes[i]);
  return start;
}

std::vector<Array> dynamic_slice_impl(std::span<const Array> in, const Params& params,
                                      std::span<const Aval> out_avals) {
  const Array& x = in[0];
  auto start = clamped_starts(in.subspan(1), x.shape(), out_avals[0].shape);
  return {window_view(x, out_avals[0], start, std::vector<int64_t>(start.size(), 1))};
}

std::vector<Array> dynamic_update_slice_impl(std::span<const Array> in, const Params&,
                                             std::span<const Aval> out_avals) {
  const Array& x = in[0];
  const Array& update = in[1];
  Array out = movement::copy_to_fresh(x, out_avals[0]);
  if (update.size() == 0) return {out};
  auto start = clamped_starts(in.subspan(2), x.shape(), update.shape());
  const auto& os = jx::detail::strides(out);
  int64_t offset = 0;
  for (size_t i = 0; i < start.size(); ++i) offset += start[i] * os[i];
  auto* dst = static_cast<char*>(jx::detail::mutable_data<void>(out)) + offset * x.itemsize();
  movement::copy_strided(x.itemsize(), update.shape(), jx::detail::raw_data(update), jx::detail::strides(update),
                        dst, os);
  return {out};
}

// Fills every element of `out` outside the box [start, start + count) (per dim) with the
// value at `value`: for each dim d, the slabs before and after the box in d, spanning the
// box in earlier dims and everything in later ones. Together they tile the complement.
void fill_outside_box(Array& out, const Shape& start, const Shape& count, const void* value) {
  const Shape& shape = out.shape();
  const auto& os = jx::detail::strides(out);
  const int64_t width = out.itemsize();
  auto* base = static_cast<char*>(jx::detail::mutable_data<void>(out));
  for (size_t d = 0; d < shape.size(); ++d) {
    for (int side = 0; side < 2; ++side) {
      Shape region(shape.size());
      int64_t offset = 0;
      for (size_t i = 0; i < shape.size(); ++i) {
        int64_t lo = 0, n = shape[i];
        if (i < d) lo = start[i], n = count[i];
        if (i == d) {
          lo = side == 0 ? 0 : start[i] + count[i];
          n = side == 0 ? start[i] : shape[i] - lo;
        }
        region[i] = n;
        offset += lo * os[i];
      }
      if (shape_size(region) == 0) continue;  // also keeps `offset` inside the buffer
      movement::fill_strided(width, region, base + offset * width, os, value);
    }
  }
}

std::vector<Array> pad_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
  const Array& x = in[0];
  const Aval& aval = out_avals[0];
  Array out = jx::detail::alloc_array(aval);
  const int64_t width = x.itemsize();
  auto* dst = static_cast<char*>(jx::detail::mutable_data<void>(out));
  const void* value = jx::detail::raw_data(in[1]);
  // Input element i of a dim lands at lo + i * (interior + 1); negative lo/hi crop.
  const auto& config = params.get_ints("padding_config");
  const auto& xs = jx::detail::strides(x);
  const auto& os = jx::detail::strides(out);
  Shape count(xs.size()), dst_start(xs.size());
  std::vector<int64_t> src_strides(xs.size()), dst_strides(xs.size());
  int64_t src_offset = 0, dst_offset = 0;
  bool has_interior = false;
  for (size_t i = 0; i < xs.size(); ++i) {
    const int64_t lo = config[3 * i], step = config[3 * i + 2] + 1, n = x.shape()[i], out_n = aval.shape[i];
    const int64_t first = lo >= 0 ? 0 : (-lo + step - 1) / step;
    const int64_t last = out_n - 1 - lo < 0 ? 0 : std::min(n, (out_n - 1 - lo) / step + 1);
    count[i] = std::max<int64_t>(0, last - first);
    dst_start[i] = lo + first * step;
    src_offset += first * xs[i];
    dst_offset += dst_start[i] * os[i];
    src_strides[i] = xs[i];
    dst_strides[i] = os[i] * step;
    has_interior = has_interior || (step > 1 && count[i] > 1);
  }
  if (shape_size(count) == 0) {
    movement::fill_contiguous(width, dst, aval.size(), value);
    return {out};
  }
  // Without interior padding the copied data is one dense box: fill only around it.
  if (has_interior) movement::fill_contiguous(width, dst, aval.size(), value);
  else fill_outside_box(out, dst_start, count, value);
  movement::copy_strided(width, count, static_cast<const char*>(jx::detail::raw_data(x)) + src_offset * width,
                         src_strides, dst + dst_offset * width, dst_strides);
  return {out};
}

std::vector<Array> concatenate_impl(std::span<const Array> in, const Params& params,
                                    std::span<const Aval> out_avals) {
  const Aval& aval = out_avals[0];
  Array out = jx::detail::alloc_array(aval);
  const auto dim = static_cast<size_t>(rules::canonical_axis("concatenate", params.get_int("dimension"),
                                                             aval.ndim(), aval.shape));
  const auto& os = jx::detail::strides(out);
  const int64_t width = itemsize(aval.dtype);
  auto* dst = static_cast<char*>(jx::detail::mutable_data<void>(out));
  int64_t at = 0;
  for (const Array& x : in) {
    movement::copy_strided(width, x.shape(), jx::detail::raw_data(x), jx::detail::strides(x),
                          dst + at * os[dim] * width, os);
    at += x.shape()[dim];
  }
  return {out};
}

}  // namespace

void add_slicing_kernels(detail::KernelTable& table) {
  table.add("slice", slice_impl);
  table.add("dynamic_slice", dynamic_slice_impl);
  table.add("dynamic_update_slice", dynamic_update_slice_impl);
  table.add("pad", pad_impl);
  table.add("concatenate", concatenate_impl);
}

}  // namespace jx::cpu
