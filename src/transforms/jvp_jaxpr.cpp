// jvp_jaxpr: the program evaluated under a jvp trace and staged again (JAX's jvp_jaxpr).
// Symbolic zeros survive: an output no input tangent reaches gets no tangent output
// unless instantiate asks for one.
#include "core/array_internal.h"
#include "jx/error.h"
#include "transforms/ad_util.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/jvp.h"
#include "transforms/staging.h"

namespace jx::detail {

Aval tangent_aval(const Aval& primal) { return Aval{primal.shape, primal.dtype, false}; }

JvpJaxpr jvp_jaxpr(const ClosedJaxpr& program, const std::vector<bool>& nonzero_tangents,
                   const std::vector<bool>& instantiate) {
  const std::vector<Aval> in_avals = program.in_avals();
  const size_t n = in_avals.size(), m = program.jaxpr.outvars.size();
  if (nonzero_tangents.size() != n)
    fail("jvp_jaxpr", "got ", nonzero_tangents.size(), " nonzero_tangents flags for a program of ", n, " inputs");
  if (!instantiate.empty() && instantiate.size() != m)
    fail("jvp_jaxpr", "got ", instantiate.size(), " instantiate flags for a program of ", m, " outputs");
  std::vector<Aval> avals = in_avals;
  for (size_t i = 0; i < n; ++i)
    if (nonzero_tangents[i]) avals.push_back(tangent_aval(in_avals[i]));

  JvpJaxpr out;
  out.out_nonzero.assign(m, false);
  FlatFn f = [&](std::span<const Array> xs) {
    JvpTrace trace{"jvp_jaxpr"};
    std::vector<Array> in;
    in.reserve(n);
    for (size_t i = 0, k = n; i < n; ++i) in.push_back(trace.pack(xs[i], nonzero_tangents[i] ? xs[k++] : Array()));
    std::vector<Array> outs;
    {
      TraceScope scope(&trace);
      outs = eval_jaxpr(program, in);
    }
    trace.kill();
    std::vector<Array> primals, tangents;
    for (size_t i = 0; i < m; ++i) {
      auto [p, t] = trace.unpack(outs[i]);
      if (!t.valid() && !instantiate.empty() && instantiate[i]) t = ad::zeros(tangent_aval(p.aval()));
      out.out_nonzero[i] = t.valid();
      primals.push_back(std::move(p));
      if (t.valid()) tangents.push_back(std::move(t));
    }
    primals.insert(primals.end(), tangents.begin(), tangents.end());
    return primals;
  };
  // Staged apart from any active transformation: the program's values are all its own.
  TraceScope isolated(nullptr);
  out.jaxpr = stage_flat(f, avals, "jvp_jaxpr");
  return out;
}

JaxprRef body_with_consts_first(ClosedJaxpr program, std::vector<Array>* consts) {
  auto body = std::make_shared<ClosedJaxpr>();
  body->jaxpr.invars = std::move(program.jaxpr.constvars);
  body->jaxpr.invars.insert(body->jaxpr.invars.end(), program.jaxpr.invars.begin(), program.jaxpr.invars.end());
  body->jaxpr.eqns = std::move(program.jaxpr.eqns);
  body->jaxpr.outvars = std::move(program.jaxpr.outvars);
  *consts = std::move(program.consts);
  return body;
}

}  // namespace jx::detail
