// batch_jaxpr: the program evaluated under a batching trace and staged again (JAX's
// batch_jaxpr). Batched outputs get their batch axis at 0; unbatched ones stay unbatched
// unless instantiate asks for a broadcast.
#include "jx/error.h"
#include "jx/lax.h"
#include "lax/batch_rules.h"
#include "transforms/batching.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/staging.h"

namespace jx::detail {

BatchedJaxpr batch_jaxpr(const ClosedJaxpr& program, int64_t axis_size, const std::vector<int64_t>& in_dims,
                         const std::vector<bool>& instantiate, const std::string& axis_name) {
  const std::vector<Aval> in_avals = program.in_avals();
  const size_t n = in_avals.size(), m = program.jaxpr.outvars.size();
  if (in_dims.size() != n) fail("batch_jaxpr", "got ", in_dims.size(), " in_dims for a program of ", n, " inputs");
  if (!instantiate.empty() && instantiate.size() != m)
    fail("batch_jaxpr", "got ", instantiate.size(), " instantiate flags for a program of ", m, " outputs");
  if (axis_size < 0) fail("batch_jaxpr", "axis_size must be nonnegative, got ", axis_size);
  std::vector<Aval> avals = in_avals;
  for (size_t i = 0; i < n; ++i) {
    if (in_dims[i] == kNotMapped) continue;
    if (in_dims[i] < 0 || in_dims[i] > avals[i].ndim())
      fail("batch_jaxpr", "in_dims[", i, "] = ", in_dims[i], " is out of range for input ", i, " of type ",
           in_avals[i].str());
    avals[i].shape.insert(avals[i].shape.begin() + in_dims[i], axis_size);
  }

  BatchedJaxpr out;
  out.out_batched.assign(m, false);
  FlatFn f = [&](std::span<const Array> xs) {
    BatchTrace trace(BatchAxis{axis_size, axis_name});
    std::vector<Array> in;
    in.reserve(n);
    for (size_t i = 0; i < n; ++i) in.push_back(trace.pack(xs[i], in_dims[i]));
    std::vector<Array> outs;
    {
      TraceScope scope(&trace);
      outs = eval_jaxpr(program, in);
    }
    trace.kill();
    std::vector<Array> result;
    for (size_t i = 0; i < m; ++i) {
      auto [v, d] = trace.unpack(outs[i]);
      if (d != kNotMapped) {
        result.push_back(lax::batch_rules::move_axis(v, d, 0));
        out.out_batched[i] = true;
      } else if (!instantiate.empty() && instantiate[i]) {
        Shape shape = v.shape();
        shape.insert(shape.begin(), axis_size);
        std::vector<int64_t> dims;
        for (int64_t k = 0; k < v.ndim(); ++k) dims.push_back(k + 1);
        result.push_back(lax::broadcast_in_dim(v, shape, dims));
        out.out_batched[i] = true;
      } else {
        result.push_back(v);
      }
    }
    return result;
  };
  TraceScope isolated(nullptr);
  out.jaxpr = stage_flat(f, avals, "batch_jaxpr");
  return out;
}

}  // namespace jx::detail
