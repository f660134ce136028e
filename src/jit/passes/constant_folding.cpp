// Folding evaluates with Primitive::eval (the eager CPU kernels), so a folded value is
// exactly what eager jx computes. It runs with no trace current: the pipeline may run
// while a transformation is tracing (jit under grad), and a call's body must still be
// evaluated, not staged.
//
// What is not folded, with the reason noted in the dump:
//  - side-effecting equations;
//  - results larger than kMaxFoldedElements;
//  - results larger than every operand (iota, broadcast_in_dim, outer products): folding
//    them trades a cheap generator, which fusion turns into a few instructions, for a
//    constant array held in memory (XLA's folder refuses broadcast and iota likewise).
// A 0-d constvar is replaced by a literal of its value, so later rules (simplify) and
// codegen see the number itself. An elementwise equation whose operands are all splats
// (a broadcast_in_dim of a 0-d literal) is a splat of its value on those scalars: it
// becomes a broadcast_in_dim of that literal, which fusion recomputes wherever it is read
// (an add of two splats was an array of the row's shape written out for two readers).
#include "jit/passes/constant_folding.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "core/array_internal.h"
#include "jit/passes/rewrite.h"
#include "jx/error.h"
#include "lax/primitives.h"
#include "transforms/effects.h"

namespace jx::compiler {
namespace {

// A 0-d value in its own fresh buffer: a literal must not keep a large array alive
// through a view of one of its elements.
Array own_scalar(const Array& x) {
  Array out = detail::alloc_array(x.aval());
  std::memcpy(detail::mutable_data<char>(out), detail::raw_data(x), static_cast<size_t>(x.itemsize()));
  return out;
}

std::string avals_text(const std::vector<Var>& vars) {
  std::string s;
  for (const Var& v : vars) s += (s.empty() ? "" : ", ") + v.aval.str();
  return s;
}

// An elementwise equation of splats (a 0-d literal, or a broadcast of one in `splats`)
// with a result of one or more dims, as a broadcast of its value on the scalars.
std::optional<Equation> splat_of_splats(const Equation& e, const std::unordered_map<int64_t, Array>& splats,
                                        PassContext& ctx) {
  if (!e.primitive->has(kElementwise) || e.outputs.size() != 1 || e.outputs[0].aval.ndim() == 0) return std::nullopt;
  std::vector<Array> scalars;
  for (const Atom& a : e.inputs) {
    if (!a.is_var()) {
      if (a.literal().value.ndim() != 0) return std::nullopt;
      scalars.push_back(a.literal().value);
      continue;
    }
    auto it = splats.find(a.var().id);
    if (it == splats.end()) return std::nullopt;
    scalars.push_back(it->second);
  }
  const Aval& out = e.outputs[0].aval;
  std::vector<Array> results;
  try {
    results = e.primitive->eval(scalars, e.params);
  } catch (const Error&) {
    return std::nullopt;  // left to run (and raise) at run time
  }
  if (results.size() != 1 || !results[0].valid() || !results[0].is_concrete() ||
      !(results[0].aval() == Aval{{}, out.dtype, out.weak_type}))
    return std::nullopt;
  if (ctx.records_notes()) ctx.note(detail::cat("folded: ", e.primitive->name(), " of splats giving ", out.str(), " as a splat"));
  return Equation{&lax::broadcast_in_dim_p, {Atom(Literal{own_scalar(results[0])})}, e.outputs,
                  Params{{"shape", out.shape}, {"broadcast_dimensions", std::vector<int64_t>{}}}};
}

}  // namespace

bool fold_constants(ClosedJaxpr& program, PassContext& ctx) {
  Jaxpr& j = program.jaxpr;
  detail::TraceScope eager(nullptr);
  bool changed = false;
  Substitution subst;

  // Known values: constvars (when the program is closed) and what this sweep folds.
  std::unordered_map<int64_t, Array> known;
  const bool closed = program.consts.size() == j.constvars.size();
  if (closed) {
    for (size_t i = 0; i < j.constvars.size(); ++i) {
      const Var& v = j.constvars[i];
      if (v.aval.ndim() == 0) {
        subst.map(v, Literal{own_scalar(program.consts[i])});
        changed = true;
      } else {
        known.emplace(v.id, program.consts[i]);
      }
    }
  }

  // Variables that are a broadcast of a 0-d literal, by id: that literal's value.
  std::unordered_map<int64_t, Array> splats;
  std::vector<Equation> kept;
  kept.reserve(j.eqns.size());
  for (Equation& e : j.eqns) {
    subst.apply_to_inputs(e);
    if (!detail::compile_time_evaluable(e) || e.primitive == &lax::optimization_barrier_p) {
      kept.push_back(std::move(e));
      continue;
    }
    if (e.primitive == &lax::broadcast_in_dim_p && !e.inputs.at(0).is_var())
      splats.emplace(e.outputs.at(0).id, e.inputs[0].literal().value);  // (not folded itself: below)
    if (std::optional<Equation> splat = splat_of_splats(e, splats, ctx)) {
      splats.emplace(e.outputs.at(0).id, splat->inputs.at(0).literal().value);
      kept.push_back(std::move(*splat));
      changed = true;
      continue;
    }
    std::vector<Array> values;
    int64_t largest_operand = 1;
    for (const Atom& a : e.inputs) {
      if (!a.is_var()) {
        values.push_back(a.literal().value);
      } else if (auto it = known.find(a.var().id); it != known.end()) {
        values.push_back(it->second);
        largest_operand = std::max(largest_operand, it->second.size());
      } else {
        break;
      }
    }
    if (values.size() != e.inputs.size()) {
      kept.push_back(std::move(e));
      continue;
    }

    int64_t result_elements = 0;
    bool all_scalar = true;
    for (const Var& v : e.outputs) {
      result_elements += v.aval.size();
      all_scalar = all_scalar && v.aval.ndim() == 0;
    }
    const std::string what = e.primitive->name() + " giving " + avals_text(e.outputs);
    if (!all_scalar && !closed) {  // a new constvar needs a value beside it
      kept.push_back(std::move(e));
      continue;
    }
    if (!all_scalar && result_elements > kMaxFoldedElements) {
      ctx.note(detail::cat("not folded: ", what, " has ", result_elements, " elements (more than ",
                           kMaxFoldedElements, "): the constant would bloat the program"));
      kept.push_back(std::move(e));
      continue;
    }
    if (!all_scalar && result_elements > largest_operand) {
      ctx.note(detail::cat("not folded: ", what, " is larger than its operands (", result_elements, " > ",
                           largest_operand, " elements): cheaper to compute at run time than to hold"));
      kept.push_back(std::move(e));
      continue;
    }

    std::vector<Array> results;
    try {
      results = e.primitive->eval(values, e.params);
    } catch (const Error& err) {
      ctx.note(detail::cat("not folded: ", what, ": evaluating it failed: ", err.what()));
      kept.push_back(std::move(e));
      continue;
    }
    bool types_match = results.size() == e.outputs.size();
    for (size_t i = 0; types_match && i < results.size(); ++i)
      types_match = results[i].valid() && results[i].is_concrete() && results[i].aval() == e.outputs[i].aval;
    if (!types_match) {
      ctx.note(detail::cat("not folded: ", what, ": its evaluation gave other types than the equation declares"));
      kept.push_back(std::move(e));
      continue;
    }

    for (size_t i = 0; i < results.size(); ++i) {
      const Var& out = e.outputs[i];
      if (out.aval.ndim() == 0) {
        subst.map(out, Literal{own_scalar(results[i])});
      } else {
        // Folded constants are contiguous: a view could keep a larger operand alive.
        Array value = detail::contiguous(results[i]);
        Var c = ctx.fresh_var(out.aval);
        j.constvars.push_back(c);
        program.consts.push_back(value);
        known.emplace(c.id, value);
        subst.map(out, c);
      }
    }
    changed = true;
  }
  j.eqns = std::move(kept);
  subst.apply_to_outvars(j);
  return changed;
}

const Pass kConstantFoldingPass{"constant_folding", &fold_constants};

}  // namespace jx::compiler
