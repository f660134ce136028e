// Value numbering in one forward sweep. Operands are compared after renaming, so chains
// of duplicates collapse in a single run. Sub-program parameters compare by identity
// (Params::operator==), as JAX compares jaxprs: two calls of the same body merge, two
// equal-looking bodies built separately do not. Side-effecting equations never merge.
// Random numbers are pure functions of their key (threefry2x32), so they merge too.
// An optimization_barrier never merges: it marks a recomputation (jx::checkpoint).
#include "jit/passes/cse.h"

#include <unordered_map>

#include "jit/passes/rewrite.h"
#include "lax/primitives.h"
#include "transforms/effects.h"

namespace jx::compiler {
namespace {

size_t equation_hash(const Equation& e) {
  size_t h = std::hash<const void*>()(e.primitive) ^ (e.params.hash() * 31);
  for (const Atom& a : e.inputs) h = h * 1000003u ^ atom_hash(a);
  return h;
}

bool same_computation(const Equation& a, const Equation& b) {
  if (a.primitive != b.primitive || a.inputs.size() != b.inputs.size() || a.outputs.size() != b.outputs.size())
    return false;
  for (size_t i = 0; i < a.inputs.size(); ++i)
    if (!same_atom(a.inputs[i], b.inputs[i])) return false;
  // Equal inputs and params give equal output types; checked anyway, as renaming needs it.
  for (size_t i = 0; i < a.outputs.size(); ++i)
    if (!(a.outputs[i].aval == b.outputs[i].aval)) return false;
  return a.params == b.params;
}

// Constvars bound to the same array (the same storage and view) are one value.
bool merge_identical_constvars(ClosedJaxpr& program, Substitution& subst) {
  Jaxpr& j = program.jaxpr;
  if (program.consts.size() != j.constvars.size()) return false;
  bool changed = false;
  std::unordered_map<const void*, size_t> first;  // array identity -> kept index
  std::vector<Var> constvars;
  std::vector<Array> consts;
  for (size_t i = 0; i < j.constvars.size(); ++i) {
    auto [it, inserted] = first.emplace(program.consts[i].id(), constvars.size());
    if (!inserted && constvars[it->second].aval == j.constvars[i].aval) {
      subst.map(j.constvars[i], constvars[it->second]);
      changed = true;
      continue;
    }
    if (!inserted) it->second = constvars.size();
    constvars.push_back(j.constvars[i]);
    consts.push_back(program.consts[i]);
  }
  j.constvars = std::move(constvars);
  program.consts = std::move(consts);
  return changed;
}

}  // namespace

bool eliminate_common_subexpressions(ClosedJaxpr& program, PassContext& ctx) {
  Jaxpr& j = program.jaxpr;
  Substitution subst;
  bool changed = merge_identical_constvars(program, subst);

  std::unordered_multimap<size_t, size_t> seen;  // hash -> index into `kept`
  std::vector<Equation> kept;
  kept.reserve(j.eqns.size());
  for (Equation& e : j.eqns) {
    subst.apply_to_inputs(e);
    bool pure = e.primitive && !detail::has_effects(e) && !e.outputs.empty() &&
                e.primitive != &lax::optimization_barrier_p;
    if (pure) {
      size_t h = equation_hash(e);
      const Equation* earlier = nullptr;
      for (auto [it, end] = seen.equal_range(h); it != end && !earlier; ++it)
        if (same_computation(kept[it->second], e)) earlier = &kept[it->second];
      if (earlier) {
        for (size_t i = 0; i < e.outputs.size(); ++i) subst.map(e.outputs[i], earlier->outputs[i]);
        changed = true;
        continue;
      }
      seen.emplace(h, kept.size());
    }
    kept.push_back(std::move(e));
  }
  j.eqns = std::move(kept);
  subst.apply_to_outvars(j);
  (void)ctx;
  return changed;
}

const Pass kCsePass{"cse", &eliminate_common_subexpressions};

}  // namespace jx::compiler
