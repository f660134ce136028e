// The rules, as patterns (x: any operand; 0, 1: a literal, or broadcast_in_dim of one):
//
//   mul x 1, mul 1 x, div x 1            -> x      exact for every dtype (NaN, inf, -0 included)
//   add x -0.0, add -0.0 x, sub x 0.0    -> x      exact: x + (-0) is x for every x
//   add x 0 (integers)                   -> x      floats keep it: -0.0 + 0.0 is +0.0, not -0.0
//   neg (neg x)                          -> x
//   reshape (reshape|squeeze|expand_dims x) -> reshape x   all three keep row-major order
//   transpose (transpose x)              -> transpose x with the composed permutation
//   transpose x by the identity          -> x
//   dot_general a b contracting nothing (an outer product) -> mul of a and b broadcast
//                                                  to the product's shape: exact (each
//                                                  element is one product), and it fuses
//                                                  with its neighbours as elementwise work
//   transpose (dot_general a b) swapping its two free axes -> dot_general b a
//                                                  when the product has no other reader (so
//                                                  the dot kernel writes the transposed
//                                                  product and an epilogue can follow it)
//   broadcast_in_dim (broadcast_in_dim x) -> one broadcast_in_dim
//   slice (broadcast_in_dim x), x's dims of size 1 or sliced whole -> broadcast_in_dim x
//   reshape, squeeze, expand_dims, broadcast_in_dim, convert_element_type to x's own type -> x
//   select_n p a b ... with a literal p  -> the case it selects
//   select_n p x x ...                   -> x
//   checkpoint_name x                    -> x      names matter only to checkpoint's partial
//                                                  evaluation, done before jit compiles
//
// A rule replacing an equation by an operand does so only when the operand's type is the
// output's exactly (weak_type included): a weakly typed x * 1.0:f32 is strongly typed,
// and its uses were verified with that type. Rules that read an operand's producer see
// equations already simplified, so chains collapse in one sweep.
#include "jit/passes/simplify.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <variant>

#include "jit/passes/rewrite.h"
#include "jx/error.h"
#include "lax/primitives.h"

namespace jx::compiler {
namespace {

// What a rule turns an equation into: an existing atom (the equation is dropped) or a
// cheaper equation with the same outputs.
using Rewrite = std::variant<Atom, Equation>;

class Producers {
 public:
  // uses: how many times each variable is read (by equations and as an output), counted
  // before the sweep.
  Producers(const std::vector<Equation>& eqns, std::unordered_map<int64_t, int> uses)
      : eqns_(eqns), uses_(std::move(uses)) {}
  int uses(const Var& v) const {
    auto it = uses_.find(v.id);
    return it == uses_.end() ? 0 : it->second;
  }
  void add(size_t index) {
    for (const Var& v : eqns_[index].outputs) by_var_[v.id] = index;
  }
  // The equation defining `a` (nullptr for literals, inputs and constvars).
  const Equation* of(const Atom& a) const {
    if (!a.is_var()) return nullptr;
    auto it = by_var_.find(a.var().id);
    return it == by_var_.end() ? nullptr : &eqns_[it->second];
  }

