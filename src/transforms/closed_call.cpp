// closed_call: a primitive whose parameter is a whole sub-program, the IR's nesting
// construct (jit and the control-flow primitives build on the same shape). Its rules
// are the transformations applied to the body: jvp and batching evaluate the body under
// the transformation (inlining it), eager evaluation runs eval_jaxpr.
#include "core/array_internal.h"
#include "jx/error.h"
#include "jx/lax.h"
#include "jx/transforms.h"
#include "lax/rules.h"
#include "transforms/call_rules.h"

namespace jx {
namespace {

}  // namespace

extern const Primitive closed_call_p;
const Primitive closed_call_p(
    "closed_call",
    {.traits = 0,
     .num_outputs = -1,
     .abstract_eval = [](std::span<const Aval> in,
                         const Params& params) { return detail::call_out_avals("closed_call", in, params); },
     .impl = [](std::span<const Array> in, const Params& params,
                std::span<const Aval>) { return eval_jaxpr(detail::call_body(params, "closed_call")->jaxpr, {}, in); },
     .jvp =
         [](std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
           return detail::jvp_of_call(params.get_jaxpr("jaxpr"), primals, tangents);
         },
     .batch =
         [](std::span<const Array> args, std::span<const int64_t> dims, const Params& params, const BatchAxis& axis) {
           return detail::batch_of_call(params.get_jaxpr("jaxpr"), args, dims, axis);
         }});

namespace detail {

const JaxprRef& call_body(const Params& params, std::string_view prim) {
  const JaxprRef& j = params.get_jaxpr("jaxpr");
  if (!j) fail(prim, "has a null sub-program");
  return j;
}

std::vector<Aval> call_out_avals(std::string_view prim, std::span<const Aval> in, const Params& params) {
  const Jaxpr& j = call_body(params, prim)->jaxpr;
  if (!j.constvars.empty()) fail(prim, "sub-program must have no constvars (constants are leading operands)");
  std::vector<Aval> want = j.in_avals();
  const std::string& name = params.get_string("name");
  if (want.size() != in.size())
    fail(prim, "sub-program '", name, "' takes ", want.size(), " operands, got ", in.size(), " (",
         lax::rules::avals_str(in), ")");
  for (size_t i = 0; i < in.size(); ++i)
    if (want[i].shape != in[i].shape || want[i].dtype != in[i].dtype)
      fail(prim, "operand ", i, " of '", name, "' is ", in[i].str(), " but the sub-program expects ",
           want[i].str());
  return j.out_avals();
}

JvpResult jvp_of_call(const JaxprRef& body, std::span<const Array> primals, std::span<const Array> tangents) {
  if (!body) fail("jvp", "a call has a null sub-program");
  FlatFn f = [body](std::span<const Array> xs) { return eval_jaxpr(body->jaxpr, {}, xs); };
  auto [p, t] = jvp_flat(f, primals, tangents, "jvp");
  return JvpResult{std::move(p), std::move(t)};
}

BatchResult batch_of_call(const JaxprRef& body, std::span<const Array> args, std::span<const int64_t> dims,
                          const BatchAxis& axis) {
  if (!body) fail("vmap", "a call has a null sub-program");
  std::vector<std::optional<int64_t>> in;
  for (int64_t d : dims) in.push_back(d == kNotMapped ? std::nullopt : std::optional<int64_t>(d));
  std::vector<std::optional<int64_t>> out{0};
  FlatFn f = [body](std::span<const Array> xs) { return eval_jaxpr(body->jaxpr, {}, xs); };
  std::vector<Array> outs = vmap_flat(f, args, in, out, axis);
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

std::vector<Array> named_call_flat(const FlatFn& f, std::span<const Array> args, const std::string& name) {
  std::vector<Aval> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  ClosedJaxpr staged = make_jaxpr_flat(f, avals);
  // Constants become leading operands: sub-programs hold no constvars.
  auto sub = std::make_shared<ClosedJaxpr>();
  sub->jaxpr.invars = staged.jaxpr.constvars;
  sub->jaxpr.invars.insert(sub->jaxpr.invars.end(), staged.jaxpr.invars.begin(), staged.jaxpr.invars.end());
  sub->jaxpr.eqns = std::move(staged.jaxpr.eqns);
  sub->jaxpr.outvars = std::move(staged.jaxpr.outvars);
  std::vector<Array> operands = staged.consts;
  operands.insert(operands.end(), args.begin(), args.end());
  return jx::bind(closed_call_p, operands, {{"jaxpr", JaxprRef(sub)}, {"name", name}});
}

}  // namespace detail
}  // namespace jx
