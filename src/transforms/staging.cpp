#include "transforms/staging.h"

#include "core/array_internal.h"
#include "jx/error.h"

namespace jx::detail {

StagingTracer::StagingTracer(StagingTrace* trace, Var var)
    : trace_(trace), state_(trace->state()), var_(std::move(var)) {}
Trace* StagingTracer::trace() const { return state_->alive ? trace_ : nullptr; }

Array make_tracer_array(Aval aval, std::shared_ptr<Tracer> tracer) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = std::move(aval);
  impl->tracer = std::move(tracer);
  return Array(std::move(impl));
}

std::string_view StagingTrace::concretization_hint() const {
  return "Values are abstract while a function is staged into a program: choose with jx::lax::select / "
         "jnp::where, or make the value a static argument.";
}

Var StagingTrace::fresh_var(const Aval& aval) { return Var{next_id_++, aval}; }

Array StagingTrace::new_input(const Aval& aval) {
  Var v = fresh_var(aval);
  invars_.push_back(v);
  return make_tracer_array(aval, std::make_shared<StagingTracer>(this, v));
}

bool StagingTrace::owns(const Array& x) const {
  const auto& impl = x.impl();
  return impl.tracer && impl.tracer->state() == state().get();
}

Atom StagingTrace::atom_for(const Array& x, std::string_view op) {
  const ArrayImpl& impl = x.impl();
  if (impl.tracer && impl.tracer->state() == state().get()) return static_cast<const StagingTracer&>(*impl.tracer).var();
  if (!impl.tracer) check_not_deleted(impl, op);
  if (!impl.tracer && impl.aval.ndim() == 0) return Literal{x};
  // Anything else becomes a constant of the program: a leaked tracer must not (its
  // transformation is gone, so nothing will ever supply its value).
  check_not_leaked(x, op);
  auto [it, inserted] = const_index_.emplace(x.id(), constvars_.size());
  if (inserted) {
    constvars_.push_back(fresh_var(impl.aval));
    consts_.push_back(x);
  }
  return constvars_[it->second];
}

std::vector<Array> StagingTrace::process(const Primitive& p, std::span<const Array> in, const Params& params) {
  if (!alive()) fail(p.name(), "was applied to a value staged by a ", name_, " trace that has already finished");
  if (forward_known_) {
    size_t num_unknown = 0;
    for (const Array& x : in) num_unknown += owns(x);
    if (num_unknown == 0) {
      TraceScope below(parent());
      return jx::bind(p, in, params);
    }
    if (num_unknown < in.size() && p.rules().partial_eval) {
      std::vector<bool> unknowns(in.size());
      for (size_t i = 0; i < in.size(); ++i) unknowns[i] = owns(in[i]);
      return split(p, in, params, unknowns);
    }
  }
  return stage(p, in, params);
}

std::vector<Array> StagingTrace::stage(const Primitive& p, std::span<const Array> in, const Params& params) {
  std::vector<Aval> in_avals;
  in_avals.reserve(in.size());
  Equation eqn;
  eqn.primitive = &p;
  eqn.params = params;
  eqn.inputs.reserve(in.size());
  for (const Array& x : in) {
    in_avals.push_back(x.aval());
    eqn.inputs.push_back(atom_for(x, p.name()));
  }
  std::vector<Aval> out_avals = p.abstract_eval(in_avals, params);
  std::vector<Array> outs;
  outs.reserve(out_avals.size());
  for (Aval& a : out_avals) {
    Var v = fresh_var(a);
    eqn.outputs.push_back(v);
    outs.push_back(make_tracer_array(std::move(a), std::make_shared<StagingTracer>(this, std::move(v))));
  }
  eqns_.push_back(std::move(eqn));
  return outs;
}

