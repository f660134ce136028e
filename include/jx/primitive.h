// Primitives: the closed set of operations everything is built from, and bind(), the
// single entry point through which every operation passes, so that a transformation
// (the trace on top of the stack, or the one owning a tracer argument) can intercept it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "jx/array.h"
#include "jx/lowering.h"

namespace jx {

struct ClosedJaxpr;  // jx/jaxpr.h
// A sub-program held as a parameter (the body of a call, later jit and control flow).
// Compared and hashed by identity, as JAX compares jaxprs.
using JaxprRef = std::shared_ptr<const ClosedJaxpr>;

// A primitive's static parameters (JAX's bind kwargs): a small sorted map from names
// to values, printable in the IR text, comparable and hashable (for CSE and caches).
using ParamValue = std::variant<bool, int64_t, double, std::vector<int64_t>, DType, std::string, JaxprRef>;

class Params {
 public:
  Params() = default;
  Params(std::initializer_list<std::pair<std::string, ParamValue>> items);

  Params& set(std::string name, ParamValue value);
  bool has(std::string_view name) const;
  const ParamValue& get(std::string_view name) const;  // throws if absent

  int64_t get_int(std::string_view name) const;
  double get_double(std::string_view name) const;
  bool get_bool(std::string_view name) const;
  DType get_dtype(std::string_view name) const;
  const std::vector<int64_t>& get_ints(std::string_view name) const;
  const std::string& get_string(std::string_view name) const;
  const JaxprRef& get_jaxpr(std::string_view name) const;

  const std::vector<std::pair<std::string, ParamValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  bool operator==(const Params& o) const { return items_ == o.items_; }
  size_t hash() const;
  // "axes=(0, 1) keepdims=False", as printed in the IR text.
  std::string str() const;

