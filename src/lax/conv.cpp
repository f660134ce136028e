// conv_general_dilated: XLA's convolution with strides, padding, input (lhs) and kernel
// (rhs) dilation, dimension numbers and feature/batch groups, over any number of
// spatial dimensions: its rules. Its CPU kernel (im2col, then one matrix product per
// image and group): src/backend/cpu/kernels/conv.cpp.
#include <algorithm>
#include <numeric>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "lax/ad_rules.h"
#include "lax/batch_rules.h"
#include "lax/conv_params.h"
#include "lax/rules.h"

namespace jx::lax {
extern const Primitive conv_general_dilated_p;
namespace {

constexpr const char* kConv = "conv_general_dilated";

void check_spec(const char* name, const std::vector<int64_t>& spec, int64_t rank) {
  std::vector<int64_t> sorted = spec;
  std::sort(sorted.begin(), sorted.end());
  bool ok = static_cast<int64_t>(spec.size()) == rank;
  for (int64_t i = 0; ok && i < rank; ++i) ok = sorted[i] == i;
  if (!ok)
    detail::fail(kConv, "dimension numbers ", name, "=", detail::shape_str(spec),
                 " must be a permutation of (0, ..., ", rank - 1, ") for operands of rank ", rank);
}

// Output size of spatial dim `i`: the window slides over the dilated, padded input.
// Checked arithmetic, so extreme dilations or paddings raise instead of wrapping. As in
// JAX (and lax::pad), negative padding may crop the dilated input to nothing but not past it.
int64_t conv_out_size(int64_t i, int64_t in, int64_t window, int64_t stride, int64_t lo, int64_t hi,
                      int64_t lhs_dil, int64_t rhs_dil, const Aval& lhs, const Aval& rhs) {
  auto add = [&](int64_t a, int64_t b) {
    return detail::checked_add(a, b, kConv, " in spatial dimension ", i, " (lhs ", lhs.str(), ", rhs ", rhs.str(),
                               ", padding (", lo, ", ", hi, "))");
  };
  auto dilate = [&](int64_t n, int64_t d) {
    return n == 0 ? 0
                  : add(detail::checked_mul(n - 1, d, kConv, " dilating spatial dimension ", i, " (lhs ", lhs.str(),
                                            ", rhs ", rhs.str(), ")"),
                        1);
  };
  const int64_t dilated_in = dilate(in, lhs_dil);
  const int64_t padded = add(add(dilated_in, lo), hi);
  if (padded < 0)
    detail::fail(kConv, "negative padding (", lo, ", ", hi, ") is larger than spatial dimension ", i,
                 " of the lhs (size ", dilated_in, lhs_dil > 1 ? " after dilation" : "", "); lhs ", lhs.str(),
                 ", rhs ", rhs.str());
  const int64_t dilated_window = dilate(window, rhs_dil);
  // The kernel's tap positions reach |lo| past the padded input's ends: keep them int64.
  auto magnitude = [&](int64_t v) { return v < 0 ? add(-(v + 1), 1) : v; };
  add(add(magnitude(lo), magnitude(hi)), add(dilated_in, dilated_window));
  if (padded < dilated_window) return 0;
  return (padded - dilated_window) / stride + 1;
}

}  // namespace

namespace conv_params {

ConvGeometry read_geometry(const Aval& lhs, const Aval& rhs, const Params& p) {
  ConvGeometry g;
  const int64_t rank = lhs.ndim();
  if (rank != rhs.ndim())
    detail::fail(kConv, "lhs and rhs must have the same rank, got ", lhs.str(), " and ", rhs.str());
  if (rank < 2)
    detail::fail(kConv, "operands must have rank >= 2 (batch and feature dimensions), got ", lhs.str(), " and ",
                 rhs.str());
  const int64_t ns = rank - 2;
  g.lhs_spec = p.get_ints("lhs_spec");
  g.rhs_spec = p.get_ints("rhs_spec");
  g.out_spec = p.get_ints("out_spec");
  check_spec("lhs_spec", g.lhs_spec, rank);
  check_spec("rhs_spec", g.rhs_spec, rank);
  check_spec("out_spec", g.out_spec, rank);
  g.strides = p.get_ints("window_strides");
  const auto& padding = p.get_ints("padding");
  g.lhs_dilation = p.get_ints("lhs_dilation");
  g.rhs_dilation = p.get_ints("rhs_dilation");
  auto check_len = [&](const char* name, const std::vector<int64_t>& v, int64_t want) {
    if (static_cast<int64_t>(v.size()) != want)
      detail::fail(kConv, name, " must have ", want, " entries for ", ns, " spatial dimensions, got ",
                   detail::shape_str(v));
  };
  check_len("window_strides", g.strides, ns);
  check_len("padding (flattened (lo, hi) pairs)", padding, 2 * ns);
  check_len("lhs_dilation", g.lhs_dilation, ns);
  check_len("rhs_dilation", g.rhs_dilation, ns);
  for (int64_t i = 0; i < ns; ++i) {
    if (g.strides[i] < 1) detail::fail(kConv, "window_strides must be positive, got ", detail::shape_str(g.strides));
    if (g.lhs_dilation[i] < 1)
      detail::fail(kConv, "lhs_dilation must be positive, got ", detail::shape_str(g.lhs_dilation));
    if (g.rhs_dilation[i] < 1)
      detail::fail(kConv, "rhs_dilation must be positive, got ", detail::shape_str(g.rhs_dilation));
    g.pad_lo.push_back(padding[2 * i]);
    g.pad_hi.push_back(padding[2 * i + 1]);
  }
  g.feature_groups = p.get_int("feature_group_count");
  g.batch_groups = p.get_int("batch_group_count");
  if (g.feature_groups < 1)
    detail::fail(kConv, "feature_group_count must be positive, got ", g.feature_groups);
  if (g.batch_groups < 1) detail::fail(kConv, "batch_group_count must be positive, got ", g.batch_groups);
  if (g.feature_groups > 1 && g.batch_groups > 1)
    detail::fail(kConv, "feature_group_count (", g.feature_groups, ") and batch_group_count (", g.batch_groups,
                 ") cannot both exceed 1");
  g.batch = lhs.shape[g.lhs_spec[0]];
  g.in_features = lhs.shape[g.lhs_spec[1]];
  g.out_features = rhs.shape[g.rhs_spec[0]];
  g.kernel_in_features = rhs.shape[g.rhs_spec[1]];
  if (g.in_features % g.feature_groups != 0 || g.in_features / g.feature_groups != g.kernel_in_features)
    detail::fail(kConv, "lhs feature dimension (", g.in_features, ") must equal the rhs input feature dimension (",
                 g.kernel_in_features, ") times feature_group_count (", g.feature_groups, "); shapes ",
                 detail::shape_str(lhs.shape), " and ", detail::shape_str(rhs.shape));
  if (g.out_features % g.feature_groups != 0)
    detail::fail(kConv, "rhs output feature dimension (", g.out_features,
                 ") must be a multiple of feature_group_count (", g.feature_groups, ")");
  if (g.batch % g.batch_groups != 0)
    detail::fail(kConv, "lhs batch dimension (", g.batch, ") must be a multiple of batch_group_count (",
                 g.batch_groups, ")");
  if (g.out_features % g.batch_groups != 0)
    detail::fail(kConv, "rhs output feature dimension (", g.out_features,
                 ") must be a multiple of batch_group_count (", g.batch_groups, ")");
  for (int64_t i = 0; i < ns; ++i) {
    g.in_spatial.push_back(lhs.shape[g.lhs_spec[2 + i]]);
    g.kernel_spatial.push_back(rhs.shape[g.rhs_spec[2 + i]]);
    g.out_spatial.push_back(conv_out_size(i, g.in_spatial[i], g.kernel_spatial[i], g.strides[i], g.pad_lo[i],
                                          g.pad_hi[i], g.lhs_dilation[i], g.rhs_dilation[i], lhs, rhs));
  }
  return g;
}

}  // namespace conv_params

namespace {

using conv_params::ConvGeometry;
using conv_params::read_geometry;

std::vector<Aval> conv_abstract_eval(std::span<const Aval> in, const Params& p) {
  rules::check_arity(kConv, in, 2);
  if (in[0].dtype != in[1].dtype)
    detail::fail(kConv, "operands must have the same dtype, got ", in[0].str(), " and ", in[1].str());
  rules::check_dtype(kConv, in[0], rules::kNumberTypes, "operands");
  const ConvGeometry g = read_geometry(in[0], in[1], p);
  Shape out(static_cast<size_t>(in[0].ndim()));
  out[g.out_spec[0]] = g.batch / g.batch_groups;
  out[g.out_spec[1]] = g.out_features;
  for (int64_t i = 0; i < g.num_spatial(); ++i) out[g.out_spec[2 + i]] = g.out_spatial[i];
  return {Aval{std::move(out), in[0].dtype, rules::all_weak(in)}};
}

// ---- transformation rules ----

Array bind_conv(const Array& lhs, const Array& rhs, const Params& p) {
  return jx::bind(conv_general_dilated_p, std::vector<Array>{lhs, rhs}, p)[0];
}

// JAX's _reshape_axis_into: moves axis `src` to sit just before axis `dst` (counted
// after removing src) and merges the two, src major.
Array reshape_axis_into(int64_t src, int64_t dst, const Array& x) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != src) perm.push_back(i);
  perm.insert(perm.begin() + dst, src);
  Shape shape;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != src) shape.push_back(x.shape()[i]);
  shape[dst] *= x.shape()[src];
  return reshape(transpose(x, perm), shape);
}
// JAX's _reshape_axis_out_of: splits axis `src` into (size1, rest).
Array reshape_axis_out_of(int64_t src, int64_t size1, const Array& x) {
  Shape shape = x.shape();
  const int64_t size2 = shape[src] / size1;
  shape[src] = size2;
  shape.insert(shape.begin() + src, size1);
  return reshape(x, shape);
}

