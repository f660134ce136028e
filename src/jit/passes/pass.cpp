// PassContext and max_var_id: fresh ids must stay above every id of the program, its
// sub-programs included, because an inlined body keeps no id of its own (see inline_calls).
#include "jit/passes/pass.h"

#include <algorithm>

namespace jx::compiler {
namespace {

int64_t max_id_of_atoms(const std::vector<Atom>& atoms) {
  int64_t m = -1;
  for (const Atom& a : atoms)
    if (a.is_var()) m = std::max(m, a.var().id);
  return m;
}

int64_t max_id_of_vars(const std::vector<Var>& vars) {
  int64_t m = -1;
  for (const Var& v : vars) m = std::max(m, v.id);
  return m;
}

}  // namespace

int64_t max_var_id(const Jaxpr& program) {
  int64_t m = std::max(max_id_of_vars(program.constvars), max_id_of_vars(program.invars));
  for (const Equation& e : program.eqns) {
    m = std::max({m, max_id_of_atoms(e.inputs), max_id_of_vars(e.outputs)});
    for (const auto& [name, value] : e.params.items())
      if (const auto* sub = std::get_if<JaxprRef>(&value); sub && *sub) m = std::max(m, max_var_id((*sub)->jaxpr));
  }
  return std::max(m, max_id_of_atoms(program.outvars));
}

PassContext::PassContext(const Jaxpr& program) : next_id_(max_var_id(program) + 1) {}

}  // namespace jx::compiler
