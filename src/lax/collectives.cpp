// Collectives: psum, pmax, pmin, all_gather, psum_scatter, ppermute, all_to_all and
// axis_index, one block each holding every rule. Their kernels (the communication)
// are in src/backend/cpu/kernels/collectives.cpp; the trace-time axis environment in
// src/core/axis_env.h.
//
// Params shared by all of them: `axes`, the axis names joined by ',', and
// `axis_sizes`, their sizes when the collective was traced, so shape rules are pure
// and a program names its axes in its text. Values are per member: under a vmap with a
// matching axis_name the batching rule computes across the lanes (the "named" rules
// below); over any other axis a batched operand is just a bigger per-member value.
#include "jx/collectives.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "jx/error.h"
#include "jx/lax.h"
#include "core/axis_env.h"
#include "lax/ad_rules.h"
#include "lax/batch_rules.h"
#include "lax/collective_params.h"
#include "lax/rules.h"
#include "transforms/ad_util.h"

namespace jx::lax {

using detail::fail;

namespace collective {

std::vector<std::string> axis_names(const Params& params) {
  std::vector<std::string> names;
  const std::string& s = params.get_string("axes");
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    names.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

int64_t total_size(const Params& params) {
  int64_t n = 1;
  for (int64_t s : params.get_ints("axis_sizes")) n *= s;
  return n;
}

Params axes_params(const std::vector<std::string>& names, const std::vector<int64_t>& sizes) {
  std::string joined;
  for (size_t i = 0; i < names.size(); ++i) joined += (i ? "," : "") + names[i];
  return Params{{"axes", joined}, {"axis_sizes", sizes}};
}

}  // namespace collective

namespace {

using collective::axis_names;

extern const Primitive psum_p, pmax_p, pmin_p, all_gather_p, psum_scatter_p, ppermute_p, all_to_all_p, axis_index_p;

// The traced sizes of `names`; raises naming the collective and the first unbound name.
Params bound_axes(std::string_view op, const std::vector<std::string>& names) {
  if (names.empty()) fail(op, "needs at least one axis name");
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n.empty() || n.find(',') != std::string::npos)
      fail(op, "axis name '", n, "' is not a valid name (non-empty, no commas)");
    for (size_t j = 0; j < i; ++j)
      if (names[j] == n) fail(op, "axis name '", n, "' appears twice");
    auto size = detail::traced_axis_size(n);
    if (!size)
      fail(op, "unbound axis name '", n, "': no enclosing jx::pmap, jx::shard_map or jx::vmap (with axis_name) binds it");
    sizes.push_back(*size);
  }
  return collective::axes_params(names, sizes);
}

int64_t single_axis_size(std::string_view op, const Params& params) {
  const auto& sizes = params.get_ints("axis_sizes");
  if (sizes.size() != 1) fail(op, "takes exactly one axis name, got '", params.get_string("axes"), "'");
  return sizes[0];
}

void check_axes_params(std::string_view op, const Params& params) {
  const auto names = axis_names(params);
  const auto& sizes = params.get_ints("axis_sizes");
  if (names.size() != sizes.size())
    fail(op, "axes '", params.get_string("axes"), "' name ", names.size(), " axes but axis_sizes has ", sizes.size());
  for (int64_t s : sizes)
    if (s < 1) fail(op, "axis size ", s, " must be at least 1");
}

// The named axis a vmap binds, if this collective runs over it; the others stay.
struct NamedSplit {
  bool named = false;
  std::vector<std::string> rest_names;
  std::vector<int64_t> rest_sizes;
};
NamedSplit split_named(const Params& params, const BatchAxis& axis) {
  NamedSplit s;
  const auto names = axis_names(params);
  const auto& sizes = params.get_ints("axis_sizes");
  for (size_t i = 0; i < names.size(); ++i) {
    if (!axis.name.empty() && names[i] == axis.name) s.named = true;
    else {
      s.rest_names.push_back(names[i]);
      s.rest_sizes.push_back(sizes[i]);
    }
  }
  return s;
}

// A named rule computes across the lanes without binding the primitive, so it applies
// the primitive's shape rule to one lane's operand itself (the same errors as pmap).
void check_lane(const Primitive& p, const Array& x, int64_t dim, const Params& params) {
  Aval lane = x.aval();
  if (dim != kNotMapped) lane.shape.erase(lane.shape.begin() + dim);
  p.abstract_eval(std::span<const Aval>(&lane, 1), params);
}

// The operand with its batch axis at 0 (an unbatched one broadcast to the batch).
Array lanes_first(const Array& x, int64_t dim, int64_t size) { return batch_rules::batch_to_front(x, dim, size); }

// ---- psum, pmax, pmin ----

AbstractEvalRule same_shape_rule(std::string_view op, uint32_t dtypes) {
  return [op, dtypes](std::span<const Aval> in, const Params& params) {
    rules::check_arity(op, in, 1);
    check_axes_params(op, params);
    rules::check_dtype(op, in[0], dtypes);
    return std::vector<Aval>{Aval{in[0].shape, in[0].dtype, in[0].weak_type}};
  };
}

// A reduction over the members: over a vmap's named axis it reduces the lanes, and the
// result is the same for every lane (unbatched); any other axes it still names are
// reduced by binding the collective again.
BatchRule reduction_batch(const Primitive& p, Array (*reduce_lanes)(const Array&, const std::vector<int64_t>&),
                          bool scale_unbatched) {
  return [&p, reduce_lanes, scale_unbatched](std::span<const Array> args, std::span<const int64_t> dims,
                                             const Params& params, const BatchAxis& axis) -> BatchResult {
    NamedSplit s = split_named(params, axis);
    if (!s.named) return {{bind1(p, {args[0]}, params)}, {dims[0]}};
    Array y = dims[0] == kNotMapped
                  ? (scale_unbatched ? mul(args[0], ad::full_like(args[0], static_cast<double>(axis.size))) : args[0])
                  : reduce_lanes(args[0], {dims[0]});
    if (!s.rest_names.empty()) y = bind1(p, {y}, collective::axes_params(s.rest_names, s.rest_sizes));
    return {{y}, {kNotMapped}};
  };
}

TransposeRule psum_transpose() {
  return ad_rules::unary_transpose(
      [](const Array& ct, const Aval&, const Params& params) { return bind1(psum_p, {ct}, params); });
}

// d pmax: the tangent of the members holding the maximum, averaged over ties (a
// subgradient that keeps psum(d) linear and symmetric).
JvpRule chooser_jvp(const Primitive& p) {
  return [&p](std::span<const Array> primals, std::span<const Array> tangents, const Params& params) -> JvpResult {
    Array y = bind1(p, {primals[0]}, params);
    Array hit = convert_element_type(eq(primals[0], y), primals[0].dtype());
    Array num = bind1(psum_p, {mul(tangents[0], hit)}, params);
    Array den = bind1(psum_p, {hit}, params);
    return {{y}, {div(num, den)}};
  };
}

const Primitive psum_p("psum", {.traits = kLinear | kCollective,
                                .abstract_eval = same_shape_rule("psum", rules::kNumberTypes),
                                .jvp = ad_rules::linear(psum_p),
                                .transpose = psum_transpose(),
                                .batch = reduction_batch(psum_p, reduce_sum, true)});
const Primitive pmax_p("pmax", {.traits = kCollective,
                                .abstract_eval = same_shape_rule("pmax", rules::kRealTypes),
                                .jvp = chooser_jvp(pmax_p),
                                .batch = reduction_batch(pmax_p, reduce_max, false)});
const Primitive pmin_p("pmin", {.traits = kCollective,
                                .abstract_eval = same_shape_rule("pmin", rules::kRealTypes),
                                .jvp = chooser_jvp(pmin_p),
                                .batch = reduction_batch(pmin_p, reduce_min, false)});

// ---- all_gather ----

Shape gathered_shape(std::string_view op, const Aval& x, int64_t axis, bool tiled, int64_t n) {
  Shape s = x.shape;
  if (tiled) {
    if (axis < 0 || axis >= x.ndim())
      fail(op, "axis ", axis, " is out of range for ", x.str(), " (tiled gathers along an existing axis)");
    s[axis] *= n;
  } else {
    if (axis < 0 || axis > x.ndim()) fail(op, "axis ", axis, " is out of range for ", x.str(), " (0..", x.ndim(), ")");
    s.insert(s.begin() + axis, n);
  }
  return s;
}

Params with(Params p, const std::string& name, ParamValue v) {
  p.set(name, std::move(v));
  return p;
}

// Over the vmap's own axis: every lane sees the stack of all lanes (unbatched result).
BatchResult all_gather_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                             const BatchAxis& axis) {
  const int64_t at = params.get_int("axis");
  const bool tiled = params.get_bool("tiled");
  if (!split_named(params, axis).named) {
    Array x = lanes_first(args[0], dims[0], axis.size);
    return {{bind1(all_gather_p, {x}, with(params, "axis", at + 1))}, {0}};
  }
  check_lane(all_gather_p, args[0], dims[0], params);
  Array x = lanes_first(args[0], dims[0], axis.size);  // [lanes, ...]
  Array stacked = batch_rules::move_axis(x, 0, at);
  if (tiled) {
    Shape s = args[0].shape();
    if (dims[0] != kNotMapped) s.erase(s.begin() + dims[0]);
    s[at] *= axis.size;
    stacked = reshape(stacked, s);
  }
  return {{stacked}, {kNotMapped}};
}