int64_t dilate(int64_t size, int64_t d) { return size == 0 ? 0 : 1 + d * (size - 1); }

// Per spatial dim, the dilated extents of the input, the kernel and the cotangent (the
// output dilated by the window strides): what both transposes compute padding from.
struct DilatedExtents {
  int64_t lhs, rhs, out;
};

std::vector<int64_t> spatial_of(const Shape& shape, const std::vector<int64_t>& spec) {
  std::vector<int64_t> out;
  for (size_t i = 2; i < spec.size(); ++i) out.push_back(shape[spec[i]]);
  return out;
}
std::vector<int64_t> swap_first_two(std::vector<int64_t> spec) {
  std::swap(spec[0], spec[1]);
  return spec;
}

JvpResult conv_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& p) {
  Array out = bind_conv(primals[0], primals[1], p);
  Array t;
  if (tangents[0].valid()) t = bind_conv(tangents[0], primals[1], p);
  if (tangents[1].valid()) t = ad::add_tangents(t, bind_conv(primals[0], tangents[1], p));
  return {{out}, {t}};
}

std::vector<DilatedExtents> dilated_extents(const ConvGeometry& g, const Shape& ct_shape) {
  const auto out_spatial = spatial_of(ct_shape, g.out_spec);
  std::vector<DilatedExtents> out;
  for (int64_t i = 0; i < g.num_spatial(); ++i)
    out.push_back({dilate(g.in_spatial[i], g.lhs_dilation[i]), dilate(g.kernel_spatial[i], g.rhs_dilation[i]),
                   dilate(out_spatial[i], g.strides[i])});
  return out;
}