 private:
  std::vector<std::pair<std::string, ParamValue>> items_;  // sorted by name
};

// Properties of a primitive that passes and transformations ask for, never listing
// primitives by name (tinygrad's habit).
enum Trait : uint32_t {
  kElementwise = 1u << 0,   // out[i] depends on in[i] only; operands share one shape
  kCommutative = 1u << 1,   // binary op with f(a, b) == f(b, a)
  kLinear = 1u << 2,        // linear in its (float) operands: has a transpose rule
  kSideEffects = 1u << 3,   // must not be removed or reordered
  kReduction = 1u << 4,     // reduces over `axes`
  kShapeOnly = 1u << 5,     // moves or views data without arithmetic (reshape, slice...)
  kNotDifferentiable = 1u << 6,  // output carries no tangent (comparisons, argmax)
  kCallsSubprogram = 1u << 7,    // holds sub-programs in its params: passes recurse into them
  kCall = 1u << 8,  // a plain call: runs its `jaxpr` param once on its operands (inline_calls may inline it)
  // Communicates across the members of the named axes in its `axes` param (psum...):
  // never evaluated at compile time, and a vmap binding one of those names runs its
  // batching rule even when no operand is batched.
  kCollective = 1u << 9,
};

class Primitive;

// ---- the rule signatures ----
// Throughout, an invalid Array (`!a.valid()`) as a tangent or cotangent is a symbolic
// zero: the rule may skip work for it and may return one.

using AbstractEvalRule =
    std::function<std::vector<Aval>(std::span<const Aval> in, const Params& params)>;
// Computes concrete outputs on the CPU. `out` holds the avals abstract_eval produced.
using ImplRule = std::function<std::vector<Array>(std::span<const Array> in, const Params& params,
                                                  std::span<const Aval> out)>;

// Forward-mode derivative: the primal outputs and their tangents, given the primals and
// their tangents. Called only when some tangent is nonzero; computes with lax calls
// (so it composes with every other transformation). Tangents of integer and bool
// values are always symbolic zeros.
struct JvpResult {
  std::vector<Array> primals_out, tangents_out;
};
using JvpRule = std::function<JvpResult(std::span<const Array> primals, std::span<const Array> tangents,
                                        const Params& params)>;

// An operand of a linear primitive when transposing: either a known value, or the linear
// unknown (JAX's UndefinedPrimal), of which only the aval is known.
struct TransposeOperand {
  Array value;  // invalid when linear
  Aval aval;
  bool is_linear() const { return !value.valid(); }
};
// Reverse mode of a linear primitive: given output cotangents, the cotangent of each
// linear operand (invalid = zero; entries of known operands are ignored).
using TransposeRule = std::function<std::vector<Array>(std::span<const Array> cts,
                                                       std::span<const TransposeOperand> operands,
                                                       const Params& params)>;

// Batching: operand i carries a batch axis at dims[i], or kNotMapped. The rule returns
// the outputs and where their batch axes are (or kNotMapped).
inline constexpr int64_t kNotMapped = -1;
struct BatchAxis {
  int64_t size = 0;
  std::string name;  // vmap's axis_name, for collectives
};
struct BatchResult {
  std::vector<Array> outs;
  std::vector<int64_t> dims;
};
using BatchRule = std::function<BatchResult(std::span<const Array> args, std::span<const int64_t> dims,
                                            const Params& params, const BatchAxis& axis)>;

// ---- rules of primitives that hold sub-programs (src/transforms/jaxpr_transforms.h) ----
struct Equation;  // jx/jaxpr.h

// Partial evaluation of an application some of whose operands are unknown (staged): it
// splits into a known call, run now on the known operands, and an unknown call, staged,
// which reads the residuals the known call computed. Calls of sub-programs split their
// bodies with partial_eval_jaxpr (JAX's pjit partial eval).
struct PartialEvalSplit {
  // known(known_consts..., known operands...) -> (known outputs..., residuals...)
  const Primitive* known = nullptr;
  Params known_params;
  std::vector<Array> known_consts;
  // unknown(unknown_consts..., residuals..., unknown operands...) -> unknown outputs
  const Primitive* unknown = nullptr;
  Params unknown_params;
  std::vector<Array> unknown_consts;
  std::vector<bool> out_unknowns;  // per output of the application
  size_t num_residuals = 0;
  // For a primitive that reads its operands in a fixed layout (cond: the index first;
  // while: constants, then carries; scan: constants, carries, xs), the operands of each
  // call, as indices into
  //   known:   [known_consts..., the application's operands...]
  //   unknown: [unknown_consts..., residuals..., the application's operands...]
  // Empty: [known_consts..., known operands...] and [unknown_consts..., residuals...,
  // unknown operands...]. The known call reads no unknown operand; the unknown call may
  // read known ones (they become constants of the staged program: residuals).
  std::vector<size_t> known_operands, unknown_operands;
  // The unknown call returns every output of the application, of which the unknown ones
  // are used (while's unknown half is the whole loop, as in JAX).
  bool unknown_returns_all = false;
};
using PartialEvalRule = std::function<PartialEvalSplit(const std::vector<bool>& unknowns, const Params& params)>;

// Dead-code elimination of one equation, some of whose outputs are used: the rule may
// rewrite `eqn` (drop unused outputs and the operands only they needed, prune its body)
// and says which of the ORIGINAL operands the rewritten equation reads.
struct DceEquationResult {
  std::vector<bool> used_inputs;
  bool changed = false;  // whether eqn was rewritten
};
using DceRule = std::function<DceEquationResult(const std::vector<bool>& used_outputs, Equation& eqn)>;

// One primitive: its name and every rule it has, defined in one place (one registration
// block per primitive in src/lax/). Later capabilities add their rules here.
class Primitive {
 public:
  struct Rules {
    uint32_t traits = 0;
    // Output count; -1 when it depends on the parameters (sort with several operands).
    int num_outputs = 1;
    AbstractEvalRule abstract_eval;
    // A platform-neutral impl, for primitives computed by binding others (calls of
    // sub-programs) or defined by a user; it runs where the device's platform has no
    // kernel of its own. The built-in primitives' kernels are registered per platform
    // by their backend (src/backend/<platform>/kernels/), not here.
    ImplRule impl;
    JvpRule jvp;              // unset only when kNotDifferentiable
    TransposeRule transpose;  // set exactly when kLinear
    BatchRule batch;
    // How native kernels compute it (jx/lowering.h); empty: a runtime call of impl.
    lowering::Lowering lowering;
    // Rules of primitives that hold sub-programs (kCallsSubprogram), built on the jaxpr
    // transformation layer (src/transforms/jaxpr_transforms.h). Unset: partial evaluation
    // stages the whole application when any operand is unknown; dce keeps the equation
    // whole (reading every operand) while any output is used.
    PartialEvalRule partial_eval;
    DceRule dce;
  };