const Primitive all_gather_p(
    "all_gather",
    {.traits = kLinear | kCollective,
     .abstract_eval =
         [](std::span<const Aval> in, const Params& params) {
           rules::check_arity("all_gather", in, 1);
           check_axes_params("all_gather", params);
           const int64_t n = single_axis_size("all_gather", params);
           return std::vector<Aval>{Aval{gathered_shape("all_gather", in[0], params.get_int("axis"),
                                                        params.get_bool("tiled"), n),
                                         in[0].dtype, in[0].weak_type}};
         },
     .jvp = ad_rules::linear(all_gather_p),
     .transpose = ad_rules::unary_transpose([](const Array& ct, const Aval&, const Params& params) {
       Params q = collective::axes_params(axis_names(params), params.get_ints("axis_sizes"));
       q.set("scatter_dimension", params.get_int("axis"));
       q.set("tiled", params.get_bool("tiled"));
       return bind1(psum_scatter_p, {ct}, q);
     }),
     .batch = all_gather_batch});

// ---- psum_scatter ----

Shape scattered_shape(std::string_view op, const Aval& x, int64_t dim, bool tiled, int64_t n, const Params& params) {
  if (dim < 0 || dim >= x.ndim()) fail(op, "scatter_dimension ", dim, " is out of range for ", x.str());
  Shape s = x.shape;
  if (tiled) {
    if (s[dim] % n != 0)
      fail(op, "scatter_dimension ", dim, " of ", x.str(), " has extent ", s[dim], ", not a multiple of the size ", n,
           " of axis '", params.get_string("axes"), "'");
    s[dim] /= n;
  } else {
    if (s[dim] != n)
      fail(op, "scatter_dimension ", dim, " of ", x.str(), " has extent ", s[dim], " but axis '",
           params.get_string("axes"), "' has size ", n, " (tiled=true splits a multiple of it)");
    s.erase(s.begin() + dim);
  }
  return s;
}