// Cotangent of lhs (JAX's _conv_general_dilated_transpose_lhs): a convolution of ct with
// the spatially reversed kernel, its feature dims swapped, strided by lhs_dilation and
// dilated by window_strides, padded so the result has lhs's spatial sizes.
Array conv_transpose_lhs(const Array& ct, const Aval& lhs, const Array& rhs_in, const Params& p) {
  const ConvGeometry g = read_geometry(lhs, rhs_in.aval(), p);
  if (g.batch_groups > 1)
    detail::fail(kConv, "transposing with respect to lhs is not implemented for batch_group_count=", g.batch_groups);
  Array rhs = rhs_in;
  int64_t feature_groups = g.feature_groups;
  if (g.feature_groups > 1 || g.batch_groups > 1) {
    // The groups move from the kernel's output features into its input features.
    const int64_t groups = std::max(g.feature_groups, g.batch_groups);
    rhs = reshape_axis_out_of(g.rhs_spec[0], groups, rhs);
    rhs = reshape_axis_into(g.rhs_spec[0], g.rhs_spec[1], rhs);
    feature_groups = groups;
  }
  std::vector<std::pair<int64_t, int64_t>> padding;
  const auto extents = dilated_extents(g, ct.shape());
  for (size_t i = 0; i < extents.size(); ++i) {
    const auto [lhs_d, rhs_d, out_d] = extents[i];
    const int64_t before = rhs_d - g.pad_lo[i] - 1;
    padding.push_back({before, lhs_d + rhs_d - 1 - out_d - before});
  }
  std::vector<int64_t> sdims(g.rhs_spec.begin() + 2, g.rhs_spec.end());
  Array revd = rev(rhs, sdims);
  return conv_general_dilated(ct, revd, g.lhs_dilation, padding, g.strides, g.rhs_dilation,
                              ConvDimensionNumbers{g.out_spec, swap_first_two(g.rhs_spec), g.lhs_spec},
                              feature_groups, 1);
}