 private:
  const std::vector<Equation>& eqns_;
  std::unordered_map<int64_t, size_t> by_var_;
  std::unordered_map<int64_t, int> uses_;
};

// Patterns match primitives by identity (lax/primitives.h), never by name.
bool is(const Equation& e, const Primitive& p) { return e.primitive == &p; }
bool is(const Equation* e, const Primitive& p) { return e && is(*e, p); }

// The scalar every element of `a` equals, when that is known from the text: a literal,
// or a broadcast_in_dim of one (how lax writes `x * 1.0` for an array x).
std::optional<Array> splat_value(const Atom& a, const Producers& producers) {
  if (!a.is_var()) return a.literal().value;
  const Equation* p = producers.of(a);
  if (is(p, lax::broadcast_in_dim_p)) return splat_value(p->inputs.at(0), producers);
  return std::nullopt;
}

complex128_t complex_value(const Array& scalar) {
  complex128_t c;
  scalar.copy_to(&c, DType::Complex128);
  return c;
}

bool exact_dtype(DType d) { return is_bool(d) || is_integer(d); }

bool is_one(const Array& v) { return complex_value(v) == complex128_t(1.0, 0.0); }

// Is `v` a zero that leaves x unchanged when added (negative) or subtracted (positive)?
bool is_signed_zero(const Array& v, bool negative) {
  complex128_t c = complex_value(v);
  if (c != complex128_t(0.0, 0.0)) return false;
  if (exact_dtype(v.dtype())) return true;
  bool imag_ok = !is_complex(v.dtype()) || std::signbit(c.imag()) == negative;
  return std::signbit(c.real()) == negative && imag_ok;
}

// Replaces e by `x` when x has e's output type exactly.
std::optional<Rewrite> forward(const Equation& e, const Atom& x) {
  if (e.outputs.size() != 1 || !(x.aval() == e.outputs[0].aval)) return std::nullopt;
  return Rewrite{x};
}

// ---- arithmetic identities ----

// For a binary equation, forwards operand `keep` when the other operand is a splat
// satisfying `identity`.
template <class Pred>
std::optional<Rewrite> forward_if_other_is(const Equation& e, size_t keep, const Producers& producers,
                                           Pred identity) {
  std::optional<Array> other = splat_value(e.inputs.at(1 - keep), producers);
  if (!other || !identity(*other)) return std::nullopt;
  return forward(e, e.inputs[keep]);
}

std::optional<Rewrite> multiply_by_one(const Equation& e, const Producers& producers) {
  if (!is(e, lax::mul_p) || e.inputs.size() != 2) return std::nullopt;
  if (auto r = forward_if_other_is(e, 0, producers, is_one)) return r;
  return forward_if_other_is(e, 1, producers, is_one);
}

std::optional<Rewrite> divide_by_one(const Equation& e, const Producers& producers) {
  if (!is(e, lax::div_p) || e.inputs.size() != 2) return std::nullopt;
  return forward_if_other_is(e, 0, producers, is_one);
}

std::optional<Rewrite> add_zero(const Equation& e, const Producers& producers) {
  if (!is(e, lax::add_p) || e.inputs.size() != 2) return std::nullopt;
  auto negative_zero = [](const Array& v) { return is_signed_zero(v, /*negative=*/true); };
  if (auto r = forward_if_other_is(e, 0, producers, negative_zero)) return r;
  return forward_if_other_is(e, 1, producers, negative_zero);
}

std::optional<Rewrite> subtract_zero(const Equation& e, const Producers& producers) {
  if (!is(e, lax::sub_p) || e.inputs.size() != 2) return std::nullopt;
  return forward_if_other_is(e, 0, producers, [](const Array& v) { return is_signed_zero(v, false); });
}

std::optional<Rewrite> double_negation(const Equation& e, const Producers& producers) {
  if (!is(e, lax::neg_p)) return std::nullopt;
  const Equation* p = producers.of(e.inputs.at(0));
  if (!is(p, lax::neg_p)) return std::nullopt;
  return forward(e, p->inputs.at(0));
}

// ---- shape operations ----

// reshape, squeeze, expand_dims, broadcast_in_dim and convert_element_type are the
// identity when the output type is the operand's (a same-rank broadcast_in_dim has
// increasing dimensions, so the identity map; a same-type convert changes nothing).
std::optional<Rewrite> no_op_shape_or_type_change(const Equation& e, const Producers&) {
  if (!(is(e, lax::reshape_p) || is(e, lax::squeeze_p) || is(e, lax::expand_dims_p) || is(e, lax::broadcast_in_dim_p) ||
        is(e, lax::convert_element_type_p)))
    return std::nullopt;
  return forward(e, e.inputs.at(0));
}

std::optional<Rewrite> reshape_of_reshape(const Equation& e, const Producers& producers) {
  if (!is(e, lax::reshape_p)) return std::nullopt;
  const Equation* p = producers.of(e.inputs.at(0));
  if (!(is(p, lax::reshape_p) || is(p, lax::squeeze_p) || is(p, lax::expand_dims_p))) return std::nullopt;
  Equation merged = e;
  merged.inputs = {p->inputs.at(0)};
  return Rewrite{std::move(merged)};
}

bool is_identity_permutation(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

std::optional<Rewrite> identity_transpose(const Equation& e, const Producers&) {
  if (!is(e, lax::transpose_p) || !is_identity_permutation(e.params.get_ints("permutation"))) return std::nullopt;
  return forward(e, e.inputs.at(0));
}

// out = transpose(y, p2), y = transpose(x, p1): out's axis k is y's axis p2[k], which is
// x's axis p1[p2[k]].
std::optional<Rewrite> transpose_of_transpose(const Equation& e, const Producers& producers) {
  if (!is(e, lax::transpose_p)) return std::nullopt;
  const Equation* p = producers.of(e.inputs.at(0));
  if (!is(p, lax::transpose_p)) return std::nullopt;
  const auto& p1 = p->params.get_ints("permutation");
  const auto& p2 = e.params.get_ints("permutation");
  std::vector<int64_t> composed;
  for (int64_t k : p2) composed.push_back(p1.at(static_cast<size_t>(k)));
  Equation merged = e;
  merged.inputs = {p->inputs.at(0)};
  merged.params.set("permutation", composed);
  return Rewrite{std::move(merged)};
}

// dot_general's output axes are (lhs free..., rhs free...): with one free axis a side and
// no batch axes, its transpose is the product with the operands swapped.
std::optional<Rewrite> transpose_of_product(const Equation& e, const Producers& producers) {
  if (!is(e, lax::transpose_p) || e.params.get_ints("permutation") != std::vector<int64_t>{1, 0}) return std::nullopt;
  const Equation* p = producers.of(e.inputs.at(0));
  if (!is(p, lax::dot_general_p) || producers.uses(p->outputs.at(0)) != 1) return std::nullopt;
  const auto& lc = p->params.get_ints("lhs_contracting_dimensions");
  const auto& rc = p->params.get_ints("rhs_contracting_dimensions");
  if (!p->params.get_ints("lhs_batch_dimensions").empty() || !p->params.get_ints("rhs_batch_dimensions").empty() ||
      p->inputs.at(0).aval().ndim() - static_cast<int64_t>(lc.size()) != 1 ||
      p->inputs.at(1).aval().ndim() - static_cast<int64_t>(rc.size()) != 1)
    return std::nullopt;
  Equation swapped = *p;
  swapped.inputs = {p->inputs[1], p->inputs[0]};
  swapped.params.set("lhs_contracting_dimensions", rc);
  swapped.params.set("rhs_contracting_dimensions", lc);
  swapped.outputs = e.outputs;
  return Rewrite{std::move(swapped)};
}

// out = bid(y, s2, d2), y = bid(x, s1, d1): x's axis i lands on y's axis d1[i], which
// lands on out's axis d2[d1[i]]; a size-1 axis of x stretches either way.
std::optional<Rewrite> broadcast_of_broadcast(const Equation& e, const Producers& producers) {
  if (!is(e, lax::broadcast_in_dim_p)) return std::nullopt;
  const Equation* p = producers.of(e.inputs.at(0));
  if (!is(p, lax::broadcast_in_dim_p)) return std::nullopt;
  const auto& d1 = p->params.get_ints("broadcast_dimensions");
  const auto& d2 = e.params.get_ints("broadcast_dimensions");
  std::vector<int64_t> composed;
  for (int64_t d : d1) composed.push_back(d2.at(static_cast<size_t>(d)));
  Equation merged = e;
  merged.inputs = {p->inputs.at(0)};
  merged.params.set("broadcast_dimensions", composed);
  return Rewrite{std::move(merged)};
}

// out = slice(bid(x, s, d)): each element of out is x at the position its own maps to,
// so out = bid(x, out's shape, d) when every dim of x is either size 1 or taken whole
// by the slice (a one-hot sum's index row, sliced out of its broadcast).
std::optional<Rewrite> slice_of_broadcast(const Equation& e, const Producers& producers) {
  if (!is(e, lax::slice_p)) return std::nullopt;
  const Equation* p = producers.of(e.inputs.at(0));
  if (!is(p, lax::broadcast_in_dim_p)) return std::nullopt;
  const auto& dims = p->params.get_ints("broadcast_dimensions");
  const Shape& from = p->inputs.at(0).aval().shape;
  const Shape& to = p->outputs.at(0).aval.shape;
  const auto& start = e.params.get_ints("start_indices");
  const auto& limit = e.params.get_ints("limit_indices");
  const auto& strides = e.params.get_ints("strides");
  for (size_t i = 0; i < dims.size(); ++i) {
    const auto d = static_cast<size_t>(dims[i]);
    const bool whole = start.at(d) == 0 && limit.at(d) == to.at(d) && (strides.empty() || strides.at(d) == 1);
    if (from[i] != 1 && !whole) return std::nullopt;
  }
  return Rewrite{Equation{&lax::broadcast_in_dim_p, {p->inputs.at(0)}, e.outputs,
                          Params{{"shape", e.outputs.at(0).aval.shape}, {"broadcast_dimensions", dims}}}};
}

// ---- select_n ----

// A literal predicate selects one case everywhere (integers clamp as select_n does).
std::optional<Rewrite> select_with_literal_predicate(const Equation& e, const Producers&) {
  if (!is(e, lax::select_n_p) || e.inputs.size() < 2 || e.inputs[0].is_var()) return std::nullopt;
  const Array& which = e.inputs[0].literal().value;
  const auto num_cases = static_cast<int64_t>(e.inputs.size() - 1);
  int64_t k = 0;
  if (is_bool(which.dtype())) {
    k = which.item<bool>() ? 1 : 0;
  } else if (is_integer(which.dtype())) {
    auto w = which.item<int64_t>();  // every integer dtype (at most uint32 unsigned) fits
    k = w <= 0 ? 0 : std::min(w, num_cases - 1);
  } else {
    return std::nullopt;
  }
  return forward(e, e.inputs[static_cast<size_t>(1 + k)]);
}

std::optional<Rewrite> select_between_equal_cases(const Equation& e, const Producers&) {
  if (!is(e, lax::select_n_p) || e.inputs.size() < 2) return std::nullopt;
  for (size_t i = 2; i < e.inputs.size(); ++i)
    if (!same_atom(e.inputs[i], e.inputs[1])) return std::nullopt;
  return forward(e, e.inputs[1]);
}

std::optional<Rewrite> drop_checkpoint_name(const Equation& e, const Producers&) {
  if (!is(e, lax::checkpoint_name_p)) return std::nullopt;
  return forward(e, e.inputs[0]);
}

// ---- products ----

// An outer product as equations: two broadcasts and a mul, writing e's output (whose axes
// are a's, then b's). Only when the mul gives e's output type exactly.
std::optional<std::vector<Equation>> outer_product_as_multiply(const Equation& e, PassContext& ctx) {
  if (!is(e, lax::dot_general_p) || !e.params.get_ints("lhs_contracting_dimensions").empty() ||
      !e.params.get_ints("lhs_batch_dimensions").empty())
    return std::nullopt;
  const Aval& a = e.inputs.at(0).aval();
  const Aval& b = e.inputs.at(1).aval();
  const Aval& out = e.outputs.at(0).aval;
  if (a.dtype != out.dtype || b.dtype != out.dtype || (a.weak_type && b.weak_type) != out.weak_type)
    return std::nullopt;
  std::vector<Equation> eqns;
  std::vector<Atom> spread;
  for (int side = 0; side < 2; ++side) {
    const Aval& x = side ? b : a;
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < x.ndim(); ++d) dims.push_back(side ? a.ndim() + d : d);
    Var v = ctx.fresh_var(Aval{out.shape, x.dtype, x.weak_type});
    eqns.push_back(Equation{&lax::broadcast_in_dim_p, {e.inputs[static_cast<size_t>(side)]}, {v},
                            Params{{"shape", out.shape}, {"broadcast_dimensions", dims}}});
    spread.push_back(Atom(v));
  }
  eqns.push_back(Equation{&lax::mul_p, spread, e.outputs, Params{}});
  return eqns;
}

using Rule = std::optional<Rewrite> (*)(const Equation&, const Producers&);
constexpr Rule kRules[] = {
    multiply_by_one,         divide_by_one,        add_zero,
    subtract_zero,           double_negation,      no_op_shape_or_type_change,
    reshape_of_reshape,      identity_transpose,   transpose_of_transpose,
    transpose_of_product,
    broadcast_of_broadcast,  slice_of_broadcast,   select_with_literal_predicate, select_between_equal_cases,
    drop_checkpoint_name,
};

}  // namespace

bool simplify(ClosedJaxpr& program, PassContext& ctx) {
  Jaxpr& j = program.jaxpr;
  bool changed = false;
  Substitution subst;
  std::vector<Equation> kept;
  kept.reserve(j.eqns.size());
  std::unordered_map<int64_t, int> uses;
  for (const Equation& e : j.eqns)
    for (const Atom& a : e.inputs)
      if (a.is_var()) ++uses[a.var().id];
  for (const Atom& a : j.outvars)
    if (a.is_var()) ++uses[a.var().id];
  Producers producers(kept, std::move(uses));
  for (Equation& e : j.eqns) {
    subst.apply_to_inputs(e);
    bool dropped = false;
    // A rewritten equation may match another rule (reshape of reshape to x's own shape
    // is then the identity); each rewrite removes a producer, so this ends.
    for (bool again = true; again && !dropped;) {
      again = false;
      if (!e.primitive || e.primitive->has(kSideEffects)) break;
      for (Rule rule : kRules) {
        std::optional<Rewrite> r = rule(e, producers);
        if (!r) continue;
        changed = true;
        if (auto* atom = std::get_if<Atom>(&*r)) {
          subst.map(e.outputs.at(0), *atom);
          dropped = true;
        } else {
          e = std::get<Equation>(std::move(*r));
          again = true;
        }
        break;
      }
    }
    if (dropped) continue;
    if (std::optional<std::vector<Equation>> expanded = outer_product_as_multiply(e, ctx)) {
      changed = true;
      for (Equation& x : *expanded) {
        kept.push_back(std::move(x));
        producers.add(kept.size() - 1);
      }
      continue;
    }
    kept.push_back(std::move(e));
    producers.add(kept.size() - 1);
  }
  j.eqns = std::move(kept);
  subst.apply_to_outvars(j);
  return changed;
}

const Pass kSimplifyPass{"simplify", &simplify};

}  // namespace jx::compiler