// Over the vmap's own axis: lane m gets block m of the lanes' sum, so the summed
// block axis becomes the batch axis.
BatchResult psum_scatter_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                               const BatchAxis& axis) {
  const int64_t sd = params.get_int("scatter_dimension");
  const bool tiled = params.get_bool("tiled");
  if (!split_named(params, axis).named) {
    Array x = lanes_first(args[0], dims[0], axis.size);
    return {{bind1(psum_scatter_p, {x}, with(params, "scatter_dimension", sd + 1))}, {0}};
  }
  check_lane(psum_scatter_p, args[0], dims[0], params);
  Array total = dims[0] == kNotMapped ? mul(args[0], ad::full_like(args[0], static_cast<double>(axis.size)))
                                      : reduce_sum(args[0], {dims[0]});
  if (!tiled) return {{total}, {sd}};
  Shape s = total.shape();
  const int64_t c = s[sd] / axis.size;
  s[sd] = c;
  s.insert(s.begin() + sd, axis.size);
  return {{reshape(total, s)}, {sd}};
}

const Primitive psum_scatter_p(
    "psum_scatter",
    {.traits = kLinear | kCollective,
     .abstract_eval =
         [](std::span<const Aval> in, const Params& params) {
           rules::check_arity("psum_scatter", in, 1);
           check_axes_params("psum_scatter", params);
           rules::check_dtype("psum_scatter", in[0], rules::kNumberTypes);
           const int64_t n = single_axis_size("psum_scatter", params);
           return std::vector<Aval>{Aval{scattered_shape("psum_scatter", in[0], params.get_int("scatter_dimension"),
                                                         params.get_bool("tiled"), n, params),
                                         in[0].dtype, in[0].weak_type}};
         },
     .jvp = ad_rules::linear(psum_scatter_p),
     .transpose = ad_rules::unary_transpose([](const Array& ct, const Aval&, const Params& params) {
       Params q = collective::axes_params(axis_names(params), params.get_ints("axis_sizes"));
       q.set("axis", params.get_int("scatter_dimension"));
       q.set("tiled", params.get_bool("tiled"));
       return bind1(all_gather_p, {ct}, q);
     }),
     .batch = psum_scatter_batch});

