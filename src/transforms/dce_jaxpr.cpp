// dce_jaxpr: one backward sweep (JAX's dce_jaxpr). A variable is live if a used output or
// a kept equation reads it; an equation is kept while any output is live or it has side
// effects. A primitive's dce rule rewrites its kept equation (a call prunes its body) and
// says which operands it still reads; without one the equation reads them all.
#include <unordered_set>

#include "jx/error.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/effects.h"

namespace jx::detail {

DcedJaxpr dce_jaxpr(const Jaxpr& jaxpr, const std::vector<bool>& used_outputs, const std::vector<bool>& keep_inputs) {
  const size_t n = jaxpr.invars.size(), m = jaxpr.outvars.size();
  if (used_outputs.size() != m)
    fail("dce_jaxpr", "got ", used_outputs.size(), " used_outputs flags for a program of ", m, " outputs");
  if (!keep_inputs.empty() && keep_inputs.size() != n)
    fail("dce_jaxpr", "got ", keep_inputs.size(), " keep_inputs flags for a program of ", n, " inputs");
  DcedJaxpr out;
  std::unordered_set<int64_t> live;
  live.reserve(jaxpr.eqns.size() + n);
  auto use = [&](const Atom& a) {
    if (a.is_var()) live.insert(a.var().id);
  };
  for (size_t i = 0; i < m; ++i)
    if (used_outputs[i]) use(jaxpr.outvars[i]);
    else out.changed = true;

  // Kept equations, collected backwards (rewritten by their rule where they have one).
  std::vector<Equation> kept;
  std::vector<bool> used;
  for (size_t k = jaxpr.eqns.size(); k-- > 0;) {
    const Equation& e = jaxpr.eqns[k];
    used.assign(e.outputs.size(), false);
    bool any_used = false;
    for (size_t i = 0; i < e.outputs.size(); ++i) any_used |= (used[i] = live.count(e.outputs[i].id) > 0);
    const bool side_effects = has_effects(e);
    if (!any_used && !side_effects) {
      out.equations_changed = true;
      continue;
    }
    if (e.primitive && e.primitive->rules().dce) {
      Equation copy = e;
      DceEquationResult r = e.primitive->rules().dce(used, copy);
      if (r.used_inputs.size() != e.inputs.size())
        fail(e.primitive->name(), "dce rule returned ", r.used_inputs.size(), " flags for ", e.inputs.size(),
             " operands (a bug in the rule)");
      for (size_t i = 0; i < e.inputs.size(); ++i)
        if (r.used_inputs[i]) use(e.inputs[i]);
      out.equations_changed |= r.changed;
      kept.push_back(std::move(copy));
    } else {
      for (const Atom& a : e.inputs) use(a);
      kept.push_back(e);
    }
  }
  out.changed |= out.equations_changed;
  out.jaxpr.eqns.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
  for (size_t i = 0; i < m; ++i)
    if (used_outputs[i]) out.jaxpr.outvars.push_back(jaxpr.outvars[i]);
  out.used_inputs.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    out.used_inputs[i] = live.count(jaxpr.invars[i].id) > 0 || (!keep_inputs.empty() && keep_inputs[i]);
    if (out.used_inputs[i]) out.jaxpr.invars.push_back(jaxpr.invars[i]);
    else out.changed = true;
  }
  out.used_constvars.assign(jaxpr.constvars.size(), false);
  for (size_t i = 0; i < jaxpr.constvars.size(); ++i) {
    out.used_constvars[i] = live.count(jaxpr.constvars[i].id) > 0;
    if (out.used_constvars[i]) out.jaxpr.constvars.push_back(jaxpr.constvars[i]);
    else out.changed = true;
  }
  return out;
}

}  // namespace jx::detail
