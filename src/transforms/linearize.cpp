#include "transforms/linearize.h"

#include <unordered_map>
#include <unordered_set>

#include "jx/error.h"
#include "jx/lax.h"
#include "transforms/ad_util.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/jvp.h"
#include "transforms/staging.h"

namespace jx::detail {

// The tangent inputs are the partial-evaluation trace's unknowns: what reads only primals
// runs now (one level down), what reads a tangent is recorded, and a call splits by its
// partial_eval rule (staging.cpp), the same mechanism partial_eval_jaxpr runs over programs.
Linearized linearize_flat(const FlatFn& fn, std::span<const Array> primals, std::string_view name) {
  auto lin = std::make_shared<LinearFunction>();
  lin->name = std::string(name);
  StagingTrace staging{std::string(name), /*forward_known=*/true};
  std::vector<Array> outs;
  std::vector<Array> primals_out, tangents_out;
  {
    TraceScope stage_scope(&staging);
    JvpTrace jvp{std::string(name)};
    std::vector<Array> inputs;
    inputs.reserve(primals.size());
    for (const Array& p : primals) {
      if (!p.valid()) fail(name, "got a null jx::Array argument");
      lin->in_avals.push_back(p.aval());
      Array t = staging.new_input(tangent_aval(p.aval()));
      inputs.push_back(jvp.pack(p, t));
    }
    {
      TraceScope jvp_scope(&jvp);
      outs = fn(inputs);
    }
    jvp.kill();
    for (const Array& o : outs) {
      auto [p, t] = jvp.unpack(o);
      if (t.valid() && !staging.owns(t)) t = Array();  // a known tangent is a constant, so zero by linearity
      primals_out.push_back(std::move(p));
      tangents_out.push_back(std::move(t));
    }
  }
  std::vector<Array> nonzero;
  for (size_t i = 0; i < primals_out.size(); ++i) {
    lin->out_avals.push_back(primals_out[i].aval());
    lin->out_nonzero.push_back(tangents_out[i].valid());
    if (tangents_out[i].valid()) nonzero.push_back(tangents_out[i]);
  }
  lin->jaxpr = staging.finish(nonzero);
  return Linearized{std::move(primals_out), std::move(lin)};
}

std::vector<Array> apply_linear(const LinearFunction& lin, std::span<const Array> tangents) {
  if (tangents.size() != lin.in_avals.size())
    fail(lin.name, "the linear function takes ", lin.in_avals.size(), " tangents, got ", tangents.size());
  std::vector<Array> ins;
  for (size_t i = 0; i < tangents.size(); ++i) {
    if (tangents[i].shape() != lin.in_avals[i].shape)
      fail(lin.name, "tangent ", i, " has type ", tangents[i].aval().str(), " but the primal is ",
           lin.in_avals[i].str());
    ins.push_back(tangents[i]);
  }
  std::vector<Array> nz = eval_jaxpr(lin.jaxpr, ins);
  std::vector<Array> out;
  size_t k = 0;
  for (size_t i = 0; i < lin.out_avals.size(); ++i)
    out.push_back(lin.out_nonzero[i] ? nz[k++] : ad::zeros(tangent_aval(lin.out_avals[i])));
  return out;
}

std::vector<Array> transpose_linear(const LinearFunction& lin, std::span<const Array> cts) {
  if (cts.size() != lin.out_avals.size())
    fail(lin.name, "the pullback takes ", lin.out_avals.size(), " cotangents, got ", cts.size());
  std::vector<Array> nz;
  for (size_t i = 0; i < cts.size(); ++i) {
    if (cts[i].valid() && cts[i].shape() != lin.out_avals[i].shape)
      fail(lin.name, "cotangent ", i, " has type ", cts[i].aval().str(), " but the output is ",
           lin.out_avals[i].str());
    if (lin.out_nonzero[i]) {
      Array ct = cts[i];
      if (ct.valid() && ct.dtype() != lin.out_avals[i].dtype) ct = lax::convert_element_type(ct, lin.out_avals[i].dtype);
      nz.push_back(ct);
    }
  }
  std::vector<Array> in_cts = backward_pass(lin.jaxpr.jaxpr, lin.jaxpr.consts, nz, lin.name);
  for (size_t i = 0; i < in_cts.size(); ++i)
    if (!in_cts[i].valid()) in_cts[i] = ad::zeros(tangent_aval(lin.in_avals[i]));
  return in_cts;
}

std::vector<Array> backward_pass(const Jaxpr& jaxpr, std::span<const Array> consts, std::span<const Array> cts,
                                 std::string_view transformation) {
  // Known values: constvars, and equations with no linear operand (evaluated forward).
  std::unordered_map<int64_t, Array> known;
  for (size_t i = 0; i < jaxpr.constvars.size(); ++i) known.emplace(jaxpr.constvars[i].id, consts[i]);
  std::unordered_set<int64_t> linear;
  for (const Var& v : jaxpr.invars) linear.insert(v.id);
  std::vector<const Equation*> linear_eqns;
  for (const Equation& e : jaxpr.eqns) {
    bool is_linear = false;
    for (const Atom& a : e.inputs) is_linear |= a.is_var() && linear.count(a.var().id);
    if (is_linear) {
      for (const Var& v : e.outputs) linear.insert(v.id);
      linear_eqns.push_back(&e);
      continue;
    }
    std::vector<Array> in;
    for (const Atom& a : e.inputs) in.push_back(a.is_var() ? known.at(a.var().id) : a.literal().value);
    std::vector<Array> out = jx::bind(*e.primitive, in, e.params);
    for (size_t i = 0; i < out.size(); ++i) known.emplace(e.outputs[i].id, std::move(out[i]));
  }

  std::unordered_map<int64_t, Array> ct_env;
  auto accumulate = [&](const Var& v, Array ct) {
    if (!ct.valid()) return;
    if (ct.shape() != v.aval.shape)
      fail(transformation, "internal: cotangent ", ct.aval().str(), " for a value of type ", v.aval.str());
    auto [it, inserted] = ct_env.emplace(v.id, ct);
    if (!inserted) it->second = ad::add_tangents(it->second, ct);
  };
  for (size_t i = 0; i < jaxpr.outvars.size(); ++i)
    if (jaxpr.outvars[i].is_var() && linear.count(jaxpr.outvars[i].var().id)) accumulate(jaxpr.outvars[i].var(), cts[i]);

  for (auto it = linear_eqns.rbegin(); it != linear_eqns.rend(); ++it) {
    const Equation& e = **it;
    std::vector<Array> out_cts;
    bool any = false;
    for (const Var& v : e.outputs) {
      auto f = ct_env.find(v.id);
      if (f != ct_env.end()) {
        out_cts.push_back(std::move(f->second));
        ct_env.erase(f);
        any = true;
      } else {
        out_cts.push_back(Array());
      }
    }
    if (!any) continue;
    const Primitive& p = *e.primitive;
    if (!p.rules().transpose)
      fail(p.name(), "is not linear (it has no transpose rule), so ", transformation,
           " cannot run it backwards; it was applied to a tangent value");
    std::vector<TransposeOperand> operands;
    operands.reserve(e.inputs.size());
    for (const Atom& a : e.inputs) {
      if (!a.is_var()) operands.push_back({a.literal().value, a.aval()});
      else if (linear.count(a.var().id)) operands.push_back({Array(), a.var().aval});
      else operands.push_back({known.at(a.var().id), a.var().aval});
    }
    std::vector<Array> in_cts = p.rules().transpose(out_cts, operands, e.params);
    if (in_cts.size() != operands.size())
      fail(p.name(), "transpose rule returned ", in_cts.size(), " cotangents for ", operands.size(), " operands");
    for (size_t i = 0; i < operands.size(); ++i)
      if (operands[i].is_linear()) accumulate(e.inputs[i].var(), std::move(in_cts[i]));
  }
  std::vector<Array> out;
  for (const Var& v : jaxpr.invars) {
    auto f = ct_env.find(v.id);
    out.push_back(f == ct_env.end() ? Array() : f->second);
  }
  return out;
}

}  // namespace jx::detail
