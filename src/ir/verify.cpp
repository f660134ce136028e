// verify_jaxpr: the type checker of the IR. Each equation is checked by its primitive's
// own shape rule, so the IR accepts exactly what eager evaluation accepts.
#include <unordered_map>

#include "ir/ir_internal.h"
#include "jx/error.h"

namespace jx {
namespace {

class Verifier {
 public:
  explicit Verifier(const Jaxpr& j) : jaxpr_(j), names_(detail::jaxpr_var_names(j)) {}

  void run() {
    try {
      for (const Var& v : jaxpr_.constvars) define(v, "a constvar");
      for (const Var& v : jaxpr_.invars) define(v, "an input");
    } catch (const Error& e) {
      detail::fail("verify_jaxpr", e.what());
    }
    for (size_t n = 0; n < jaxpr_.eqns.size(); ++n) check_equation(n, jaxpr_.eqns[n]);
    for (size_t i = 0; i < jaxpr_.outvars.size(); ++i) {
      try {
        use(jaxpr_.outvars[i]);
      } catch (const Error& e) {
        detail::fail("verify_jaxpr", "output ", i, ": ", e.what());
      }
    }
  }

 private:
  std::string name(const Var& v) const { return names_.at(v.id); }

  // Problems are raised as plain messages and prefixed with their place by the caller.
  [[noreturn]] static void problem(const std::string& message) { throw Error(message); }

  void define(const Var& v, const char* role) {
    if (v.id < 0) problem(detail::cat(role, " has no id (", v.aval.str(), ")"));
    auto [it, inserted] = defined_.emplace(v.id, v.aval);
    if (!inserted) problem(detail::cat("variable ", name(v), " is defined twice (again as ", role, ")"));
  }

  void use(const Atom& a) const {
    if (!a.is_var()) {
      const Array& value = a.literal().value;
      if (!value.valid()) problem("a literal holds a null array");
      if (value.ndim() != 0) problem(detail::cat("a literal must be 0-d, got ", value.aval().str()));
      if (!value.is_concrete()) problem(detail::cat("a literal of type ", value.aval().str(), " is not concrete"));
      return;
    }
    const Var& v = a.var();
    auto it = defined_.find(v.id);
    if (it == defined_.end()) problem(detail::cat("variable ", name(v), " is used before it is defined"));
    if (!(it->second == v.aval))
      problem(detail::cat("variable ", name(v), " is used as ", v.aval.str(), " but was defined as ",
                          it->second.str()));
  }

  static void check_sub_programs(const Params& params) {
    for (const auto& [key, value] : params.items()) {
      const auto* sub = std::get_if<JaxprRef>(&value);
      if (!sub) continue;
      if (!*sub) problem(detail::cat("parameter '", key, "' holds a null sub-program"));
      const ClosedJaxpr& closed = **sub;
      if (!closed.jaxpr.constvars.empty() || !closed.consts.empty())
        problem(detail::cat("the sub-program in parameter '", key, "' has ", closed.jaxpr.constvars.size(),
                            " constvars; a sub-program takes its constants as operands"));
      try {
        verify_jaxpr(closed.jaxpr);
      } catch (const Error& e) {
        problem(detail::cat("in the sub-program of parameter '", key, "': ", e.what()));
      }
    }
  }

  void check_equation(size_t n, const Equation& eqn) {
    const std::string where =
        detail::cat("equation ", n, " (", eqn.primitive ? eqn.primitive->name() : std::string("null"), ")");
    try {
      if (!eqn.primitive) problem("has no primitive");
      std::vector<Aval> in_avals;
      for (const Atom& a : eqn.inputs) {
        use(a);
        in_avals.push_back(a.aval());
      }
      check_sub_programs(eqn.params);
      std::vector<Aval> computed = eqn.primitive->abstract_eval(in_avals, eqn.params);
      if (computed.size() != eqn.outputs.size())
        problem(detail::cat("declares ", eqn.outputs.size(), " outputs but the shape rule gives ", computed.size()));
      for (size_t i = 0; i < computed.size(); ++i)
        if (!(computed[i] == eqn.outputs[i].aval))
          problem(detail::cat("output ", i, " (", name(eqn.outputs[i]), ") is declared ", eqn.outputs[i].aval.str(),
                              " but the shape rule gives ", computed[i].str()));
      for (const Var& v : eqn.outputs) define(v, "an equation output");
    } catch (const Error& e) {
      detail::fail("verify_jaxpr", where, ": ", e.what());
    }
  }

  const Jaxpr& jaxpr_;
  std::unordered_map<int64_t, std::string> names_;
  std::unordered_map<int64_t, Aval> defined_;
};

}  // namespace

void verify_jaxpr(const Jaxpr& jaxpr) { Verifier(jaxpr).run(); }

}  // namespace jx
