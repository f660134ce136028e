#include "jit/passes/one_hot_sums.h"

#include <map>
#include <optional>

#include "jit/passes/inline_calls.h"
#include "jit/passes/positions.h"
#include "jx/error.h"
#include "jx/lax.h"
#include "jx/transforms.h"
#include "lax/primitives.h"

namespace jx::compiler {
namespace {

// A neg chain longer than this between the select and the sum is left alone.
constexpr int kMaxNegs = 8;

// A reduce_sum whose operand is a one-hot row along `axis`: select_n(position == index,
// zero, value), under `negs` negations.
struct OneHot {
  int64_t axis = 0;
  Atom index, value;
  int negs = 0;
};

class Matcher {
 public:
  explicit Matcher(const std::vector<Equation>& eqns) : positions_(eqns) {}

  std::optional<OneHot> one_hot(const Equation& e) {
    if (e.primitive != &lax::reduce_sum_p) return std::nullopt;
    Atom x = e.inputs.at(0);
    const DType dtype = x.aval().dtype;
    if (!is_floating(dtype) && !is_integer(dtype)) return std::nullopt;
    int negs = 0;
    for (const Equation* p = positions_.producer(x); p && p->primitive == &lax::neg_p && negs < kMaxNegs;
         p = positions_.producer(x)) {
      x = p->inputs.at(0);
      ++negs;
    }
    const Equation* select = positions_.producer(x);
    if (!select || select->primitive != &lax::select_n_p || select->inputs.size() != 3 || !is_zero(select->inputs[1]))
      return std::nullopt;
    const Equation* compare = positions_.producer(select->inputs[0]);
    if (!compare || compare->primitive != &lax::eq_p) return std::nullopt;
    for (int64_t axis : e.params.get_ints("axes"))
      for (size_t side = 0; side < 2; ++side) {
        const Atom& index = compare->inputs.at(1 - side);
        if (positions_.position_dim(compare->inputs[side]) == axis && is_integer(index.aval().dtype) &&
            constant_along(index, axis) && constant_along(select->inputs[2], axis))
          return OneHot{axis, index, select->inputs[2], negs};
      }
    return std::nullopt;
  }

 private:
  // A literal zero (either sign), or a broadcast of one.
  bool is_zero(const Atom& a) const {
    if (!a.is_var()) return a.literal().value.astype(DType::Float64).item<double>() == 0.0;
    const Equation* p = positions_.producer(a);
    return p && p->primitive == &lax::broadcast_in_dim_p && is_zero(p->inputs.at(0));
  }

  // Whether every row of `a` along `axis` holds one value: a literal, a broadcast that
  // does not map an operand dim of size > 1 onto the axis, or an elementwise op of such.
  // Memoized by variable and axis: linear in the program.
  bool constant_along(const Atom& a, int64_t axis) {
    if (!a.is_var()) return true;
    const std::pair<int64_t, int64_t> key{a.var().id, axis};
    if (auto memo = constant_.find(key); memo != constant_.end()) return memo->second;
    constant_[key] = false;  // (a program is a DAG: no cycle reaches this entry again)
    bool constant = false;
    if (const Equation* p = positions_.producer(a)) {
      if (p->primitive == &lax::broadcast_in_dim_p) {
        const std::vector<int64_t>& dims = p->params.get_ints("broadcast_dimensions");
        const Shape& from = p->inputs.at(0).aval().shape;
        constant = true;
        for (size_t i = 0; i < dims.size(); ++i) constant = constant && (dims[i] != axis || from[i] == 1);
      } else if (p->primitive->has(kElementwise) && p->outputs.size() == 1) {
        constant = true;
        for (const Atom& operand : p->inputs) constant = constant && constant_along(operand, axis);
      }
    }
    return constant_[key] = constant;
  }

  Positions positions_;
  std::map<std::pair<int64_t, int64_t>, bool> constant_;  // (variable, axis) -> constant along it
};

Array splat(double value, const Aval& like) {
  return lax::broadcast_in_dim(Array(value).astype(like.dtype), like.shape, {});
}

// The sum, as lax code over (index, value), both of the select's shape.
ClosedJaxpr sum_program(const Equation& e, const OneHot& h) {
  const std::vector<int64_t> axes = e.params.get_ints("axes");
  const int64_t axis = h.axis;
  const int negs = h.negs;
  detail::FlatFn sum = [=](std::span<const Array> in) {
    const Shape& shape = in[0].shape();
    std::vector<int64_t> start(shape.size(), 0), limit(shape.begin(), shape.end());
    limit[static_cast<size_t>(axis)] = 1;
    // Each row's index and value, at the row's first position (the same at every one).
    Array index = lax::squeeze(lax::slice(in[0], start, limit), {axis});
    Array value = lax::squeeze(lax::slice(in[1], start, limit), {axis});
    for (int k = 0; k < negs; ++k) value = lax::neg(value);
    if (is_floating(value.dtype())) value = lax::add(value, splat(0, value.aval()));  // -0.0 as the sum has it
    const Aval ia = index.aval();
    const double size = static_cast<double>(shape[static_cast<size_t>(axis)]);
    Array inside = lax::bitwise_and(lax::ge(index, splat(0, ia)), lax::lt(index, splat(size, ia)));
    Array out = lax::select_n(inside, {splat(0, value.aval()), value});
    std::vector<int64_t> rest;
    for (int64_t d : axes)
      if (d != axis) rest.push_back(d > axis ? d - 1 : d);
    if (!rest.empty()) out = lax::reduce_sum(out, rest);
    return std::vector<Array>{out};
  };
  const std::vector<Aval> avals{h.index.aval(), h.value.aval()};
  return detail::make_jaxpr_flat(sum, avals);
}

}  // namespace

bool one_hot_sums(ClosedJaxpr& program, PassContext& ctx) {
  Matcher matcher(program.jaxpr.eqns);
  std::vector<std::optional<Replacement>> replaced;
  for (const Equation& e : program.jaxpr.eqns) {
    std::optional<OneHot> h = matcher.one_hot(e);
    if (!h) {
      replaced.emplace_back();
      continue;
    }
    if (ctx.records_notes())
      ctx.note(detail::cat("a sum along axis ", h->axis, " of a one-hot ", e.inputs[0].aval().str(),
                           " as its one value"));
    replaced.push_back(Replacement{sum_program(e, *h), {h->index, h->value}});
  }
  return splice_replacements(program, std::move(replaced), ctx);
}

const Pass kOneHotSumsPass{"one_hot_sums", &one_hot_sums};

}  // namespace jx::compiler