// ---- ppermute ----

// The (source, target) pairs of `perm`, validated against the axis size.
std::vector<std::pair<int64_t, int64_t>> perm_pairs(std::string_view op, const Params& params) {
  const auto& flat = params.get_ints("perm");
  const int64_t n = single_axis_size(op, params);
  if (flat.size() % 2) fail(op, "perm must hold (source, target) pairs");
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<bool> src(static_cast<size_t>(n)), dst(static_cast<size_t>(n));
  for (size_t i = 0; i < flat.size(); i += 2) {
    const int64_t s = flat[i], t = flat[i + 1];
    if (s < 0 || s >= n || t < 0 || t >= n)
      fail(op, "pair (", s, ", ", t, ") is out of range for axis '", params.get_string("axes"), "' of size ", n);
    if (src[s]) fail(op, "member ", s, " is the source of two pairs");
    if (dst[t]) fail(op, "member ", t, " is the target of two pairs");
    src[s] = dst[t] = true;
    pairs.emplace_back(s, t);
  }
  return pairs;
}

std::vector<int64_t> inverse_perm(const Params& params) {
  std::vector<int64_t> out;
  for (auto [s, t] : perm_pairs("ppermute", params)) {
    out.push_back(t);
    out.push_back(s);
  }
  return out;
}

// Over the vmap's own axis: lane t takes lane source(t), or zeros.
BatchResult ppermute_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                           const BatchAxis& axis) {
  if (!split_named(params, axis).named) return {{bind1(ppermute_p, {args[0]}, params)}, {dims[0]}};
  check_lane(ppermute_p, args[0], dims[0], params);
  Array x = lanes_first(args[0], dims[0], axis.size);
  std::vector<int64_t> source(static_cast<size_t>(axis.size), -1);
  for (auto [s, t] : perm_pairs("ppermute", params)) source[t] = s;
  Shape lane = x.shape();
  lane[0] = 1;
  Array zero = broadcast_in_dim(ad::scalar_like(x, 0.0), lane, {});
  std::vector<Array> parts;
  for (int64_t t = 0; t < axis.size; ++t) {
    if (source[t] < 0) {
      parts.push_back(zero);
      continue;
    }
    std::vector<int64_t> start(x.ndim(), 0);
    Shape stop = x.shape();
    start[0] = source[t];
    stop[0] = source[t] + 1;
    parts.push_back(slice(x, start, stop));
  }
  return {{concatenate(parts, 0)}, {0}};
}

const Primitive ppermute_p(
    "ppermute",
    {.traits = kLinear | kCollective,
     .abstract_eval =
         [](std::span<const Aval> in, const Params& params) {
           rules::check_arity("ppermute", in, 1);
           check_axes_params("ppermute", params);
           perm_pairs("ppermute", params);
           return std::vector<Aval>{in[0]};
         },
     .jvp = ad_rules::linear(ppermute_p),
     .transpose = ad_rules::unary_transpose([](const Array& ct, const Aval&, const Params& params) {
       return bind1(ppermute_p, {ct}, with(params, "perm", inverse_perm(params)));
     }),
     .batch = ppermute_batch});

// ---- all_to_all ----

Shape all_to_all_shape(std::string_view op, const Aval& x, int64_t split, int64_t concat, bool tiled, int64_t n,
                       const Params& params) {
  if (split < 0 || split >= x.ndim()) fail(op, "split_axis ", split, " is out of range for ", x.str());
  if (concat < 0 || concat >= x.ndim()) fail(op, "concat_axis ", concat, " is out of range for ", x.str());
  Shape s = x.shape;
  if (tiled) {
    if (s[split] % n != 0)
      fail(op, "split_axis ", split, " of ", x.str(), " has extent ", s[split], ", not a multiple of the size ", n,
           " of axis '", params.get_string("axes"), "'");
    s[split] /= n;
    s[concat] *= n;
  } else {
    if (s[split] != n)
      fail(op, "split_axis ", split, " of ", x.str(), " has extent ", s[split], " but axis '",
           params.get_string("axes"), "' has size ", n, " (tiled=true splits a multiple of it)");
    s.erase(s.begin() + split);
    s.insert(s.begin() + concat, n);
  }
  return s;
}

