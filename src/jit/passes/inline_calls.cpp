// A call is any primitive with the trait kCall (closed_call, jit, linear_jit,
// custom_jvp_call, fusion): its `jaxpr` param is the body that runs, once. Other
// primitives holding sub-programs (control flow) are not calls and stay. custom_jvp_call (jnp's
// functions with JAX's derivative rules) is inlined too: by the time a program is
// optimized every derivative has been taken, so only its `jaxpr` (the function) runs.
//
// A body may share ids with its caller (it was traced on its own), so every variable it
// defines gets a fresh id from the PassContext. The call's rule compares operand and
// body-input types without weak_type; where they differ, a convert_element_type to the
// body's exact type is inserted, so the spliced equations keep the types they were
// verified with. A body with constvars (a jit body may hold consts) brings them along as
// new constvars of the caller.
#include "jit/passes/inline_calls.h"

#include <span>
#include <unordered_map>

#include "jit/passes/rewrite.h"
#include "jx/error.h"
#include "lax/primitives.h"

namespace jx::compiler {
namespace {

class Inliner {
 public:
  Inliner(ClosedJaxpr& program, PassContext& ctx)
      : program_(program),
        ctx_(ctx),
        convert_(&lax::convert_element_type_p) {}

  bool is_call(const Equation& e) const {
    return e.primitive && e.primitive->has(kCall) && e.params.has("jaxpr") &&
           e.params.get_jaxpr("jaxpr") != nullptr;
  }

  // Appends `e` to `out`, or, for a call, its body with every nested call expanded.
  // `caller_subst` renames the uses in the caller's later equations.
  void emit(Equation e, std::vector<Equation>& out, Substitution& caller_subst) {
    if (!is_call(e)) {
      out.push_back(std::move(e));
      return;
    }
    ++inlined_;
    const ClosedJaxpr& body = *e.params.get_jaxpr("jaxpr");
    const Jaxpr& b = body.jaxpr;
    if (b.invars.size() != e.inputs.size() || b.outvars.size() != e.outputs.size())
      detail::fail("inline_calls", "call of '", e.params.has("name") ? e.params.get_string("name") : "?",
                   "' has ", e.inputs.size(), " operands and ", e.outputs.size(), " outputs, its body takes ",
                   b.invars.size(), " and gives ", b.outvars.size());
    std::vector<Aval> result_avals;
    for (const Var& v : e.outputs) result_avals.push_back(v.aval);
    std::vector<Atom> results = splice(body, e.inputs, result_avals, out);
    for (size_t i = 0; i < e.outputs.size(); ++i) caller_subst.map(e.outputs[i], results[i]);
  }

  // `body` applied to `operands`, its equations appended to `out`; returns the atoms
  // holding its outputs, of the types `result_avals`.
  std::vector<Atom> splice(const ClosedJaxpr& body, const std::vector<Atom>& operands,
                           std::span<const Aval> result_avals, std::vector<Equation>& out) {
    const Jaxpr& b = body.jaxpr;
    Substitution body_subst;  // body variable -> caller atom
    for (size_t i = 0; i < b.constvars.size(); ++i) {
      if (body.consts.size() != b.constvars.size())
        detail::fail("inline_calls", "a body has ", b.constvars.size(), " constvars but ", body.consts.size(),
                     " values");
      Var c = ctx_.fresh_var(b.constvars[i].aval);
      program_.jaxpr.constvars.push_back(c);
      program_.consts.push_back(body.consts[i]);
      body_subst.map(b.constvars[i], c);
    }
    for (size_t i = 0; i < b.invars.size(); ++i) {
      const Var& param = b.invars[i];
      const Atom& operand = operands.at(i);
      if (operand.aval() == param.aval) {
        body_subst.map(param, operand);
        continue;
      }
      Var converted = ctx_.fresh_var(param.aval);
      out.push_back(convert(operand, converted));
      body_subst.map(param, converted);
    }
    for (const Equation& inner : b.eqns) {
      Equation copy = inner;
      body_subst.apply_to_inputs(copy);
      // A nested call maps its own outputs (body ids) to what its body computes.
      if (!is_call(copy)) {
        for (Var& v : copy.outputs) {
          Var fresh = ctx_.fresh_var(v.aval);
          body_subst.map(v, fresh);
          v = fresh;
        }
      }
      emit(std::move(copy), out, body_subst);
    }
    std::vector<Atom> results;
    for (size_t i = 0; i < b.outvars.size(); ++i) {
      Atom result = body_subst.apply(b.outvars[i]);
      if (!(result.aval() == result_avals[i])) {
        Var converted = ctx_.fresh_var(result_avals[i]);
        out.push_back(convert(result, converted));
        result = converted;
      }
      results.push_back(std::move(result));
    }
    return results;
  }

