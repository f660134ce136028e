#include "jit/jit_primitive.h"

#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "jit/executable.h"
#include "jx/error.h"
#include "transforms/ad_util.h"
#include "transforms/call_rules.h"
#include "transforms/linearize.h"
#include "transforms/staging.h"

namespace jx::detail {
namespace {

// A process-wide cache keyed on a body's identity (and a small discriminator), holding
// the body weakly so a freed program's entry is recognised and dropped.
template <class V>
class BodyKeyedCache {
 public:
  template <class Make>
  V get(const JaxprRef& body, const std::string& discriminator, Make make) {
    std::lock_guard lock(mu_);  // recursive: making an entry may consult another cache
    auto key = std::make_pair(body.get(), discriminator);
    auto it = map_.find(key);
    if (it != map_.end() && it->second.first.lock() == body) return it->second.second;
    for (auto i = map_.begin(); i != map_.end();) i = i->second.first.expired() ? map_.erase(i) : std::next(i);
    V v = make();
    map_[key] = {body, v};
    return v;
  }

 private:
  std::recursive_mutex mu_;
  std::map<std::pair<const ClosedJaxpr*, std::string>, std::pair<std::weak_ptr<const ClosedJaxpr>, V>> map_;
};

const JaxprRef& body_of(const Params& params, std::string_view prim) { return call_body(params, prim); }

FlatFn body_fn(const Params& params, std::string_view prim) {
  JaxprRef j = body_of(params, prim);
  return [j](std::span<const Array> xs) { return eval_jaxpr(j->jaxpr, {}, xs); };
}

std::vector<Array> run_body(std::span<const Array> in, const Params& params, std::string_view prim) {
  return body_executable(body_of(params, prim), params.get_string("name"))->run(in);
}

// vmap of a call: the batched body, staged and called again with the same primitive, so
// the batched program stays compiled. New constants join the leading operands (for
// linear_jit they are residuals: num_residuals grows by their count).
BatchResult batch_call(const Primitive& p, std::span<const Array> args, std::span<const int64_t> dims,
                       const Params& params, const BatchAxis& axis) {
  std::vector<std::optional<int64_t>> in_dims;
  for (int64_t d : dims) in_dims.push_back(d == kNotMapped ? std::nullopt : std::optional<int64_t>(d));
  std::vector<std::optional<int64_t>> out_dims{0};
  FlatFn body = body_fn(params, p.name());
  FlatFn batched = [&](std::span<const Array> xs) { return vmap_flat(body, xs, in_dims, out_dims, axis); };
  std::vector<Aval> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  std::vector<Array> consts;
  JaxprRef batched_body = stage_body(batched, avals, &consts);
  std::vector<Array> operands = consts;
  operands.insert(operands.end(), args.begin(), args.end());
  Params out_params = params;
  out_params.set("jaxpr", batched_body);
  if (params.has("num_residuals"))
    out_params.set("num_residuals", params.get_int("num_residuals") + static_cast<int64_t>(consts.size()));
  std::vector<Array> outs = jx::bind(p, operands, out_params);
  return BatchResult{outs, std::vector<int64_t>(outs.size(), 0)};
}

// ---- differentiation: the jvp program split into known and linear halves ----

struct JvpSplit {
  JaxprRef known;                   // [consts..., primals...] -> [primal outs..., residuals...]
  std::vector<Array> known_consts;
  JaxprRef linear;                  // [residuals..., nonzero tangents...] -> nonzero tangent outs
  size_t num_primal_outs = 0, num_residuals = 0;
  std::vector<bool> out_nonzero;    // per primal output: has a tangent depending on the inputs'
};

// Partial evaluation of a jvp program whose first n inputs are primals (known) and the
// rest tangents (unknown): equations touching an unknown value go to the linear half;
// known values they read become residuals, outputs of the known half.
std::shared_ptr<const JvpSplit> split_jvp(const ClosedJaxpr& jvp, size_t n, size_t num_outs, const std::string& name) {
  const Jaxpr& j = jvp.jaxpr;
  std::unordered_set<int64_t> unknown;
  for (size_t i = n; i < j.invars.size(); ++i) unknown.insert(j.invars[i].id);
  std::vector<Equation> known_eqns, linear_eqns;
  std::vector<Var> residuals;
  std::unordered_set<int64_t> residual_ids;
  auto add_residual = [&](const Atom& a) {
    if (a.is_var() && !unknown.count(a.var().id) && residual_ids.insert(a.var().id).second)
      residuals.push_back(a.var());
  };
  for (const Equation& e : j.eqns) {
    bool is_unknown = false;
    for (const Atom& a : e.inputs) is_unknown |= a.is_var() && unknown.count(a.var().id);
    if (!is_unknown) {
      known_eqns.push_back(e);
      continue;
    }
    for (const Atom& a : e.inputs) add_residual(a);
    for (const Var& v : e.outputs) unknown.insert(v.id);
    linear_eqns.push_back(e);
  }
  auto split = std::make_shared<JvpSplit>();
  split->num_primal_outs = num_outs;
  for (size_t i = 0; i < num_outs; ++i)
    if (j.outvars[i].is_var() && unknown.count(j.outvars[i].var().id))
      fail(name, "internal: a primal output of the jvp program depends on tangents");
  auto known = std::make_shared<ClosedJaxpr>();
  known->jaxpr.invars = j.constvars;
  known->jaxpr.invars.insert(known->jaxpr.invars.end(), j.invars.begin(), j.invars.begin() + n);
  known->jaxpr.eqns = std::move(known_eqns);
  known->jaxpr.outvars.assign(j.outvars.begin(), j.outvars.begin() + num_outs);
  for (const Var& r : residuals) known->jaxpr.outvars.push_back(r);
  split->known = known;
  split->known_consts = jvp.consts;
  split->num_residuals = residuals.size();

  auto linear = std::make_shared<ClosedJaxpr>();
  linear->jaxpr.invars = residuals;
  linear->jaxpr.invars.insert(linear->jaxpr.invars.end(), j.invars.begin() + n, j.invars.end());
  linear->jaxpr.eqns = std::move(linear_eqns);
  for (size_t i = num_outs; i < j.outvars.size(); ++i) {
    // A tangent output computed from known values only is a constant, hence zero by linearity.
    bool nonzero = j.outvars[i].is_var() && unknown.count(j.outvars[i].var().id);
    split->out_nonzero.push_back(nonzero);
    if (nonzero) linear->jaxpr.outvars.push_back(j.outvars[i]);
  }
  split->linear = linear;
  return split;
}

std::string mask_str(const std::vector<bool>& mask) {
  std::string s;
  for (bool b : mask) s += b ? '1' : '0';
  return s;
}

BodyKeyedCache<std::shared_ptr<const JvpSplit>>& split_cache() {
  static auto* c = new BodyKeyedCache<std::shared_ptr<const JvpSplit>>;
  return *c;
}

extern const Primitive jit_p;
extern const Primitive linear_jit_p;

JvpResult jit_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  const JaxprRef& body = body_of(params, "jit");
  const std::string& name = params.get_string("name");
  std::vector<bool> nonzero(tangents.size());
  for (size_t i = 0; i < tangents.size(); ++i) nonzero[i] = tangents[i].valid();
  size_t n = primals.size();
  size_t num_outs = body->jaxpr.outvars.size();
  auto split = split_cache().get(body, mask_str(nonzero), [&] {
    FlatFn f = body_fn(params, "jit");
    FlatFn jvp_fn = [&](std::span<const Array> xs) {
      std::vector<Array> ts(n);
      for (size_t i = 0, k = n; i < n; ++i)
        if (nonzero[i]) ts[i] = xs[k++];
      auto [po, to] = jvp_flat(f, xs.first(n), ts, "jvp");
      po.insert(po.end(), to.begin(), to.end());
      return po;
    };
    std::vector<Aval> avals;
    for (const Array& p : primals) avals.push_back(p.aval());
    for (size_t i = 0; i < n; ++i)
      if (nonzero[i]) avals.push_back(Aval{primals[i].shape(), primals[i].dtype(), false});
    return split_jvp(make_jaxpr_flat(jvp_fn, avals), n, num_outs, name);
  });
  std::vector<Array> known_in = split->known_consts;
  known_in.insert(known_in.end(), primals.begin(), primals.end());
  std::vector<Array> known_out = jx::bind(jit_p, known_in, {{"jaxpr", split->known}, {"name", name + "_jvp"}});
  std::vector<Array> primals_out(known_out.begin(), known_out.begin() + num_outs);
  std::vector<Array> lin_in(known_out.begin() + num_outs, known_out.end());
  for (size_t i = 0; i < n; ++i)
    if (nonzero[i]) lin_in.push_back(tangents[i]);
  std::vector<Array> tangents_out(num_outs);
  if (!split->linear->jaxpr.outvars.empty()) {
    std::vector<Array> t = jx::bind(linear_jit_p, lin_in,
                                    {{"jaxpr", split->linear},
                                     {"name", name + "_lin"},
                                     {"num_residuals", static_cast<int64_t>(split->num_residuals)}});
    for (size_t i = 0, k = 0; i < num_outs; ++i)
      if (split->out_nonzero[i]) tangents_out[i] = t[k++];
  }
  return JvpResult{std::move(primals_out), std::move(tangents_out)};
}

// ---- transposing linear_jit: its backward pass, staged and compiled ----

struct Transposed {
  JaxprRef body;  // [consts..., residuals..., nonzero cts...] -> one ct per linear input
  std::vector<Array> consts;
};

BodyKeyedCache<std::shared_ptr<const Transposed>>& transpose_cache() {
  static auto* c = new BodyKeyedCache<std::shared_ptr<const Transposed>>;
  return *c;
}

std::vector<Array> linear_jit_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                        const Params& params) {
  const JaxprRef& body = body_of(params, "linear_jit");
  size_t r = static_cast<size_t>(params.get_int("num_residuals"));
  std::vector<bool> ct_nonzero(cts.size());
  for (size_t i = 0; i < cts.size(); ++i) ct_nonzero[i] = cts[i].valid();
  for (size_t i = 0; i < r; ++i)
    if (operands[i].is_linear()) fail("linear_jit", "internal: residual operand ", i, " is linear");
  auto t = transpose_cache().get(body, mask_str(ct_nonzero), [&] {
    // The body with its residuals as constants: linear in the remaining inputs.
    Jaxpr lin = body->jaxpr;
    lin.constvars.assign(body->jaxpr.invars.begin(), body->jaxpr.invars.begin() + r);
    lin.invars.assign(body->jaxpr.invars.begin() + r, body->jaxpr.invars.end());
    FlatFn backward = [&](std::span<const Array> xs) {
      std::vector<Array> all_cts(cts.size());
      for (size_t i = 0, k = r; i < cts.size(); ++i)
        if (ct_nonzero[i]) all_cts[i] = xs[k++];
      std::vector<Array> in_cts = backward_pass(lin, xs.first(r), all_cts, "grad");
      for (size_t i = 0; i < in_cts.size(); ++i)
        if (!in_cts[i].valid()) in_cts[i] = ad::zeros(Aval{lin.invars[i].aval.shape, lin.invars[i].aval.dtype, false});
      return in_cts;
    };
    std::vector<Aval> avals;
    for (size_t i = 0; i < r; ++i) avals.push_back(operands[i].aval);
    for (size_t i = 0; i < cts.size(); ++i)
      if (ct_nonzero[i]) avals.push_back(cts[i].aval());
    auto out = std::make_shared<Transposed>();
    out->body = stage_body(backward, avals, &out->consts);
    return std::shared_ptr<const Transposed>(out);
  });
  std::vector<Array> in = t->consts;
  for (size_t i = 0; i < r; ++i) in.push_back(operands[i].value);
  for (size_t i = 0; i < cts.size(); ++i)
    if (ct_nonzero[i]) in.push_back(cts[i]);
  std::vector<Array> lin_cts =
      jx::bind(jit_p, in, {{"jaxpr", t->body}, {"name", params.get_string("name") + "_transpose"}});
  std::vector<Array> out(operands.size());
  for (size_t i = r; i < operands.size(); ++i) out[i] = lin_cts[i - r];
  return out;
}

