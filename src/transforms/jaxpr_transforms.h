// The jaxpr-level transformation layer (JAX's jvp_jaxpr, batch_jaxpr,
// partial_eval_jaxpr_nounits, transpose via backward_pass, dce_jaxpr): each takes a
// program and returns a program. A primitive holding sub-programs (closed_call, jit,
// linear_jit, custom_jvp_call, later cond/while/scan) gets a transformation by applying
// these to its bodies, so its rules are a few lines each (see closed_call.cpp).
//
// Each function is one pass over the program, through the same interpreters the C++ API
// uses (the program is evaluated with eval_jaxpr under a jvp / batching / staging trace
// and staged again), so a primitive's rule is written once and serves both. Partial
// evaluation exists once: the staging trace's forward_known mode (staging.h), which
// linearize runs online and partial_eval_jaxpr runs over a program.
#pragma once

#include <string>
#include <vector>

#include "jx/jaxpr.h"

namespace jx::detail {

// ---- jvp ----
struct JvpJaxpr {
  // [primals..., tangents of the nonzero inputs...] -> [primal outs..., tangents of the nonzero outs...]
  ClosedJaxpr jaxpr;
  std::vector<bool> out_nonzero;  // per output: has a tangent input (or instantiate asked for one)
};
// `nonzero_tangents`: per input, whether it gets a tangent; `instantiate`: per output (or
// empty: none), whether a symbolically zero tangent becomes explicit zeros.
JvpJaxpr jvp_jaxpr(const ClosedJaxpr& program, const std::vector<bool>& nonzero_tangents,
                   const std::vector<bool>& instantiate);

// ---- batching ----
struct BatchedJaxpr {
  // Inputs as the program's with a batch axis of axis_size inserted at in_dims[i] (none
  // where kNotMapped); batched outputs carry it at axis 0.
  ClosedJaxpr jaxpr;
  std::vector<bool> out_batched;
};
// `instantiate`: per output (or empty: none), whether an unbatched output is broadcast
// to the batch anyway. `axis_name` names the axis for collectives.
BatchedJaxpr batch_jaxpr(const ClosedJaxpr& program, int64_t axis_size, const std::vector<int64_t>& in_dims,
                         const std::vector<bool>& instantiate, const std::string& axis_name = "");

// ---- partial evaluation ----
struct PartialEvalJaxpr {
  ClosedJaxpr known;    // [known inputs...] -> [known outputs..., residuals...]
  ClosedJaxpr unknown;  // [residuals..., unknown inputs...] -> [unknown outputs...]
  std::vector<bool> out_unknowns;
  size_t num_residuals = 0;
};
// Splits the program by which inputs are unknown: an equation reading an unknown value
// is unknown (or, for a primitive with a partial_eval rule, splits in two); the known
// values unknown equations read are the residuals. Known outputs flagged in
// `instantiate` (or empty: none) become unknown outputs too (passed through as residuals).
// Both halves are pruned (dce_jaxpr): the known one holds exactly the known work the
// outputs and residuals need.
PartialEvalJaxpr partial_eval_jaxpr(const ClosedJaxpr& program, const std::vector<bool>& unknowns,
                                    const std::vector<bool>& instantiate);

// ---- transposition ----
// A program linear in the inputs flagged `linear` -> its transpose:
// [non-linear inputs..., cotangents of the outputs flagged `ct_nonzero` (empty: all)...]
//   -> [one cotangent per linear input (zeros where none reaches it)].
// Built on backward_pass: non-linear equations are evaluated forward, the linear ones
// run backwards through their transpose rules; a non-linear primitive applied to a
// linear value raises naming it.
ClosedJaxpr transpose_jaxpr(const ClosedJaxpr& program, const std::vector<bool>& linear,
                            const std::vector<bool>& ct_nonzero = {});

// ---- dead-code elimination ----
struct DcedJaxpr {
  Jaxpr jaxpr;                       // only the used outputs (in order) and the used inputs
  std::vector<bool> used_inputs;     // per input of the original: whether the pruned program keeps it
  std::vector<bool> used_constvars;  // per constvar of the original (unused ones are dropped)
  bool changed = false;              // whether anything was removed or rewritten
  bool equations_changed = false;    // whether an equation was removed or rewritten
};
// Removes equations whose outputs are unused (unless they have side effects); a
// primitive's dce rule prunes inside it (a call drops its body's unused outputs and
// inputs). Inputs flagged in `keep_inputs` (or empty: none) stay even if unused.
DcedJaxpr dce_jaxpr(const Jaxpr& jaxpr, const std::vector<bool>& used_outputs,
                    const std::vector<bool>& keep_inputs = {});

// ---- helpers for call primitives ----
// A closed program as a call body (sub-programs hold no constvars): its constants
// become leading inputs, their values go to *consts (the call's leading operands).
JaxprRef body_with_consts_first(ClosedJaxpr program, std::vector<Array>* consts);
// The tangent type of a primal type (never weak).
Aval tangent_aval(const Aval& primal);

}  // namespace jx::detail
