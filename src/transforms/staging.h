// Staging: the interpreter that records primitives into a Jaxpr instead of running them.
// Used fully by make_jaxpr and jit, and as partial evaluation (JAX's JaxprTrace), the
// ONE implementation of it: with `forward_known`, an operation none of whose operands
// are this trace's tracers is "known" and runs one level down; operations touching the
// staged (unknown) values are recorded, and a primitive with a partial_eval rule (a call
// of a sub-program) splits into a known call run below and an unknown call recorded.
// linearize runs it online (the primal work runs now); partial_eval_jaxpr runs it over a
// program with the known inputs staged by an outer full staging trace. Constants an
// equation needs become literals (concrete 0-d values) or constvars (everything else,
// deduplicated by identity): under partial evaluation these are the residuals.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "jx/jaxpr.h"
#include "jx/primitive.h"
#include "jx/transforms.h"

namespace jx::detail {

class StagingTrace;

class StagingTracer final : public Tracer {
 public:
  StagingTracer(StagingTrace* trace, Var var);
  Trace* trace() const override;
  const TraceState* state() const override { return state_.get(); }
  const Var& var() const { return var_; }

 private:
  StagingTrace* trace_;
  std::shared_ptr<const TraceState> state_;
  Var var_;
};

class StagingTrace final : public Trace {
 public:
  StagingTrace(std::string name, bool forward_known) : name_(std::move(name)), forward_known_(forward_known) {
    set_name(name_);
  }
  std::vector<Array> process(const Primitive& p, std::span<const Array> in, const Params& params) override;
  std::string_view transformation() const override { return name_; }
  std::string_view concretization_hint() const override;

  // A new program input of type `aval`, returned as this trace's tracer.
  Array new_input(const Aval& aval);
  // Whether x is one of this trace's tracers (an unknown, staged value).
  bool owns(const Array& x) const;
  // Closes the program over `outs` (tracers of this trace or constants) and returns it;
  // the trace is dead afterwards.
  ClosedJaxpr finish(std::span<const Array> outs);

 private:
  // Records one equation of p applied to `in`; its outputs are new tracers.
  std::vector<Array> stage(const Primitive& p, std::span<const Array> in, const Params& params);
  // p's partial_eval rule applied to operands of which those flagged are unknown.
  std::vector<Array> split(const Primitive& p, std::span<const Array> in, const Params& params,
                           const std::vector<bool>& unknowns);
  // `op` names the operation reading x, for the leaked-tracer error.
  Atom atom_for(const Array& x, std::string_view op);
  Var fresh_var(const Aval& aval);

  std::string name_;
  bool forward_known_;
  int64_t next_id_ = 0;
  std::vector<Var> invars_, constvars_;
  std::vector<Array> consts_;
  std::unordered_map<const void*, size_t> const_index_;  // Array::id() -> constvars_ slot
  std::vector<Equation> eqns_;
};

// f staged over inputs of these types by a full (not partial) staging trace named `name`
// (the transformation concretization errors name): make_jaxpr and jit both stage this way.
ClosedJaxpr stage_flat(const FlatFn& f, std::span<const Aval> in_avals, std::string name);

// A tracer Array holding `tracer`, of type `aval`.
Array make_tracer_array(Aval aval, std::shared_ptr<Tracer> tracer);

}  // namespace jx::detail
