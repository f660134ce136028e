// partial_eval_jaxpr: partial evaluation of a program, built from the one partial
// evaluation mechanism (the staging trace's forward_known mode, as JAX builds
// partial_eval_jaxpr_nounits from its JaxprTrace). The program is evaluated with its
// known inputs as tracers of an outer, full staging trace (which records the known
// program) and its unknown inputs as tracers of a partial-evaluation trace above it
// (which records the unknown program and forwards known work down to the outer one).
// The unknown program's constants that are outer tracers are the residuals.
#include <unordered_set>

#include "core/array_internal.h"
#include "jx/error.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/staging.h"

namespace jx::detail {

PartialEvalJaxpr partial_eval_jaxpr(const ClosedJaxpr& program, const std::vector<bool>& unknowns,
                                    const std::vector<bool>& instantiate) {
  const std::vector<Aval> in_avals = program.in_avals();
  const size_t n = in_avals.size(), m = program.jaxpr.outvars.size();
  if (unknowns.size() != n)
    fail("partial_eval_jaxpr", "got ", unknowns.size(), " unknown flags for a program of ", n, " inputs");
  if (!instantiate.empty() && instantiate.size() != m)
    fail("partial_eval_jaxpr", "got ", instantiate.size(), " instantiate flags for a program of ", m, " outputs");

  TraceScope isolated(nullptr);  // the program's values are all its own
  StagingTrace known_trace{"partial_eval_jaxpr", /*forward_known=*/false};
  PartialEvalJaxpr out;
  out.out_unknowns.assign(m, false);
  std::vector<Array> known_outs;
  ClosedJaxpr unknown;
  {
    TraceScope known_scope(&known_trace);
    StagingTrace unknown_trace{"partial_eval_jaxpr", /*forward_known=*/true};  // parent: known_trace
    std::vector<Array> in(n);
    for (size_t i = 0; i < n; ++i)
      if (!unknowns[i]) in[i] = known_trace.new_input(in_avals[i]);
    for (size_t i = 0; i < n; ++i)
      if (unknowns[i]) in[i] = unknown_trace.new_input(in_avals[i]);
    std::vector<Array> outs;
    {
      TraceScope unknown_scope(&unknown_trace);
      outs = eval_jaxpr(program, in);
    }
    std::vector<Array> unknown_outs;
    for (size_t i = 0; i < m; ++i) {
      // An instantiated known output is passed through the unknown program (its value
      // becomes one of that program's constants, hence a residual).
      out.out_unknowns[i] = unknown_trace.owns(outs[i]) || (!instantiate.empty() && instantiate[i]);
      (out.out_unknowns[i] ? unknown_outs : known_outs).push_back(outs[i]);
    }
    unknown = unknown_trace.finish(unknown_outs);
  }
  // The unknown program's constants: outer tracers are residuals (leading inputs),
  // concrete values stay its constants.
  ClosedJaxpr& u = out.unknown;
  std::vector<Var> residual_vars;
  for (size_t i = 0; i < unknown.consts.size(); ++i) {
    if (known_trace.owns(unknown.consts[i])) {
      residual_vars.push_back(unknown.jaxpr.constvars[i]);
      known_outs.push_back(unknown.consts[i]);
    } else {
      u.jaxpr.constvars.push_back(unknown.jaxpr.constvars[i]);
      u.consts.push_back(unknown.consts[i]);
    }
  }
  const size_t num_known_outs = known_outs.size() - residual_vars.size();
  u.jaxpr.invars = residual_vars;
  u.jaxpr.invars.insert(u.jaxpr.invars.end(), unknown.jaxpr.invars.begin(), unknown.jaxpr.invars.end());
  u.jaxpr.eqns = std::move(unknown.jaxpr.eqns);
  u.jaxpr.outvars = std::move(unknown.jaxpr.outvars);
  out.known = known_trace.finish(known_outs);

  // Prune: unknown equations nothing needs, the residuals only they read, then the known
  // work only those residuals needed.
  const size_t r = residual_vars.size();
  std::vector<bool> keep_unknown_inputs(u.jaxpr.invars.size(), true);
  for (size_t i = 0; i < r; ++i) keep_unknown_inputs[i] = false;
  DcedJaxpr du = dce_jaxpr(u.jaxpr, std::vector<bool>(u.jaxpr.outvars.size(), true), keep_unknown_inputs);
  std::vector<bool> used_known_outs(known_outs.size(), true);
  for (size_t i = 0; i < r; ++i) used_known_outs[num_known_outs + i] = du.used_inputs[i];
  u.jaxpr = std::move(du.jaxpr);
  std::vector<Array> unknown_consts;
  for (size_t i = 0; i < u.consts.size(); ++i)
    if (du.used_constvars[i]) unknown_consts.push_back(u.consts[i]);
  u.consts = std::move(unknown_consts);

  DcedJaxpr dk = dce_jaxpr(out.known.jaxpr, used_known_outs,
                           std::vector<bool>(out.known.jaxpr.invars.size(), true));
  out.known.jaxpr = std::move(dk.jaxpr);
  std::vector<Array> known_consts;
  for (size_t i = 0; i < out.known.consts.size(); ++i)
    if (dk.used_constvars[i]) known_consts.push_back(out.known.consts[i]);
  out.known.consts = std::move(known_consts);
  out.num_residuals = out.known.jaxpr.outvars.size() - num_known_outs;
  return out;
}

}  // namespace jx::detail
