// One backward sweep: a variable is live if an output or a kept equation reads it. An
// equation with several outputs stays whole while any of them is live. Sub-programs are
// left as they are (they are someone else's body: a call's, a fusion's).
#include "jit/passes/dce.h"

#include <unordered_set>

namespace jx::compiler {

bool eliminate_dead_code(ClosedJaxpr& program, PassContext& ctx) {
  Jaxpr& j = program.jaxpr;
  std::unordered_set<int64_t> live;
  auto use = [&](const Atom& a) {
    if (a.is_var()) live.insert(a.var().id);
  };
  for (const Atom& a : j.outvars) use(a);

  std::vector<bool> keep(j.eqns.size(), false);
  for (size_t n = j.eqns.size(); n-- > 0;) {
    const Equation& e = j.eqns[n];
    bool needed = e.primitive && e.primitive->has(kSideEffects);
    for (const Var& v : e.outputs) needed = needed || live.count(v.id) > 0;
    if (!needed) continue;
    keep[n] = true;
    for (const Atom& a : e.inputs) use(a);
  }

  bool changed = false;
  std::vector<Equation> kept;
  kept.reserve(j.eqns.size());
  for (size_t n = 0; n < j.eqns.size(); ++n) {
    if (keep[n]) kept.push_back(std::move(j.eqns[n]));
    else changed = true;
  }
  j.eqns = std::move(kept);

  // Constvars go only together with their values, so the ClosedJaxpr stays aligned; a
  // program whose consts are not aligned (not closed) keeps its constvars.
  if (program.consts.size() == j.constvars.size()) {
    std::vector<Var> constvars;
    std::vector<Array> consts;
    for (size_t i = 0; i < j.constvars.size(); ++i) {
      if (live.count(j.constvars[i].id)) {
        constvars.push_back(j.constvars[i]);
        consts.push_back(program.consts[i]);
      } else {
        changed = true;
      }
    }
    j.constvars = std::move(constvars);
    program.consts = std::move(consts);
  }
  (void)ctx;
  return changed;
}

const Pass kDcePass{"dce", &eliminate_dead_code};

}  // namespace jx::compiler