// Cotangent of rhs (JAX's _conv_general_dilated_transpose_rhs): a convolution of lhs
// with ct, batch and feature roles exchanged; feature groups become batch groups.
Array conv_transpose_rhs(const Array& ct, const Array& lhs, const Aval& rhs, const Params& p) {
  const ConvGeometry g = read_geometry(lhs.aval(), rhs, p);
  int64_t feature_groups = g.feature_groups, batch_groups = g.batch_groups;
  if (batch_groups > 1) {
    feature_groups = batch_groups;
    batch_groups = 1;
  } else if (feature_groups > 1) {
    batch_groups = feature_groups;
    feature_groups = 1;
  }
  std::vector<std::pair<int64_t, int64_t>> padding;
  const auto extents = dilated_extents(g, ct.shape());
  for (size_t i = 0; i < extents.size(); ++i) {
    const auto [lhs_d, rhs_d, out_d] = extents[i];
    const int64_t lo = g.pad_lo[i];
    padding.push_back({lo, (out_d - lhs_d) + (rhs_d - lo - 1)});
  }
  return conv_general_dilated(lhs, ct, g.rhs_dilation, padding, g.lhs_dilation, g.strides,
                              ConvDimensionNumbers{swap_first_two(g.lhs_spec), swap_first_two(g.out_spec),
                                                   swap_first_two(g.rhs_spec)},
                              feature_groups, batch_groups);
}

std::vector<Array> conv_transpose(std::span<const Array> cts, std::span<const TransposeOperand> ops,
                                  const Params& p) {
  if (ops[0].is_linear() && ops[1].is_linear())
    detail::fail(kConv, "is not linear in both operands at once (", ops[0].aval.str(), ", ", ops[1].aval.str(), ")");
  std::vector<Array> out(2);
  if (!cts[0].valid()) return out;
  if (ops[0].is_linear()) out[0] = conv_transpose_lhs(cts[0], ops[0].aval, ops[1].value, p);
  else out[1] = conv_transpose_rhs(cts[0], ops[0].value, ops[1].aval, p);
  return out;
}

