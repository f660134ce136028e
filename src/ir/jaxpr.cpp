// The jaxpr data structure's accessors and its interpreter, eval_jaxpr.
#include "jx/jaxpr.h"

#include <unordered_map>

#include "jx/error.h"

namespace jx {

const Aval& Atom::aval() const { return is_var() ? var().aval : literal().value.aval(); }

std::vector<Aval> Jaxpr::in_avals() const {
  std::vector<Aval> out;
  out.reserve(invars.size());
  for (const Var& v : invars) out.push_back(v.aval);
  return out;
}

std::vector<Aval> Jaxpr::out_avals() const {
  std::vector<Aval> out;
  out.reserve(outvars.size());
  for (const Atom& a : outvars) out.push_back(a.aval());
  return out;
}

namespace {

std::string avals_list(const std::vector<Aval>& avals) {
  std::string s = "(";
  for (size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + avals[i].str();
  return s + ")";
}

// Checks that `given` matches `vars` in count, shape and dtype. Weak types may differ:
// a caller's weak scalar is as good as the strong one the program was traced with.
void check_values(std::string_view what, const std::vector<Var>& vars, std::span<const Array> given) {
  std::vector<Aval> expected, got;
  for (const Var& v : vars) expected.push_back(v.aval);
  for (const Array& a : given) {
    if (!a.valid()) detail::fail("eval_jaxpr", "got a null array among the ", what);
    got.push_back(a.aval());
  }
  bool ok = expected.size() == got.size();
  for (size_t i = 0; ok && i < got.size(); ++i)
    ok = expected[i].shape == got[i].shape && expected[i].dtype == got[i].dtype;
  if (!ok)
    detail::fail("eval_jaxpr", "expected ", expected.size(), " ", what, " of types ", avals_list(expected), ", got ",
                 got.size(), " of types ", avals_list(got));
}

}  // namespace

std::vector<Array> eval_jaxpr(const Jaxpr& jaxpr, std::span<const Array> consts, std::span<const Array> args) {
  check_values("constants", jaxpr.constvars, consts);
  check_values("arguments", jaxpr.invars, args);
  std::unordered_map<int64_t, Array> env;
  for (size_t i = 0; i < consts.size(); ++i) env[jaxpr.constvars[i].id] = consts[i];
  for (size_t i = 0; i < args.size(); ++i) env[jaxpr.invars[i].id] = args[i];

  // eqn_index -1: the program's outputs.
  auto read = [&](const Atom& a, int64_t eqn_index) -> const Array& {
    if (!a.is_var()) return a.literal().value;
    auto it = env.find(a.var().id);
    if (it == env.end())
      detail::fail("eval_jaxpr", eqn_index < 0 ? std::string("an output") : detail::cat("equation ", eqn_index),
                   " reads a variable (id ", a.var().id, ", ", a.var().aval.str(),
                   ") that is not defined before it; run verify_jaxpr on the program");
    return it->second;
  };

  std::vector<Array> inputs;
  for (size_t n = 0; n < jaxpr.eqns.size(); ++n) {
    const Equation& eqn = jaxpr.eqns[n];
    if (!eqn.primitive) detail::fail("eval_jaxpr", "equation ", n, " has no primitive");
    inputs.clear();
    for (const Atom& a : eqn.inputs) inputs.push_back(read(a, static_cast<int64_t>(n)));
    std::vector<Array> outs = jx::bind(*eqn.primitive, inputs, eqn.params);
    if (outs.size() != eqn.outputs.size())
      detail::fail("eval_jaxpr", "equation ", n, " (", eqn.primitive->name(), ") declares ", eqn.outputs.size(),
                   " outputs but binding it gave ", outs.size());
    for (size_t i = 0; i < outs.size(); ++i) env[eqn.outputs[i].id] = std::move(outs[i]);
  }

  std::vector<Array> results;
  results.reserve(jaxpr.outvars.size());
  for (const Atom& a : jaxpr.outvars) results.push_back(read(a, -1));
  return results;
}

}  // namespace jx
