#include "jit/passes/take_along_selects.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "jit/passes/inline_calls.h"
#include "jit/passes/positions.h"
#include "jit/passes/rewrite.h"
#include "jx/error.h"
#include "jx/lax.h"
#include "jx/transforms.h"
#include "lax/gather_scatter_params.h"
#include "lax/primitives.h"

namespace jx::compiler {
namespace {

// A gather's operand rows of at most this many bytes are read whole by the select form
// at no cost over the gather's one element: one cache line either way.
constexpr int64_t kFreeRowBytes = 64;

// The index operand of a take along `axis`: indices of shape [batch..., n] for an
// operand of rank n, each component (`index`: [batch..., 1]) an iota over a batch dim of
// the operand's size along d, in order, except component `axis`; every other batch dim
// has size 1. `aligned` is the operand's shape with 1 along `axis`, which the index
// reshapes to in row-major order.
struct RowIndex {
  int64_t axis = 0;
  Atom index;
  Shape aligned;
};

std::vector<int64_t> all_axes(int64_t n) {
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < n; ++d) axes.push_back(d);
  return axes;
}

// The row index of `indices` into an operand of shape `operand`, whose take has shape
// `batch`, or nothing when it is not that form.
std::optional<RowIndex> row_index(Positions& m, const Atom& indices, const Shape& operand, const Shape& batch) {
  const auto n = static_cast<int64_t>(operand.size());
  const auto nb = static_cast<int64_t>(batch.size());
  const Aval& iv = indices.aval();
  if (n == 0 || (iv.dtype != DType::Int32 && iv.dtype != DType::Int64)) return std::nullopt;
  Shape component = batch, whole = batch;
  component.push_back(1);
  whole.push_back(n);
  if (iv.shape != whole) return std::nullopt;
  std::vector<Atom> parts{indices};
  if (n > 1) {
    const Equation* concat = m.producer(indices);
    if (!concat || concat->primitive != &lax::concatenate_p || concat->params.get_int("dimension") != nb ||
        static_cast<int64_t>(concat->inputs.size()) != n)
      return std::nullopt;
    parts = concat->inputs;
  }
  std::optional<int64_t> axis;
  std::vector<char> mapped(static_cast<size_t>(nb), 0);
  int64_t last = -1;
  for (int64_t d = 0; d < n; ++d) {
    const Atom& part = parts[static_cast<size_t>(d)];
    if (part.aval().shape != component) return std::nullopt;
    std::optional<int64_t> k = n > 1 ? m.position_dim(part) : std::nullopt;
    if (k && *k < nb && *k > last && batch[static_cast<size_t>(*k)] == operand[static_cast<size_t>(d)]) {
      mapped[static_cast<size_t>(*k)] = 1;
      last = *k;
      continue;
    }
    if (axis) return std::nullopt;  // a second free component: not one element per row
    axis = d;
  }
  if (!axis) return std::nullopt;
  for (int64_t k = 0; k < nb; ++k)
    if (!mapped[static_cast<size_t>(k)] && batch[static_cast<size_t>(k)] != 1) return std::nullopt;
  Shape aligned = operand;
  aligned[static_cast<size_t>(*axis)] = 1;
  return RowIndex{*axis, parts[static_cast<size_t>(*axis)], std::move(aligned)};
}

bool picks_exactly(DType d) { return is_floating(d) || is_integer(d) || is_bool(d); }

DType same_width_integer(DType d) {
  switch (itemsize(d)) {
    case 2: return DType::Int16;
    case 4: return DType::Int32;
    default: return DType::Int64;
  }
}

// An index of the operand's shape with 1 along axis -> whether each iota position along `axis`
// of `shape` is the row's index.
Array selected(const Array& index, const Shape& shape, int64_t axis) {
  Array iota = lax::broadcasted_iota(index.dtype(), shape, static_cast<int>(axis));
  return lax::eq(iota, lax::broadcast_in_dim(index, shape, all_axes(static_cast<int64_t>(shape.size()))));
}

Array clamped(const Array& index, int64_t size) {
  Array lo = Array(0).astype(index.dtype()), hi = Array(size - 1).astype(index.dtype());
  return lax::clamp(lax::broadcast_in_dim(lo, index.shape(), {}), index, lax::broadcast_in_dim(hi, index.shape(), {}));
}

Array splat(double value, const Aval& like) {
  return lax::broadcast_in_dim(Array(value).astype(like.dtype), like.shape, {});
}

// An elementwise op between the picked operand and a value constant along the row (a
// broadcast of a row value: log_softmax's max and log of the sum). The pick moves inside
// it, pick(u - bcast(v)) = pick(u) - v, the same operation on the same values, so a
// cross-entropy picks its logit in the kernel's first pass instead of a pass of its own
// after the sum (over rows of 100: one pass of three).
struct RowOp {
  const Primitive* op = nullptr;  // add, sub, mul or div
  Atom row;                       // the broadcast's operand
  std::vector<int64_t> dims;      // its broadcast_dimensions
  bool row_first = false;         // the row value is the op's first operand
};

// The row ops around the gather's operand, outermost first, and the operand under them.
std::pair<Atom, std::vector<RowOp>> peel_row_ops(Atom operand, int64_t axis, const Positions& m) {
  constexpr int kMaxRowOps = 8;
  std::vector<RowOp> ops;
  const Aval aval = operand.aval();
  while (ops.size() < kMaxRowOps) {
    const Equation* p = m.producer(operand);
    if (!p || p->inputs.size() != 2 ||
        (p->primitive != &lax::add_p && p->primitive != &lax::sub_p && p->primitive != &lax::mul_p &&
         p->primitive != &lax::div_p))
      break;
    std::optional<RowOp> found;
    for (size_t side = 0; side < 2 && !found; ++side) {
      const Atom& w = p->inputs[side];
      const Equation* b = m.producer(w);
      if (!b || b->primitive != &lax::broadcast_in_dim_p || !(w.aval() == aval) ||
          !(p->inputs[1 - side].aval() == aval))
        continue;
      const std::vector<int64_t>& dims = b->params.get_ints("broadcast_dimensions");
      const Shape& from = b->inputs.at(0).aval().shape;
      bool constant = true;  // along the axis: the row value's dim there (if any) has size 1
      for (size_t i = 0; i < dims.size(); ++i) constant = constant && (dims[i] != axis || from[i] == 1);
      if (constant) found = RowOp{p->primitive, b->inputs[0], dims, side == 0};
    }
    if (!found) break;
    operand = p->inputs[found->row_first ? 1 : 0];
    ops.push_back(std::move(*found));
  }
  return {operand, std::move(ops)};
}

// The gather, as lax code over (operand, index[, fill], the row ops' values...).
ClosedJaxpr pick_program(const Equation& e, const RowIndex& r, lax::GatherScatterMode mode, const Atom& base,
                         const std::vector<RowOp>& row_ops) {
  const Shape batch = e.outputs[0].aval.shape, rows = r.aligned;
  const int64_t axis = r.axis;
  const size_t first_row = e.inputs.size();
  detail::FlatFn pick = [=](std::span<const Array> in) {
    const Array& x = in[0];
    const int64_t size = x.shape()[static_cast<size_t>(axis)];
    Array index = lax::reshape(in[1], rows);
    if (mode != lax::GatherScatterMode::FillOrDrop) index = clamped(index, size);
    Array at = selected(index, x.shape(), axis);
    const Aval a = x.aval();
    Array picked;
    if (is_bool(a.dtype)) {
      picked = lax::reduce_or(lax::select_n(at, {splat(0, a), x}), {axis});
    } else {
      // A float's bits, summed as integers of its width with zeros: exact for every value.
      const DType bits = is_integer(a.dtype) ? a.dtype : same_width_integer(a.dtype);
      Array v = lax::bitcast_convert_type(x, bits);
      picked = lax::reduce_sum(lax::select_n(at, {splat(0, v.aval()), v}), {axis});
      picked = lax::bitcast_convert_type(picked, a.dtype);
    }
    picked = lax::reshape(picked, rows);
    for (size_t k = row_ops.size(); k-- > 0;) {
      const RowOp& o = row_ops[k];
      Array w = lax::broadcast_in_dim(in[first_row + k], rows, o.dims);
      Array a = o.row_first ? w : picked, b = o.row_first ? picked : w;
      picked = o.op == &lax::add_p   ? lax::add(a, b)
               : o.op == &lax::sub_p ? lax::sub(a, b)
               : o.op == &lax::mul_p ? lax::mul(a, b)
                                     : lax::div(a, b);
    }
    if (mode == lax::GatherScatterMode::FillOrDrop) {
      const Aval ia = index.aval();
      Array inside = lax::bitwise_and(lax::ge(index, splat(0, ia)), lax::lt(index, splat(static_cast<double>(size), ia)));
      Array fill = in.size() == 3 ? lax::broadcast_in_dim(in[2], rows, {}) : splat(NAN, picked.aval());
      picked = lax::select_n(inside, {fill, picked});
    }
    return std::vector<Array>{lax::reshape(picked, batch)};
  };
  std::vector<Aval> avals{base.aval(), r.index.aval()};
  if (e.inputs.size() == 3) avals.push_back(e.inputs[2].aval());
  for (const RowOp& o : row_ops) avals.push_back(o.row.aval());
  return detail::make_jaxpr_flat(pick, avals);
}

// The scatter_add, as lax code over (base, index, updates).
ClosedJaxpr add_at_program(const Equation& e, const RowIndex& r, lax::GatherScatterMode mode) {
  const Shape rows = r.aligned;
  const int64_t axis = r.axis;
  detail::FlatFn add_at = [=](std::span<const Array> in) {
    const Array& base = in[0];
    Array index = lax::reshape(in[1], rows);
    if (mode == lax::GatherScatterMode::Clip) index = clamped(index, base.shape()[static_cast<size_t>(axis)]);
    Array at = selected(index, base.shape(), axis);
    Array update = lax::broadcast_in_dim(lax::reshape(in[2], rows), base.shape(), all_axes(base.ndim()));
    return std::vector<Array>{lax::select_n(at, {base, lax::add(base, update)})};
  };
  std::vector<Aval> avals{e.inputs[0].aval(), r.index.aval(), e.inputs[2].aval()};
  return detail::make_jaxpr_flat(add_at, avals);
}

bool only_collapsed_points(const std::vector<int64_t>& windows, const std::vector<int64_t>& collapsed,
                           const std::vector<int64_t>& map, int64_t n) {
  return windows.empty() && collapsed == all_axes(n) && map == all_axes(n);
}

// The program replacing `e` and its operands, when `e` is a take along an axis or its transpose.
std::optional<Replacement> replacement(const Equation& e, Positions& m,
                                                                     PassContext& ctx) {
  if (e.primitive == &lax::gather_p) {
    const Aval& x = e.inputs.at(0).aval();
    const int64_t n = x.ndim();
    const auto mode = lax::gather_scatter::parse_mode("gather", e.params.get_string("mode"));
    if (!picks_exactly(x.dtype) || e.params.get_ints("slice_sizes") != Shape(static_cast<size_t>(n), 1) ||
        !only_collapsed_points(e.params.get_ints("offset_dims"), e.params.get_ints("collapsed_slice_dims"),
                               e.params.get_ints("start_index_map"), n))
      return std::nullopt;
    if (mode == lax::GatherScatterMode::FillOrDrop && e.inputs.size() != 3 && !is_floating(x.dtype)) return std::nullopt;
    std::optional<RowIndex> r = row_index(m, e.inputs[1], x.shape, e.outputs[0].aval.shape);
    if (!r) return std::nullopt;
    const Equation* source = m.producer(e.inputs[0]);
    const int64_t row_bytes = x.shape[static_cast<size_t>(r->axis)] * itemsize(x.dtype);
    if (!(source && source->primitive->has(kElementwise)) && row_bytes > kFreeRowBytes) {
      if (ctx.records_notes())
        ctx.note(detail::cat("kept a take along axis ", r->axis, " of ", x.str(),
                             ": its operand is not computed elementwise and its rows are longer than ",
                             kFreeRowBytes, " bytes"));
      return std::nullopt;
    }
    auto [base, row_ops] = peel_row_ops(e.inputs[0], r->axis, m);
    std::vector<Atom> operands{base, r->index};
    if (e.inputs.size() == 3) operands.push_back(e.inputs[2]);
    for (const RowOp& o : row_ops) operands.push_back(o.row);
    if (ctx.records_notes())
      ctx.note(detail::cat("a take along axis ", r->axis, " of ", x.str(), " as a select",
                           row_ops.empty() ? "" : detail::cat(", inside ", row_ops.size(), " ops with row values")));
    return Replacement{pick_program(e, *r, mode, base, row_ops), std::move(operands)};
  }
  if (e.primitive == &lax::scatter_add_p) {
    const Aval& base = e.inputs.at(0).aval();
    const int64_t n = base.ndim();
    if (!picks_exactly(base.dtype) || is_bool(base.dtype) ||
        !only_collapsed_points(e.params.get_ints("update_window_dims"), e.params.get_ints("inserted_window_dims"),
                               e.params.get_ints("scatter_dims_to_operand_dims"), n))
      return std::nullopt;
    std::optional<RowIndex> r = row_index(m, e.inputs[1], base.shape, e.inputs[2].aval().shape);
    if (!r) return std::nullopt;
    const auto mode = lax::gather_scatter::parse_mode("scatter_add", e.params.get_string("mode"));
    if (ctx.records_notes())
      ctx.note(detail::cat("an add at one element per row along axis ", r->axis, " of ", base.str(), " as a select"));
    return Replacement{add_at_program(e, *r, mode), std::vector<Atom>{e.inputs[0], r->index, e.inputs[2]}};
  }
  return std::nullopt;
}

}  // namespace

bool take_along_selects(ClosedJaxpr& program, PassContext& ctx) {
  Positions positions(program.jaxpr.eqns);
  std::vector<std::optional<Replacement>> replaced;
  for (const Equation& e : program.jaxpr.eqns) replaced.push_back(replacement(e, positions, ctx));
  return splice_replacements(program, std::move(replaced), ctx);
}

const Pass kTakeAlongSelectsPass{"take_along_selects", &take_along_selects};

}  // namespace jx::compiler