// Over the vmap's own axis no data moves between lanes that a transpose cannot express:
// lane i's chunk j is lane j's chunk i, so the split axis becomes the batch axis and the
// batch axis lands at concat_axis.
BatchResult all_to_all_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                             const BatchAxis& axis) {
  const int64_t split = params.get_int("split_axis"), concat = params.get_int("concat_axis");
  const bool tiled = params.get_bool("tiled");
  Array x = lanes_first(args[0], dims[0], axis.size);  // [lanes j, S...]
  if (!split_named(params, axis).named) {
    Params q = with(with(params, "split_axis", split + 1), "concat_axis", concat + 1);
    return {{bind1(all_to_all_p, {x}, q)}, {0}};
  }
  check_lane(all_to_all_p, args[0], dims[0], params);
  const int64_t n = axis.size;
  Shape s(x.shape().begin() + 1, x.shape().end());  // one lane's shape
  if (tiled) {
    // Split axis (n*c) -> (n, c): then it is the untiled case with chunks of c, and the
    // lanes axis merges into concat_axis afterwards.
    const int64_t c = s[split] / n;
    Shape s2 = x.shape();
    s2[1 + split] = c;
    s2.insert(s2.begin() + 1 + split, n);
    x = reshape(x, s2);  // [j, ..., i, c, ...]
    // Untiled move on the reshaped lane (chunk axis at `split`): lane i's value has axis j
    // inserted before the (unsplit) concat axis, which then merges with it.
    const int64_t r = static_cast<int64_t>(s2.size()) - 1;  // reshaped lane rank
    std::vector<int64_t> rest;
    for (int64_t d = 0; d < r; ++d)
      if (d != split) rest.push_back(1 + d);
    // The concat axis's position among `rest` (the lane without its chunk axis).
    const int64_t concat_pos = concat;  // concat indexes the lane shape with split's extent c
    std::vector<int64_t> perm{1 + split};
    for (int64_t k = 0; k < static_cast<int64_t>(rest.size()); ++k) {
      if (k == concat_pos) perm.push_back(0);
      perm.push_back(rest[k]);
    }
    Array y = transpose(x, perm);  // [i, ..., j, concat, ...]
    Shape out = y.shape();
    out[1 + concat_pos] *= out[2 + concat_pos];
    out.erase(out.begin() + 2 + concat_pos);
    return {{reshape(y, out)}, {0}};
  }
  std::vector<int64_t> rest;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
    if (d != split) rest.push_back(1 + d);
  std::vector<int64_t> perm{1 + split};
  for (int64_t k = 0; k <= static_cast<int64_t>(rest.size()); ++k) {
    if (k == concat) perm.push_back(0);
    if (k < static_cast<int64_t>(rest.size())) perm.push_back(rest[k]);
  }
  return {{transpose(x, perm)}, {0}};
}

const Primitive all_to_all_p(
    "all_to_all",
    {.traits = kLinear | kCollective,
     .abstract_eval =
         [](std::span<const Aval> in, const Params& params) {
           rules::check_arity("all_to_all", in, 1);
           check_axes_params("all_to_all", params);
           const int64_t n = single_axis_size("all_to_all", params);
           return std::vector<Aval>{Aval{all_to_all_shape("all_to_all", in[0], params.get_int("split_axis"),
                                                          params.get_int("concat_axis"), params.get_bool("tiled"), n,
                                                          params),
                                         in[0].dtype, in[0].weak_type}};
         },
     .jvp = ad_rules::linear(all_to_all_p),
     .transpose = ad_rules::unary_transpose([](const Array& ct, const Aval&, const Params& params) {
       Params q = with(with(params, "split_axis", params.get_int("concat_axis")), "concat_axis",
                       params.get_int("split_axis"));
       return bind1(all_to_all_p, {ct}, q);
     }),
     .batch = all_to_all_batch});

// ---- axis_index ----