// The known call runs one level down now; the unknown call is recorded, reading the
// residuals the known call returned (constants of this program: under linearize the
// values the linear program closes over).
std::vector<Array> StagingTrace::split(const Primitive& p, std::span<const Array> in, const Params& params,
                                       const std::vector<bool>& unknowns) {
  PartialEvalSplit s = p.rules().partial_eval(unknowns, params);
  // Operand k of a call is element order[k] of [leading..., in...] (an empty order: the
  // leading values, then the call's own operands: the known or the unknown ones). A known
  // operand the unknown call reads becomes a constant of this program, as residuals do.
  auto gather = [&](std::vector<Array> leading, const std::vector<size_t>& order, bool known_call) {
    std::vector<Array> out;
    if (order.empty()) {
      out = std::move(leading);
      for (size_t i = 0; i < in.size(); ++i)
        if (unknowns[i] != known_call) out.push_back(in[i]);
      return out;
    }
    for (size_t k : order) {
      const bool is_operand = k >= leading.size() && k - leading.size() < in.size();
      if (k >= leading.size() + in.size() || (known_call && is_operand && unknowns[k - leading.size()]))
        fail(p.name(), "partial_eval rule gave the ", known_call ? "known" : "unknown", " call operand ", k,
             ", which it cannot read (a bug in the rule)");
      out.push_back(is_operand ? in[k - leading.size()] : leading[k]);
    }
    return out;
  };
  std::vector<Array> known_in = gather(std::move(s.known_consts), s.known_operands, true);
  std::vector<Array> known_out;
  if (s.known) {
    TraceScope below(parent());
    known_out = jx::bind(*s.known, known_in, s.known_params);
  }
  if (known_out.size() < s.num_residuals)
    fail(p.name(), "partial_eval rule's known call returned ", known_out.size(), " values for ", s.num_residuals,
         " residuals (a bug in the rule)");
  const size_t num_known = known_out.size() - s.num_residuals;
  std::vector<Array> leading = std::move(s.unknown_consts);
  leading.insert(leading.end(), known_out.begin() + static_cast<std::ptrdiff_t>(num_known), known_out.end());
  std::vector<Array> unknown_in = gather(std::move(leading), s.unknown_operands, false);
  size_t num_unknown = 0;
  for (bool u : s.out_unknowns) num_unknown += u;
  std::vector<Array> unknown_out;
  if (num_unknown > 0) unknown_out = stage(*s.unknown, unknown_in, s.unknown_params);
  if (s.unknown_returns_all && unknown_out.size() == s.out_unknowns.size()) {
    std::vector<Array> picked;
    for (size_t i = 0; i < unknown_out.size(); ++i)
      if (s.out_unknowns[i]) picked.push_back(std::move(unknown_out[i]));
    unknown_out = std::move(picked);
  }
  if (unknown_out.size() != num_unknown || num_known + num_unknown != s.out_unknowns.size())
    fail(p.name(), "partial_eval rule split ", s.out_unknowns.size(), " outputs into ", num_known, " known and ",
         unknown_out.size(), " unknown ones (a bug in the rule)");
  std::vector<Array> outs;
  outs.reserve(s.out_unknowns.size());
  for (size_t i = 0, k = 0, u = 0; i < s.out_unknowns.size(); ++i)
    outs.push_back(s.out_unknowns[i] ? std::move(unknown_out[u++]) : std::move(known_out[k++]));
  return outs;
}

ClosedJaxpr StagingTrace::finish(std::span<const Array> outs) {
  std::vector<Atom> outvars;
  outvars.reserve(outs.size());
  for (const Array& x : outs) outvars.push_back(atom_for(x, name_));
  kill();
  ClosedJaxpr out;
  out.jaxpr.constvars = std::move(constvars_);
  out.jaxpr.invars = std::move(invars_);
  out.jaxpr.eqns = std::move(eqns_);
  out.jaxpr.outvars = std::move(outvars);
  out.consts = std::move(consts_);
  return out;
}

ClosedJaxpr stage_flat(const FlatFn& f, std::span<const Aval> in_avals, std::string name) {
  StagingTrace trace{std::move(name), /*forward_known=*/false};
  std::vector<Array> outs;
  {
    TraceScope scope(&trace);
    std::vector<Array> in;
    for (const Aval& a : in_avals) in.push_back(trace.new_input(a));
    outs = f(in);
  }
  return trace.finish(outs);
}

}  // namespace jx::detail
