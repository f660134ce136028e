#include "jit/passes/positions.h"

#include <algorithm>

#include "jit/passes/rewrite.h"
#include "lax/primitives.h"

namespace jx::compiler {

Positions::Positions(const std::vector<Equation>& eqns) {
  for (const Equation& e : eqns)
    for (const Var& v : e.outputs) producer_[v.id] = &e;
}

const Equation* Positions::producer(const Atom& a) const {
  if (!a.is_var()) return nullptr;
  auto it = producer_.find(a.var().id);
  return it == producer_.end() ? nullptr : it->second;
}

bool Positions::is_splat(const Atom& a, int64_t value) const {
  if (!a.is_var()) {
    const Array& v = a.literal().value;
    return is_integer(v.dtype()) && v.item<int64_t>() == value;
  }
  const Equation* p = producer(a);
  return p && p->primitive == &lax::broadcast_in_dim_p && is_splat(p->inputs.at(0), value);
}

std::optional<int64_t> Positions::position_dim(const Atom& a) {
  if (!a.is_var()) return std::nullopt;
  auto memo = position_.find(a.var().id);
  if (memo != position_.end()) return memo->second;
  std::optional<int64_t> k = find_position_dim(a);
  position_[a.var().id] = k;
  return k;
}

std::optional<int64_t> Positions::find_position_dim(const Atom& a) {
  const Equation* p = producer(a);
  const Shape& shape = a.aval().shape;
  if (!p || shape.empty()) return std::nullopt;
  if (p->primitive == &lax::iota_p) return p->params.get_int("dimension");
  if (p->primitive == &lax::convert_element_type_p) {
    const DType to = a.aval().dtype, from = p->inputs.at(0).aval().dtype;
    std::optional<int64_t> k = position_dim(p->inputs[0]);
    const bool fits = (to == DType::Int64) || (to == DType::Int32 && *std::max_element(shape.begin(), shape.end()) <= (int64_t{1} << 31));
    if (k && is_integer(from) && fits) return k;
    return std::nullopt;
  }
  if (p->primitive == &lax::broadcast_in_dim_p) {
    std::optional<int64_t> k = position_dim(p->inputs.at(0));
    if (!k) return std::nullopt;
    return p->params.get_ints("broadcast_dimensions").at(static_cast<size_t>(*k));
  }
  if (p->primitive == &lax::reshape_p || p->primitive == &lax::expand_dims_p || p->primitive == &lax::squeeze_p) {
    // Only unit dims come or go: the position dim is the same among the others.
    const Shape& from = p->inputs.at(0).aval().shape;
    std::optional<int64_t> k = position_dim(p->inputs[0]);
    if (!k || from[static_cast<size_t>(*k)] == 1) return std::nullopt;
    std::vector<int64_t> from_dims, to_dims;
    for (size_t d = 0; d < from.size(); ++d)
      if (from[d] != 1) from_dims.push_back(static_cast<int64_t>(d));
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1) to_dims.push_back(static_cast<int64_t>(d));
    if (from_dims.size() != to_dims.size()) return std::nullopt;
    for (size_t i = 0; i < from_dims.size(); ++i) {
      if (from[static_cast<size_t>(from_dims[i])] != shape[static_cast<size_t>(to_dims[i])]) return std::nullopt;
      if (from_dims[i] == *k) return to_dims[i];
    }
    return std::nullopt;
  }
  if (p->primitive == &lax::add_p && is_splat(p->inputs.at(1), 0)) return position_dim(p->inputs[0]);
  if (p->primitive == &lax::mul_p && is_splat(p->inputs.at(1), 1)) return position_dim(p->inputs[0]);
  if (p->primitive == &lax::select_n_p && p->inputs.size() == 3) {
    // select_n(x < 0, x, x + n): x, where x is a position (never negative).
    const Equation* negative = producer(p->inputs[0]);
    if (negative && negative->primitive == &lax::lt_p && same_atom(negative->inputs.at(0), p->inputs[1]) &&
        is_splat(negative->inputs.at(1), 0))
      return position_dim(p->inputs[1]);
  }
  return std::nullopt;
}

}  // namespace jx::compiler