const Primitive jit_p("jit", {.traits = 0,
                              .num_outputs = -1,
                              .abstract_eval = [](std::span<const Aval> in,
                                                  const Params& params) { return call_out_avals("jit", in, params); },
                              .impl = [](std::span<const Array> in, const Params& params,
                                         std::span<const Aval>) { return run_body(in, params, "jit"); },
                              .jvp = jit_jvp,
                              .batch = [](std::span<const Array> args, std::span<const int64_t> dims,
                                          const Params& params, const BatchAxis& axis) {
                                return batch_call(jit_p, args, dims, params, axis);
                              }});

// Linear in the operands after num_residuals. Its jvp (needed only for higher-order
// derivatives, where residuals carry tangents too) differentiates the body inline.
const Primitive linear_jit_p(
    "linear_jit",
    {.traits = kLinear,
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
     .jvp =
         [](std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
           return jvp_of_call(body_of(params, "linear_jit"), primals, tangents);
         },
     .transpose = linear_jit_transpose,
     .batch = [](std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                 const BatchAxis& axis) { return batch_call(linear_jit_p, args, dims, params, axis); }});

BodyKeyedCache<std::shared_ptr<const compiler::Executable>>& executable_cache() {
  static auto* c = new BodyKeyedCache<std::shared_ptr<const compiler::Executable>>;
  return *c;
}

}  // namespace

const Primitive& jit_primitive() { return jit_p; }

JaxprRef stage_body(const FlatFn& f, std::span<const Aval> avals, std::vector<Array>* consts_out) {
  return stage_flat_consts_first(f, avals, "jit", consts_out);
}

std::shared_ptr<const compiler::Executable> body_executable(const JaxprRef& body, const std::string& name) {
  return executable_cache().get(body, "", [&] {
    return compiler::compile_program(*body, compiler::compile_options_from_config(name));
  });
}

}  // namespace jx::detail
