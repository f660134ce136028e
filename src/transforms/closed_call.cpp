// closed_call: a primitive whose parameter is a whole sub-program, the IR's nesting
// construct (jit and the control-flow primitives build on the same shape). Each rule is
// the jaxpr-level transformation (jaxpr_transforms.h) applied to the body: the pattern a
// primitive holding sub-programs follows.
#include "jx/error.h"
#include "jx/transforms.h"
#include "transforms/call_rules.h"
#include "transforms/jaxpr_transforms.h"

namespace jx {

extern const Primitive closed_call_p;

namespace {

const JaxprRef& body_of(const Params& params) { return detail::call_body(params, "closed_call"); }

// vmap: a call of the batched body.
BatchResult closed_call_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                              const BatchAxis& axis) {
  auto b = detail::batch_of_body(body_of(params), dims, axis, /*instantiate_all=*/false);
  std::vector<Array> operands = b->consts;
  operands.insert(operands.end(), args.begin(), args.end());
  Params out_params = params;
  std::vector<Array> outs = jx::bind(closed_call_p, operands, out_params.set("jaxpr", b->body));
  BatchResult r{outs, {}};
  for (bool batched : b->out_flags) r.dims.push_back(batched ? 0 : kNotMapped);
  return r;
}

}  // namespace

const Primitive closed_call_p(
    "closed_call",
    {.traits = kCallsSubprogram | kCall,
     .num_outputs = -1,
     .abstract_eval = [](std::span<const Aval> in,
                         const Params& params) { return detail::call_out_avals("closed_call", in, params); },
     .impl = [](std::span<const Array> in, const Params& params,
                std::span<const Aval>) { return eval_jaxpr(body_of(params)->jaxpr, {}, in); },
     // Inline: the jvp program's equations join the caller's, so reverse mode transposes
     // them one by one (a call of the tangent half would need a transpose rule).
     .jvp = [](std::span<const Array> primals, std::span<const Array> tangents,
               const Params& params) { return detail::jvp_of_call(body_of(params), primals, tangents); },
     .batch = closed_call_batch,
     .partial_eval =
         [](const std::vector<bool>& unknowns, const Params& params) {
           auto split = detail::partial_eval_of_body(body_of(params), unknowns);
           return detail::split_call(*split, closed_call_p, params, closed_call_p, params);
         },
     .dce = detail::dce_of_call});

namespace detail {

std::vector<Array> named_call_flat(const FlatFn& f, std::span<const Array> args, const std::string& name) {
  std::vector<Aval> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  std::vector<Array> operands;
  JaxprRef sub = body_with_consts_first(make_jaxpr_flat(f, avals), &operands);
  operands.insert(operands.end(), args.begin(), args.end());
  return jx::bind(closed_call_p, operands, {{"jaxpr", sub}, {"name", name}});
}

}  // namespace detail
}  // namespace jx
