#include "jit/jit_primitive.h"

#include "jit/executable.h"
#include "jx/error.h"
#include "transforms/call_rules.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/staging.h"
#include "transforms/subprogram_cache.h"

namespace jx::detail {
namespace {

const JaxprRef& body_of(const Params& params, std::string_view prim) { return call_body(params, prim); }

std::vector<Array> run_body(std::span<const Array> in, const Params& params, std::string_view prim) {
  return body_executable(body_of(params, prim), params.get_string("name"))->run(in);
}

Params renamed(const Params& params, const JaxprRef& body, const std::string& suffix) {
  return Params{{"jaxpr", body}, {"name", params.get_string("name") + suffix}};
}

extern const Primitive jit_p;
extern const Primitive linear_jit_p;

// jvp: a jit of the body's jvp program, so forward mode stays compiled. Under linearize
// the partial-evaluation trace then splits that call (jit_partial_eval below).
JvpResult jit_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                  const Params& params) {
  std::vector<bool> nonzero(tangents.size());
  for (size_t i = 0; i < tangents.size(); ++i) nonzero[i] = tangents[i].valid();
  auto jvp = jvp_of_body(body_of(params, p.name()), nonzero);
  std::vector<Array> outs = jx::bind(jit_p, jvp_call_operands(*jvp, primals, tangents), renamed(params, jvp->body, "_jvp"));
  return split_jvp_outputs(std::move(outs), jvp->out_flags);
}

// Partial evaluation: the known half of the body is a compiled `jit` run now; the unknown
// half a `linear_jit` reading its residuals. Under linearize the unknowns are tangents,
// so that half is linear in them; anywhere else a transpose of it raises on the first
// non-linear primitive of its body.
PartialEvalSplit jit_partial_eval(const std::vector<bool>& unknowns, const Params& params) {
  auto split = partial_eval_of_body(body_of(params, "jit"), unknowns);
  const auto residuals = static_cast<int64_t>(split->unknown_consts.size() + split->num_residuals);
  return split_call(*split, jit_p, Params{{"name", params.get_string("name")}}, linear_jit_p,
                    Params{{"name", params.get_string("name") + "_lin"}, {"num_residuals", residuals}});
}

// Transpose of linear_jit: the body's transpose (transpose_jaxpr), staged and compiled.
std::vector<Array> linear_jit_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                        const Params& params) {
  const size_t r = static_cast<size_t>(params.get_int("num_residuals"));
  for (size_t i = 0; i < r; ++i)
    if (operands[i].is_linear()) fail("linear_jit", "internal: residual operand ", i, " is linear");
  std::vector<bool> linear(operands.size(), true), ct_nonzero(cts.size());
  for (size_t i = 0; i < r; ++i) linear[i] = false;
  for (size_t i = 0; i < cts.size(); ++i) ct_nonzero[i] = cts[i].valid();
  auto t = transpose_of_body(body_of(params, "linear_jit"), linear, ct_nonzero);
  std::vector<Array> in = t->consts;
  for (size_t i = 0; i < r; ++i) in.push_back(operands[i].value);
  for (const Array& ct : cts)
    if (ct.valid()) in.push_back(ct);
  std::vector<Array> lin_cts = jx::bind(jit_p, in, renamed(params, t->body, "_transpose"));
  std::vector<Array> out(operands.size());
  for (size_t i = r; i < operands.size(); ++i) out[i] = std::move(lin_cts[i - r]);
  return out;
}

// vmap: a call of the batched body (batch_jaxpr) with the same primitive, so it stays
// compiled. Its constants join the leading operands (for linear_jit: the residuals).
BatchResult batch_call(const Primitive& p, std::span<const Array> args, std::span<const int64_t> dims,
                       const Params& params, const BatchAxis& axis) {
  auto b = batch_of_body(body_of(params, p.name()), dims, axis, /*instantiate_all=*/false);
  std::vector<Array> operands = b->consts;
  operands.insert(operands.end(), args.begin(), args.end());
  Params out_params = params;
  out_params.set("jaxpr", b->body);
  if (params.has("num_residuals"))
    out_params.set("num_residuals", params.get_int("num_residuals") + static_cast<int64_t>(b->consts.size()));
  BatchResult r{jx::bind(p, operands, out_params), {}};
  for (bool batched : b->out_flags) r.dims.push_back(batched ? 0 : kNotMapped);
  return r;
}

const Primitive jit_p("jit", {.traits = kCallsSubprogram | kCall,
                              .num_outputs = -1,
                              .abstract_eval = [](std::span<const Aval> in,
                                                  const Params& params) { return call_out_avals("jit", in, params); },
                              .impl = [](std::span<const Array> in, const Params& params,
                                         std::span<const Aval>) { return run_body(in, params, "jit"); },
                              .jvp = [](std::span<const Array> primals, std::span<const Array> tangents,
                                        const Params& params) { return jit_jvp(jit_p, primals, tangents, params); },
                              .batch = [](std::span<const Array> args, std::span<const int64_t> dims,
                                          const Params& params, const BatchAxis& axis) {
                                return batch_call(jit_p, args, dims, params, axis);
                              },
                              .partial_eval = jit_partial_eval,
                              .dce = dce_of_call});

// Linear in the operands after num_residuals. Its jvp (needed only for higher-order
// derivatives, where residuals carry tangents too) is a jit of the body's jvp program,
// which is not linear in the operands jointly. Partial evaluation keeps the default
// (a linear_jit with an unknown operand is staged whole).
const Primitive linear_jit_p(
    "linear_jit",
    {.traits = kLinear | kCallsSubprogram | kCall,
     .num_outputs = -1,
     .abstract_eval =
         [](std::span<const Aval> in, const Params& params) {
           int64_t r = params.get_int("num_residuals");
           if (r < 0 || static_cast<size_t>(r) > in.size())
             fail("linear_jit", "num_residuals=", r, " but there are ", in.size(), " operands");
           return call_out_avals("linear_jit", in, params);
         },
     .impl = [](std::span<const Array> in, const Params& params,
                std::span<const Aval>) { return run_body(in, params, "linear_jit"); },
     .jvp = [](std::span<const Array> primals, std::span<const Array> tangents,
               const Params& params) { return jit_jvp(linear_jit_p, primals, tangents, params); },
     .transpose = linear_jit_transpose,
     .batch = [](std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                 const BatchAxis& axis) { return batch_call(linear_jit_p, args, dims, params, axis); },
     .dce = dce_of_call});

SubprogramCache<std::shared_ptr<const compiler::Executable>>& executable_cache() {
  static auto* c = new SubprogramCache<std::shared_ptr<const compiler::Executable>>;
  return *c;
}

}  // namespace

const Primitive& jit_primitive() { return jit_p; }

JaxprRef stage_body(const FlatFn& f, std::span<const Aval> avals, std::vector<Array>* consts_out) {
  return body_with_consts_first(stage_flat(f, avals, "jit"), consts_out);
}

std::shared_ptr<const compiler::Executable> body_executable(const JaxprRef& body, const std::string& name) {
  return executable_cache().get(body, "", [&] {
    return compiler::compile_program(*body, compiler::compile_options_from_config(name));
  });
}

}  // namespace jx::detail
