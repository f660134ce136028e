// The pass is dce_jaxpr (src/transforms/jaxpr_transforms.h) over the whole program, with
// every output used and every input kept; sub-programs are pruned by their primitives'
// dce rules as it goes.
#include "jit/passes/dce.h"

#include "transforms/jaxpr_transforms.h"

namespace jx::compiler {

bool eliminate_dead_code(ClosedJaxpr& program, PassContext& ctx) {
  Jaxpr& j = program.jaxpr;
  detail::DcedJaxpr d = detail::dce_jaxpr(j, std::vector<bool>(j.outvars.size(), true),
                                          std::vector<bool>(j.invars.size(), true));
  if (!d.changed) return false;
  // Constvars go only together with their values, so the ClosedJaxpr stays aligned; a
  // program whose consts are not aligned (not closed) keeps its constvars.
  if (program.consts.size() == j.constvars.size()) {
    std::vector<Array> consts;
    for (size_t i = 0; i < j.constvars.size(); ++i)
      if (d.used_constvars[i]) consts.push_back(std::move(program.consts[i]));
    program.consts = std::move(consts);
  } else {
    d.jaxpr.constvars = j.constvars;
  }
  const bool changed = d.equations_changed || d.jaxpr.constvars.size() != j.constvars.size();
  j = std::move(d.jaxpr);
  (void)ctx;
  return changed;
}

const Pass kDcePass{"dce", &eliminate_dead_code};

}  // namespace jx::compiler
