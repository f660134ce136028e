// transpose_jaxpr: backward_pass (linearize.cpp) staged into a program. The program's
// non-linear inputs join its constants (backward_pass evaluates what reads only them
// forward); the linear inputs are the ones it runs backwards to.
#include "jx/error.h"
#include "transforms/ad_util.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/linearize.h"
#include "transforms/staging.h"

namespace jx::detail {

ClosedJaxpr transpose_jaxpr(const ClosedJaxpr& program, const std::vector<bool>& linear,
                            const std::vector<bool>& ct_nonzero) {
  const Jaxpr& j = program.jaxpr;
  const size_t n = j.invars.size(), m = j.outvars.size();
  if (linear.size() != n)
    fail("transpose_jaxpr", "got ", linear.size(), " linear flags for a program of ", n, " inputs");
  if (!ct_nonzero.empty() && ct_nonzero.size() != m)
    fail("transpose_jaxpr", "got ", ct_nonzero.size(), " ct_nonzero flags for a program of ", m, " outputs");
  if (program.consts.size() != j.constvars.size())
    fail("transpose_jaxpr", "the program has ", j.constvars.size(), " constvars but ", program.consts.size(),
         " values");
  Jaxpr lin;
  lin.constvars = j.constvars;
  std::vector<Aval> avals;
  for (size_t i = 0; i < n; ++i) {
    if (linear[i]) {
      lin.invars.push_back(j.invars[i]);
    } else {
      lin.constvars.push_back(j.invars[i]);
      avals.push_back(j.invars[i].aval);
    }
  }
  lin.eqns = j.eqns;
  lin.outvars = j.outvars;
  const size_t num_nonlinear = avals.size();
  for (size_t i = 0; i < m; ++i)
    if (ct_nonzero.empty() || ct_nonzero[i]) avals.push_back(tangent_aval(j.outvars[i].aval()));

  FlatFn backward = [&](std::span<const Array> xs) {
    std::vector<Array> consts = program.consts;
    consts.insert(consts.end(), xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(num_nonlinear));
    std::vector<Array> cts(m);
    for (size_t i = 0, k = num_nonlinear; i < m; ++i)
      if (ct_nonzero.empty() || ct_nonzero[i]) cts[i] = xs[k++];
    std::vector<Array> in_cts = backward_pass(lin, consts, cts, "transpose_jaxpr");
    for (size_t i = 0; i < in_cts.size(); ++i)
      if (!in_cts[i].valid()) in_cts[i] = ad::zeros(tangent_aval(lin.invars[i].aval));
    return in_cts;
  };
  TraceScope isolated(nullptr);
  return stage_flat(backward, avals, "transpose_jaxpr");
}

}  // namespace jx::detail