// JAX's _conv_general_dilated_batch_rule: the vmapped axis is folded into the batch
// dimension (lhs mapped), into the output features (rhs mapped), or into both with
// feature groups (both mapped); the result is split back out of the same dimension.
BatchResult conv_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& p,
                       const BatchAxis& axis) {
  const Array &lhs = args[0], &rhs = args[1];
  const int64_t lb = dims[0], rb = dims[1];
  const auto lhs_spec = p.get_ints("lhs_spec"), rhs_spec = p.get_ints("rhs_spec"), out_spec = p.get_ints("out_spec");
  int64_t fgc = p.get_int("feature_group_count"), bgc = p.get_int("batch_group_count");
  const int64_t size = axis.size;
  Params q = p;
  if (lb != kNotMapped && rb != kNotMapped) {
    Array new_lhs;
    if (bgc > 1) {
      new_lhs = reshape_axis_into(lb, lhs_spec[0], lhs);
      q.set("batch_group_count", bgc * size);
    } else {
      new_lhs = reshape_axis_into(lb, lhs_spec[1], lhs);
      q.set("feature_group_count", fgc * size);
    }
    Array new_rhs = reshape_axis_into(rb, rhs_spec[0], rhs);
    Array out = bind_conv(new_lhs, new_rhs, q);
    return {{reshape_axis_out_of(out_spec[1], size, out)}, {out_spec[1]}};
  }
  if (lb != kNotMapped) {
    Array new_lhs;
    if (bgc == 1) {
      new_lhs = reshape_axis_into(lb, lhs_spec[0], lhs);
    } else {
      // Batch groups stay outermost in the batch dim: split them out, fold the vmapped
      // axis into the remainder, then merge back.
      new_lhs = reshape_axis_out_of(lhs_spec[0] + (lb <= lhs_spec[0] ? 1 : 0), bgc, lhs);
      new_lhs = reshape_axis_into(lb + (lhs_spec[0] < lb ? 1 : 0), lhs_spec[0] + 1, new_lhs);
      new_lhs = reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs);
    }
    Array out = bind_conv(new_lhs, rhs, q);
    return {{reshape_axis_out_of(out_spec[0], size, out)}, {out_spec[0]}};
  }
  if (fgc == 1 && bgc == 1) {
    Array out = bind_conv(lhs, reshape_axis_into(rb, rhs_spec[0], rhs), q);
    return {{reshape_axis_out_of(out_spec[1], size, out)}, {out_spec[1]}};
  }
  // Groups must stay outermost in the kernel's output features.
  const int64_t groups = fgc > 1 ? fgc : bgc;
  Array new_rhs = reshape_axis_out_of(rhs_spec[0] + (rb <= rhs_spec[0] ? 1 : 0), groups, rhs);
  new_rhs = reshape_axis_into(rb + (rhs_spec[0] < rb ? 1 : 0), rhs_spec[0] + 1, new_rhs);
  new_rhs = reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs);
  Array out = bind_conv(lhs, new_rhs, q);
  out = reshape_axis_out_of(out_spec[1], groups, out);
  out = reshape_axis_out_of(out_spec[1] + 1, size, out);
  out = reshape_axis_into(out_spec[1], out_spec[1] + 1, out);
  return {{out}, {out_spec[1]}};
}

}  // namespace

const Primitive conv_general_dilated_p("conv_general_dilated", {.traits = kLinear,
                                                                .abstract_eval = conv_abstract_eval,
                                                                .jvp = conv_jvp,
                                                                .transpose = conv_transpose,
                                                                .batch = conv_batch});

Array conv_general_dilated(const Array& lhs, const Array& rhs, const std::vector<int64_t>& window_strides,
                           const std::vector<std::pair<int64_t, int64_t>>& padding,
                           const std::vector<int64_t>& lhs_dilation, const std::vector<int64_t>& rhs_dilation,
                           const std::optional<ConvDimensionNumbers>& dimension_numbers,
                           int64_t feature_group_count, int64_t batch_group_count) {
  const int64_t ns = std::max<int64_t>(0, lhs.ndim() - 2);
  std::vector<int64_t> identity(static_cast<size_t>(lhs.ndim()));
  for (size_t i = 0; i < identity.size(); ++i) identity[i] = static_cast<int64_t>(i);
  const std::vector<int64_t> ones(static_cast<size_t>(ns), 1);
  std::vector<int64_t> pads;
  for (const auto& [lo, hi] : padding) {
    pads.push_back(lo);
    pads.push_back(hi);
  }
  const ConvDimensionNumbers dn = dimension_numbers.value_or(ConvDimensionNumbers{identity, identity, identity});
  Params p{{"window_strides", window_strides},
           {"padding", pads},
           {"lhs_dilation", lhs_dilation.empty() ? ones : lhs_dilation},
           {"rhs_dilation", rhs_dilation.empty() ? ones : rhs_dilation},
           {"lhs_spec", dn.lhs_spec},
           {"rhs_spec", dn.rhs_spec},
           {"out_spec", dn.out_spec},
           {"feature_group_count", feature_group_count},
           {"batch_group_count", batch_group_count}};
  return bind1(conv_general_dilated_p, {lhs, rhs}, p);
}

}  // namespace jx::lax
