// Primitives: the closed set of operations everything is built from, and bind(), the
// single entry point through which every operation passes, so that a transformation
// (the trace on top of the stack, or the one owning a tracer argument) can intercept it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "jx/array.h"

namespace jx {

// A primitive's static parameters (JAX's bind kwargs): a small sorted map from names
// to values, printable in the IR text, comparable and hashable (for CSE and caches).
using ParamValue = std::variant<bool, int64_t, double, std::vector<int64_t>, DType, std::string>;

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
};

class Primitive;

using AbstractEvalRule =
    std::function<std::vector<Aval>(std::span<const Aval> in, const Params& params)>;
// Computes concrete outputs on the CPU. `out` holds the avals abstract_eval produced.
using ImplRule = std::function<std::vector<Array>(std::span<const Array> in, const Params& params,
                                                  std::span<const Aval> out)>;

// One primitive: its name and every rule it has, defined in one place (one registration
// block per primitive in src/lax/). Later capabilities add their rules here.
class Primitive {
 public:
  struct Rules {
    uint32_t traits = 0;
    // Output count; -1 when it depends on the parameters (sort with several operands).
    int num_outputs = 1;
    AbstractEvalRule abstract_eval;
    ImplRule impl;
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
  // Eager evaluation on concrete arrays: abstract_eval, then impl.
  std::vector<Array> eval(std::span<const Array> in, const Params& params) const;

 private:
  std::string name_;
  Rules rules_;
};

// Registry: every primitive, by name (for the IR parser and coverage tests).
const Primitive* find_primitive(std::string_view name);
std::vector<const Primitive*> all_primitives();

namespace detail {

// An interpreter: the eager evaluator, jvp, batching and staging traces all implement
// process(). Traces form a stack; a trace deeper in the stack has a lower level.
class Trace {
 public:
  virtual ~Trace() = default;
  virtual std::vector<Array> process(const Primitive& p, std::span<const Array> in,
                                     const Params& params) = 0;
  // Which transformation this is, for error messages ("grad", "vmap", "jit").
  virtual std::string_view transformation() const = 0;
  int level() const { return level_; }
  void set_level(int level) { level_ = level; }

 private:
  int level_ = 0;
};

// The innermost trace to run `in` under: the highest-level trace among the tracer
// arguments and the dynamically installed one. nullptr means eager evaluation.
Trace* find_top_trace(std::span<const Array> in);

// Installs a trace for the dynamic extent of a scope (thread-local stack).
class TraceScope {
 public:
  explicit TraceScope(Trace* trace);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
};
int trace_stack_depth();

}  // namespace detail

// Applies a primitive to its operands under the current transformations.
std::vector<Array> bind(const Primitive& p, std::span<const Array> in, const Params& params = {});
// Single-output convenience.
Array bind1(const Primitive& p, std::initializer_list<Array> in, const Params& params = {});

}  // namespace jx
