// Parameter decoding shared by gather's and the scatters' rules (src/lax/gather_scatter.cpp)
// and their CPU kernels (src/backend/cpu/kernels/gather_scatter.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jx/error.h"
#include "jx/lax.h"
#include "jx/primitive.h"

namespace jx::lax::gather_scatter {

// ---- modes (the `mode` parameter: JAX's GatherScatterMode names) ----

inline const char* mode_name(GatherScatterMode mode) {
  switch (mode) {
    case GatherScatterMode::Clip: return "clip";
    case GatherScatterMode::FillOrDrop: return "fill";
    case GatherScatterMode::PromiseInBounds: return "promise_in_bounds";
  }
  return "clip";
}

inline GatherScatterMode parse_mode(std::string_view op, const std::string& name) {
  for (auto m : {GatherScatterMode::Clip, GatherScatterMode::FillOrDrop, GatherScatterMode::PromiseInBounds})
    if (name == mode_name(m)) return m;
  jx::detail::fail(op, "unknown mode '", name, "'; expected 'clip', 'fill' or 'promise_in_bounds'");
}

// Operand dims not listed in `excluded` (sorted), in increasing order.
inline std::vector<int64_t> complement(int64_t rank, const std::vector<int64_t>& excluded) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(excluded.begin(), excluded.end(), d) == excluded.end()) out.push_back(d);
  return out;
}

struct GatherSpec {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map, slice_sizes;
  GatherScatterMode mode;

  explicit GatherSpec(const Params& p)
      : offset_dims(p.get_ints("offset_dims")),
        collapsed_slice_dims(p.get_ints("collapsed_slice_dims")),
        start_index_map(p.get_ints("start_index_map")),
        slice_sizes(p.get_ints("slice_sizes")),
        mode(parse_mode("gather", p.get_string("mode"))) {}
};

struct ScatterSpec {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  GatherScatterMode mode;

  ScatterSpec(std::string_view op, const Params& p)
      : update_window_dims(p.get_ints("update_window_dims")),
        inserted_window_dims(p.get_ints("inserted_window_dims")),
        scatter_dims_to_operand_dims(p.get_ints("scatter_dims_to_operand_dims")),
        mode(parse_mode(op, p.get_string("mode"))) {}
};

}  // namespace jx::lax::gather_scatter