  int inlined() const { return inlined_; }

 private:
  // `to` = x converted to to's exact type (shape and dtype already agree: only weak_type differs).
  Equation convert(const Atom& x, const Var& to) const {
    return Equation{convert_, {x}, {to}, Params{{"new_dtype", to.aval.dtype}, {"weak_type", to.aval.weak_type}}};
  }

  ClosedJaxpr& program_;
  PassContext& ctx_;
  const Primitive* convert_;
  int inlined_ = 0;
};

}  // namespace

bool inline_calls(ClosedJaxpr& program, PassContext& ctx) {
  Jaxpr& j = program.jaxpr;
  Inliner inliner(program, ctx);
  bool any = false;
  for (const Equation& e : j.eqns) any = any || inliner.is_call(e);
  if (!any) return false;

  Substitution subst;
  std::vector<Equation> out;
  out.reserve(j.eqns.size());
  std::vector<Equation> eqns = std::move(j.eqns);
  for (Equation& e : eqns) {
    subst.apply_to_inputs(e);
    inliner.emit(std::move(e), out, subst);
  }
  j.eqns = std::move(out);
  subst.apply_to_outvars(j);
  ctx.note(detail::cat("inlined ", inliner.inlined(), " calls"));
  return true;
}

const Pass kInlineCallsPass{"inline_calls", &inline_calls};

std::vector<Atom> splice_body(const ClosedJaxpr& body, const std::vector<Atom>& operands,
                              std::span<const Aval> result_avals, ClosedJaxpr& program, PassContext& ctx,
                              std::vector<Equation>& out) {
  if (body.jaxpr.invars.size() != operands.size() || body.jaxpr.outvars.size() != result_avals.size())
    detail::fail("inline_calls", "a spliced body takes ", body.jaxpr.invars.size(), " operands and gives ",
                 body.jaxpr.outvars.size(), " results; it was given ", operands.size(), " and expected to give ",
                 result_avals.size());
  Inliner inliner(program, ctx);
  return inliner.splice(body, operands, result_avals, out);
}

bool splice_replacements(ClosedJaxpr& program, std::vector<std::optional<Replacement>> replacements,
                         PassContext& ctx) {
  Jaxpr& j = program.jaxpr;
  bool any = false;
  for (const auto& r : replacements) any = any || r.has_value();
  if (!any) return false;
  std::vector<Equation> eqns = std::move(j.eqns), out;
  out.reserve(eqns.size());
  Substitution subst;
  for (size_t i = 0; i < eqns.size(); ++i) {
    Equation& e = eqns[i];
    subst.apply_to_inputs(e);
    if (!replacements[i]) {
      out.push_back(std::move(e));
      continue;
    }
    Replacement& r = *replacements[i];
    for (Atom& a : r.operands) a = subst.apply(a);
    const std::vector<Aval> result{e.outputs.at(0).aval};
    subst.map(e.outputs[0], splice_body(r.body, r.operands, result, program, ctx, out)[0]);
  }
  j.eqns = std::move(out);
  subst.apply_to_outvars(j);
  return true;
}

}  // namespace jx::compiler
