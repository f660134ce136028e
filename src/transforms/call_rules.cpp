// The call primitives' shared rules: the shape rule and the jaxpr-level transformations
// applied to a body, memoized per (body, flags) in process-wide caches.
#include "transforms/call_rules.h"

#include "jx/error.h"
#include "lax/rules.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/subprogram_cache.h"

namespace jx::detail {

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

namespace {

using BodyPtr = std::shared_ptr<const TransformedBody>;

BodyPtr lifted(ClosedJaxpr program, std::vector<bool> flags) {
  auto t = std::make_shared<TransformedBody>();
  t->body = body_with_consts_first(std::move(program), &t->consts);
  t->out_flags = std::move(flags);
  return t;
}

}  // namespace

BodyPtr jvp_of_body(const JaxprRef& body, const std::vector<bool>& nonzero, const std::vector<bool>& instantiate) {
  static auto* cache = new SubprogramCache<BodyPtr>;
  return cache->get(body, mask_str(nonzero) + "/" + mask_str(instantiate), [&] {
    JvpJaxpr j = jvp_jaxpr(*body, nonzero, instantiate);
    return lifted(std::move(j.jaxpr), std::move(j.out_nonzero));
  });
}

BodyPtr batch_of_body(const JaxprRef& body, std::span<const int64_t> dims, const BatchAxis& axis,
                      const std::vector<bool>& instantiate) {
  static auto* cache = new SubprogramCache<BodyPtr>;
  std::string key = std::to_string(axis.size) + "/" + axis.name + "/" + mask_str(instantiate);
  for (int64_t d : dims) key += "," + std::to_string(d);
  return cache->get(body, key, [&] {
    std::vector<int64_t> in_dims(dims.begin(), dims.end());
    BatchedJaxpr b = batch_jaxpr(*body, axis.size, in_dims, instantiate, axis.name);
    return lifted(std::move(b.jaxpr), std::move(b.out_batched));
  });
}

BodyPtr batch_of_body(const JaxprRef& body, std::span<const int64_t> dims, const BatchAxis& axis,
                      bool instantiate_all) {
  return batch_of_body(body, dims, axis, std::vector<bool>(instantiate_all ? body->jaxpr.outvars.size() : 0, true));
}

BodyPtr transpose_of_body(const JaxprRef& body, const std::vector<bool>& linear, const std::vector<bool>& ct_nonzero) {
  static auto* cache = new SubprogramCache<BodyPtr>;
  return cache->get(body, mask_str(linear) + "/" + mask_str(ct_nonzero),
                    [&] { return lifted(transpose_jaxpr(*body, linear, ct_nonzero), {}); });
}

std::shared_ptr<const SplitBody> partial_eval_of_body(const JaxprRef& body, const std::vector<bool>& unknowns,
                                                      const std::vector<bool>& instantiate) {
  static auto* cache = new SubprogramCache<std::shared_ptr<const SplitBody>>;
  return cache->get(body, mask_str(unknowns) + "/" + mask_str(instantiate), [&] {
    PartialEvalJaxpr pe = partial_eval_jaxpr(*body, unknowns, instantiate);
    auto s = std::make_shared<SplitBody>();
    s->known = body_with_consts_first(std::move(pe.known), &s->known_consts);
    s->unknown = body_with_consts_first(std::move(pe.unknown), &s->unknown_consts);
    s->out_unknowns = std::move(pe.out_unknowns);
    s->num_residuals = pe.num_residuals;
    return std::shared_ptr<const SplitBody>(s);
  });
}

PartialEvalSplit split_call(const SplitBody& split, const Primitive& known, Params known_params,
                            const Primitive& unknown, Params unknown_params) {
  PartialEvalSplit s;
  s.known = split.known->jaxpr.outvars.empty() ? nullptr : &known;  // nothing known to compute
  s.known_params = std::move(known_params.set("jaxpr", split.known));
  s.known_consts = split.known_consts;
  s.unknown = &unknown;
  s.unknown_params = std::move(unknown_params.set("jaxpr", split.unknown));
  s.unknown_consts = split.unknown_consts;
  s.out_unknowns = split.out_unknowns;
  s.num_residuals = split.num_residuals;
  return s;
}

PartialEvalSplit stage_whole(const Primitive& p, const Params& params, size_t num_operands, size_t num_outputs) {
  PartialEvalSplit s;
  s.unknown = &p;
  s.unknown_params = params;
  for (size_t i = 0; i < num_operands; ++i) s.unknown_operands.push_back(i);  // every operand, known ones too
  s.unknown_returns_all = true;
  s.out_unknowns.assign(num_outputs, true);
  return s;
}

DceEquationResult dce_of_call(const std::vector<bool>& used_outputs, Equation& eqn) {
  const JaxprRef& body = call_body(eqn.params, eqn.primitive->name());
  DcedJaxpr d = dce_jaxpr(body->jaxpr, used_outputs);
  if (!d.changed) return DceEquationResult{std::move(d.used_inputs), false};
  if (eqn.params.has("num_residuals")) {  // linear_jit: residuals are its leading operands
    int64_t r = eqn.params.get_int("num_residuals"), kept = 0;
    for (int64_t i = 0; i < r; ++i) kept += d.used_inputs[static_cast<size_t>(i)];
    eqn.params.set("num_residuals", kept);
  }
  auto pruned = std::make_shared<ClosedJaxpr>();
  pruned->jaxpr = std::move(d.jaxpr);
  eqn.params.set("jaxpr", JaxprRef(pruned));
  drop_unused_inputs_and_outputs(eqn, d.used_inputs, used_outputs);
  return DceEquationResult{std::move(d.used_inputs), true};
}

void drop_unused_inputs_and_outputs(Equation& eqn, const std::vector<bool>& used_inputs,
                                    const std::vector<bool>& used_outputs) {
  std::vector<Atom> inputs;
  for (size_t i = 0; i < eqn.inputs.size(); ++i)
    if (used_inputs[i]) inputs.push_back(std::move(eqn.inputs[i]));
  eqn.inputs = std::move(inputs);
  std::vector<Var> outputs;
  for (size_t i = 0; i < eqn.outputs.size(); ++i)
    if (used_outputs[i]) outputs.push_back(std::move(eqn.outputs[i]));
  eqn.outputs = std::move(outputs);
}

JvpResult jvp_of_call(const JaxprRef& body, std::span<const Array> primals, std::span<const Array> tangents) {
  if (!body) fail("jvp", "a call has a null sub-program");
  std::vector<bool> nonzero(tangents.size());
  for (size_t i = 0; i < tangents.size(); ++i) nonzero[i] = tangents[i].valid();
  BodyPtr j = jvp_of_body(body, nonzero);
  return split_jvp_outputs(eval_jaxpr(j->body->jaxpr, {}, jvp_call_operands(*j, primals, tangents)), j->out_flags);
}

std::vector<Array> jvp_call_operands(const TransformedBody& jvp, std::span<const Array> primals,
                                     std::span<const Array> tangents) {
  std::vector<Array> in = jvp.consts;
  in.insert(in.end(), primals.begin(), primals.end());
  for (const Array& t : tangents)
    if (t.valid()) in.push_back(t);
  return in;
}

JvpResult split_jvp_outputs(std::vector<Array> outs, const std::vector<bool>& out_flags) {
  const size_t m = out_flags.size();
  JvpResult r;
  r.primals_out.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(m));
  r.tangents_out.resize(m);
  for (size_t i = 0, k = m; i < m; ++i)
    if (out_flags[i]) r.tangents_out[i] = std::move(outs[k++]);
  return r;
}

BatchResult batch_of_call(const JaxprRef& body, std::span<const Array> args, std::span<const int64_t> dims,
                          const BatchAxis& axis) {
  if (!body) fail("vmap", "a call has a null sub-program");
  BodyPtr b = batch_of_body(body, dims, axis, /*instantiate_all=*/true);
  std::vector<Array> in = b->consts;
  in.insert(in.end(), args.begin(), args.end());
  std::vector<Array> outs = eval_jaxpr(b->body->jaxpr, {}, in);
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

}  // namespace jx::detail