  Primitive(std::string name, Rules rules);  // registers itself
  Primitive(const Primitive&) = delete;
  Primitive& operator=(const Primitive&) = delete;

  const std::string& name() const { return name_; }
  bool has(Trait t) const { return (rules_.traits & t) != 0; }
  uint32_t traits() const { return rules_.traits; }
  const Rules& rules() const { return rules_; }

  // Shape/dtype rule; raises jx::Error naming this primitive and its operands.
  std::vector<Aval> abstract_eval(std::span<const Aval> in, const Params& params) const;
  // Eager evaluation on concrete arrays: abstract_eval, then run_impl.
  std::vector<Array> eval(std::span<const Array> in, const Params& params) const;
  // The CPU impl on operands whose result avals `out` are already known (eager, and the
  // jit executable's runtime calls): allocations it makes are named after this
  // primitive, and running out of memory is a jx::Error, not std::bad_alloc.
  std::vector<Array> run_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out) const;

 private:
  std::string name_;
  Rules rules_;
};

// Registry: every primitive, by name (for the IR parser and coverage tests).
const Primitive* find_primitive(std::string_view name);
std::vector<const Primitive*> all_primitives();

namespace detail {

// An interpreter: eager evaluation is the absence of one; jvp, linearize (partial
// evaluation), batching and staging (make_jaxpr, jit) implement process(). A
// transformation installs its trace as the current one while the user's function runs;
// every bind goes to the current trace, which unpacks its own tracers, treats anything
// else as a constant, and binds on its parent (the trace that was current when it was
// made) for the work below it. Levels count from 1 (the first trace above eager).
class Trace {
 public:
  Trace();  // parent = the current trace
  virtual ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  virtual std::vector<Array> process(const Primitive& p, std::span<const Array> in,
                                     const Params& params) = 0;
  // Which transformation this is, for error messages ("grad", "vmap", "jit").
  virtual std::string_view transformation() const = 0;
  // What a user should do instead of asking for a concrete value under this trace.
  virtual std::string_view concretization_hint() const { return ""; }
  Trace* parent() const { return parent_; }
  int level() const { return level_; }
  // A trace is dead once its transformation returned; its tracers have then leaked.
  bool alive() const { return state_->alive; }
  void kill() { state_->alive = false; }
  // Shared with this trace's tracers (see TraceState).
  const std::shared_ptr<TraceState>& state() const { return state_; }

 protected:
  // Subclasses name themselves here (the name tracers report once the trace is gone).
  void set_name(std::string name) { state_->transformation = std::move(name); }

 private:
  Trace* parent_;
  int level_;
  std::shared_ptr<TraceState> state_;
};

// The trace bind() sends operations to (nullptr: eager evaluation).
Trace* current_trace();
// Makes `trace` (may be nullptr) current for the dynamic extent of a scope.
class TraceScope {
 public:
  explicit TraceScope(Trace* trace);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  Trace* saved_;
};
// How many transformations are active (the current trace's level; 0 when eager).
int trace_stack_depth();

}  // namespace detail

// Applies a primitive to its operands under the current transformations.
std::vector<Array> bind(const Primitive& p, std::span<const Array> in, const Params& params = {});
// Single-output convenience.
Array bind1(const Primitive& p, std::initializer_list<Array> in, const Params& params = {});

}  // namespace jx
