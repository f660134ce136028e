#include "jit/fusion_primitive.h"

#include "jx/error.h"
#include "jx/transforms.h"
#include "transforms/call_rules.h"

namespace jx::compiler {
namespace {

std::vector<Aval> fusion_rule(std::span<const Aval> in, const Params& params) {
  const std::string& kind = params.get_string("kind");
  if (kind != "loop" && kind != "reduction" && kind != "rows" && kind != "dot" && kind != "scalar_loop")
    detail::fail("fusion", "kind must be loop, reduction, rows, dot or scalar_loop, got '", kind, "'");
  return detail::call_out_avals("fusion", in, params);
}

// Fusions exist only after optimization, but as ordinary primitives they still
// transform: their rules are the transformations applied to the body.
const Primitive fusion_p(
    "fusion",
    {.traits = kCallsSubprogram | kCall,
     .num_outputs = -1,
     .abstract_eval = fusion_rule,
     .impl = [](std::span<const Array> in, const Params& params,
                std::span<const Aval>) { return eval_jaxpr(detail::call_body(params, "fusion")->jaxpr, {}, in); },
     .jvp =
         [](std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
           return detail::jvp_of_call(params.get_jaxpr("jaxpr"), primals, tangents);
         },
     .batch =
         [](std::span<const Array> args, std::span<const int64_t> dims, const Params& params, const BatchAxis& axis) {
           return detail::batch_of_call(params.get_jaxpr("jaxpr"), args, dims, axis);
         }});

}  // namespace

const Primitive& fusion_primitive() { return fusion_p; }

Equation make_fusion(std::shared_ptr<const ClosedJaxpr> body, std::vector<Atom> inputs, std::vector<Var> outputs,
                     std::string kind, std::string name) {
  Equation e;
  e.primitive = &fusion_p;
  e.inputs = std::move(inputs);
  e.outputs = std::move(outputs);
  e.params = Params{{"jaxpr", JaxprRef(std::move(body))}, {"kind", std::move(kind)}, {"name", std::move(name)}};
  return e;
}

}  // namespace jx::compiler
