// Cumulative reductions along one axis: cumsum, cumprod, cummax, cummin (each
// optionally from the end). Their CPU kernels: src/backend/cpu/kernels/cumulative.cpp.
#include <functional>
#include <vector>

#include "jx/lax.h"
#include "lax/rules.h"
#include "core/array_internal.h"
#include "lax/ad_rules.h"
#include "transforms/ad_util.h"

namespace jx::lax {
namespace {

using jx::detail::fail;

AbstractEvalRule cumulative_rule(std::string op) {
  return [op](std::span<const Aval> in, const Params& params) {
    rules::check_arity(op, in, 1);
    rules::check_dtype(op, in[0], rules::kNumberTypes);
    rules::canonical_axis(op, params.get_int("axis"), in[0].ndim(), in[0].shape);
    (void)params.get_bool("reverse");
    return std::vector<Aval>{in[0]};
  };
}

// ---- derivatives ----

// A scan element's state: one array per component (e.g. a prefix product and its
// tangent), all of x's shape.
using ScanState = std::vector<Array>;
// combine(earlier, later) in scan order.
using ScanCombine = std::function<ScanState(const ScanState& earlier, const ScanState& later)>;

// Each component shifted by `step` along `axis` in scan order (element i receives the
// element `step` earlier), the vacated positions filled with the component's identity.
ScanState shifted(const ScanState& state, const std::vector<Array>& identities, int64_t axis, bool reverse,
                  int64_t step) {
  ScanState out;
  for (size_t c = 0; c < state.size(); ++c) {
    const Array& x = state[c];
    const int64_t n = x.shape()[axis];
    std::vector<int64_t> start(x.ndim(), 0), limit = x.shape();
    std::vector<PadDim> config(x.ndim());
    if (reverse) {
      start[axis] = step;
      config[axis].hi = step;
    } else {
      limit[axis] = n - step;
      config[axis].lo = step;
    }
    out.push_back(pad(slice(x, start, limit), identities[c], config));
  }
  return out;
}

// An inclusive scan in log2(n) rounds (Hillis-Steele): after the round with offset s,
// element i holds the combination of the 2s elements ending at i. Built from slice,
// pad and the combine's lax calls only, so it is differentiable and batchable as a
// composition (JAX derives cumulative jvps through associative_scan in the same spirit).
ScanState inclusive_scan(ScanState state, const std::vector<Array>& identities, const ScanCombine& combine,
                         int64_t axis, bool reverse) {
  const int64_t n = state[0].shape()[axis];
  for (int64_t step = 1; step < n; step *= 2) state = combine(shifted(state, identities, axis, reverse, step), state);
  return state;
}

using ad::scalar_like;

extern const Primitive cumsum_p, cumprod_p, cummax_p, cummin_p;

// cumprod: the scan of pairs (prefix product a, its tangent da) under
// (a1, da1) * (a2, da2) = (a1 a2, da1 a2 + a1 da2). No division, so zeros in x give the
// exact derivative (t / x * out would not).
JvpResult cumprod_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  const Array& x = primals[0];
  const int64_t axis = params.get_int("axis");
  const bool reverse = params.get_bool("reverse");
  Array out = jx::bind(cumprod_p, primals, params)[0];
  if (x.shape()[axis] == 0) return JvpResult{{out}, {tangents[0]}};
  ScanState scanned = inclusive_scan(
      {x, tangents[0]}, {scalar_like(x, 1.0), scalar_like(x, 0.0)},
      [](const ScanState& e, const ScanState& l) {
        return ScanState{mul(e[0], l[0]), add(mul(e[1], l[0]), mul(e[0], l[1]))};
      },
      axis, reverse);
  return JvpResult{{out}, {scanned[1]}};
}

// cummax/cummin: each output takes the tangent of the element it selected. Position j
// is a candidate when x_j equals the running result there; the output at i selects the
// latest candidate at or before i in scan order (the latest of tied extremes), whose
// value equals out_i. Its tangent is carried forward by a scan over (is_candidate, t)
// where a later candidate replaces an earlier one. Unlike JAX (whose associative_scan
// of max splits tangents at ties in a tree-shaped pattern), ties are not split. Before
// any candidate (only when x begins with NaN) the tangent is 0.
JvpRule cumulative_chooser_jvp(const Primitive& p) {
  return [&p](std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
    const Array& x = primals[0];
    const int64_t axis = params.get_int("axis");
    const bool reverse = params.get_bool("reverse");
    Array out = jx::bind(p, primals, params)[0];
    if (x.shape()[axis] == 0) return JvpResult{{out}, {tangents[0]}};
    Array candidate = eq(x, out);
    ScanState scanned = inclusive_scan(
        {candidate, tangents[0]}, {jx::detail::scalar_of(DType::Bool, 0.0), scalar_like(x, 0.0)},
        [](const ScanState& e, const ScanState& l) {
          return ScanState{bitwise_or(e[0], l[0]), select_n(l[0], {e[1], l[1]})};
        },
        axis, reverse);
    return JvpResult{{out}, {scanned[1]}};
  };
}

// vmap: the scanned axis is renumbered around the batch axis, which stays in place.
BatchRule cumulative_batch(const Primitive& p) {
  return [&p](std::span<const Array> args, std::span<const int64_t> dims, const Params& params, const BatchAxis&) {
    const int64_t b = dims[0];
    int64_t axis = params.get_int("axis");
    if (axis >= b) ++axis;
    Params q = params;
    q.set("axis", axis);
    return BatchResult{jx::bind(p, args, q), {b}};
  };
}

const Primitive cumsum_p("cumsum", {.traits = kLinear,
                                    .abstract_eval = cumulative_rule("cumsum"),
                                    .jvp = ad_rules::linear(cumsum_p),
                                    // out_i = sum of x_j over j up to i, so ct_x_j = sum of ct_i over
                                    // i from j on: the cumsum in the other direction.
                                    .transpose = ad_rules::unary_transpose(
                                        [](const Array& ct, const Aval&, const Params& params) {
                                          return cumsum(ct, params.get_int("axis"), !params.get_bool("reverse"));
                                        }),
                                    .batch = cumulative_batch(cumsum_p)});
const Primitive cumprod_p("cumprod", {.traits = 0,
                                      .abstract_eval = cumulative_rule("cumprod"),
                                      .jvp = cumprod_jvp,
                                      .batch = cumulative_batch(cumprod_p)});
const Primitive cummax_p("cummax", {.traits = 0,
                                    .abstract_eval = cumulative_rule("cummax"),
                                    .jvp = cumulative_chooser_jvp(cummax_p),
                                    .batch = cumulative_batch(cummax_p)});
const Primitive cummin_p("cummin", {.traits = 0,
                                    .abstract_eval = cumulative_rule("cummin"),
                                    .jvp = cumulative_chooser_jvp(cummin_p),
                                    .batch = cumulative_batch(cummin_p)});

Array bind_cumulative(const Primitive& p, const Array& x, int64_t axis, bool reverse) {
  const int64_t nd = x.ndim();
  if (axis < 0 && axis >= -nd) axis += nd;  // canonical in the IR; bad axes reach the shape rule as written
  return bind1(p, {x}, {{"axis", axis}, {"reverse", reverse}});
}

}  // namespace

Array cumsum(const Array& x, int64_t axis, bool reverse) { return bind_cumulative(cumsum_p, x, axis, reverse); }
Array cumprod(const Array& x, int64_t axis, bool reverse) { return bind_cumulative(cumprod_p, x, axis, reverse); }
Array cummax(const Array& x, int64_t axis, bool reverse) { return bind_cumulative(cummax_p, x, axis, reverse); }
Array cummin(const Array& x, int64_t axis, bool reverse) { return bind_cumulative(cummin_p, x, axis, reverse); }

}  // namespace jx::lax