const Primitive axis_index_p(
    "axis_index",
    {.traits = kNotDifferentiable | kCollective,
     .abstract_eval =
         [](std::span<const Aval> in, const Params& params) {
           rules::check_arity("axis_index", in, 0);
           check_axes_params("axis_index", params);
           single_axis_size("axis_index", params);
           return std::vector<Aval>{Aval{{}, DType::Int32}};
         },
     // Only reached over the vmap's own axis (there are no operands to batch).
     .batch = [](std::span<const Array>, std::span<const int64_t>, const Params& params,
                 const BatchAxis& axis) -> BatchResult {
       if (!split_named(params, axis).named) return {{bind1(axis_index_p, {}, params)}, {kNotMapped}};
       return {{iota(DType::Int32, axis.size)}, {0}};
     }});

}  // namespace

// ---- the public functions ----

Array psum(const Array& x, const AxisNames& axes) { return bind1(psum_p, {x}, bound_axes("psum", axes.names())); }
Array pmax(const Array& x, const AxisNames& axes) { return bind1(pmax_p, {x}, bound_axes("pmax", axes.names())); }
Array pmin(const Array& x, const AxisNames& axes) { return bind1(pmin_p, {x}, bound_axes("pmin", axes.names())); }

Array pmean(const Array& x, const AxisNames& axes) {
  Params p = bound_axes("pmean", axes.names());
  const double n = static_cast<double>(collective::total_size(p));
  Array v = is_floating(x.dtype()) || is_complex(x.dtype()) ? x : convert_element_type(x, DType::Float32);
  Array s = bind1(psum_p, {v}, p);
  return div(s, ad::full_like(s, n));
}

int64_t axis_size(const AxisNames& axes) { return collective::total_size(bound_axes("axis_size", axes.names())); }

Array all_gather(const Array& x, std::string_view axis_name, AllGatherOptions options) {
  Params p = bound_axes("all_gather", {std::string(axis_name)});
  int64_t axis = options.axis;
  const int64_t limit = x.ndim() + (options.tiled ? 0 : 1);
  if (axis < -limit || axis >= limit) fail("all_gather", "axis ", axis, " is out of range for ", x.aval().str());
  if (axis < 0) axis += limit;
  p.set("axis", axis);
  p.set("tiled", options.tiled);
  return bind1(all_gather_p, {x}, p);
}

Array psum_scatter(const Array& x, std::string_view axis_name, PsumScatterOptions options) {
  Params p = bound_axes("psum_scatter", {std::string(axis_name)});
  int64_t d = options.scatter_dimension;
  if (d < -x.ndim() || d >= x.ndim())
    fail("psum_scatter", "scatter_dimension ", d, " is out of range for ", x.aval().str());
  if (d < 0) d += x.ndim();
  p.set("scatter_dimension", d);
  p.set("tiled", options.tiled);
  return bind1(psum_scatter_p, {x}, p);
}

Array ppermute(const Array& x, std::string_view axis_name, std::vector<std::pair<int64_t, int64_t>> perm) {
  Params p = bound_axes("ppermute", {std::string(axis_name)});
  std::vector<int64_t> flat;
  for (auto [s, t] : perm) {
    flat.push_back(s);
    flat.push_back(t);
  }
  p.set("perm", flat);
  return bind1(ppermute_p, {x}, p);
}

Array all_to_all(const Array& x, std::string_view axis_name, int64_t split_axis, int64_t concat_axis,
                 AllToAllOptions options) {
  Params p = bound_axes("all_to_all", {std::string(axis_name)});
  const int64_t nd = x.ndim();
  if (split_axis < -nd || split_axis >= nd)
    fail("all_to_all", "split_axis ", split_axis, " is out of range for ", x.aval().str());
  if (concat_axis < -nd || concat_axis >= nd)
    fail("all_to_all", "concat_axis ", concat_axis, " is out of range for ", x.aval().str());
  p.set("split_axis", split_axis < 0 ? split_axis + nd : split_axis);
  p.set("concat_axis", concat_axis < 0 ? concat_axis + nd : concat_axis);
  p.set("tiled", options.tiled);
  return bind1(all_to_all_p, {x}, p);
}

Array axis_index(std::string_view axis_name) {
  return bind1(axis_index_p, {}, bound_axes("axis_index", {std::string(axis_name)}));
}

}  // namespace jx::lax
