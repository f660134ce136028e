// The IR of a traced program (JAX's jaxpr): typed SSA equations over the primitive set.
//
//   { lambda a:f32[3]; b:f32[3] c:f32[]. let
//       d:f32[3] = sin b
//       e:f32[3] = mul d a
//       f:f32[] = reduce_sum[axes=(0,)] e
//       g:f32[] = add f 2.0:f32[]
//     in (g, d) }
//
// Variables before ';' are constvars (closed-over arrays, whose values a ClosedJaxpr
// holds), after it the inputs. Literals are 0-d constants written `value:type`. A
// parameter may hold a whole sub-program (the body of closed_call, later jit and control
// flow), printed nested in braces. The text parses back (parse_jaxpr), so compiler passes
// are tested as text in, text out; verify_jaxpr type-checks a program with each
// primitive's shape rule.
#pragma once

#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "jx/array.h"
#include "jx/primitive.h"

namespace jx {

// A variable: an id unique within its program (and its sub-programs' enclosing program)
// and its type. Printed names (a, b, ..., z, ba, bb, ...) are assigned by the printer.
struct Var {
  int64_t id = -1;
  Aval aval;
  bool operator==(const Var& o) const { return id == o.id; }
};

// A 0-d concrete constant written inline.
struct Literal {
  Array value;
};

// An equation operand or a program output.
struct Atom {
  std::variant<Var, Literal> value;
  Atom(Var v) : value(std::move(v)) {}      // NOLINT(google-explicit-constructor)
  Atom(Literal l) : value(std::move(l)) {}  // NOLINT
  bool is_var() const { return std::holds_alternative<Var>(value); }
  const Var& var() const { return std::get<Var>(value); }
  const Literal& literal() const { return std::get<Literal>(value); }
  const Aval& aval() const;
};

struct Equation {
  const Primitive* primitive = nullptr;
  std::vector<Atom> inputs;
  std::vector<Var> outputs;
  Params params;
};

struct Jaxpr {
  std::vector<Var> constvars, invars;
  std::vector<Equation> eqns;
  std::vector<Atom> outvars;

  std::vector<Aval> in_avals() const;
  std::vector<Aval> out_avals() const;
  // The text form above.
  std::string str() const;
};

// A program with the values of its constvars.
struct ClosedJaxpr {
  Jaxpr jaxpr;
  std::vector<Array> consts;

  std::vector<Aval> in_avals() const { return jaxpr.in_avals(); }
  std::vector<Aval> out_avals() const { return jaxpr.out_avals(); }
  std::string str() const { return jaxpr.str(); }
};

std::ostream& operator<<(std::ostream& os, const Jaxpr& j);
std::ostream& operator<<(std::ostream& os, const ClosedJaxpr& j);

// Parses the text form; raises jx::Error("[parse_jaxpr] line L, column C: ...") on
// malformed text (unknown primitive, undefined or redefined variable, bad type...).
// The result is verified.
Jaxpr parse_jaxpr(std::string_view text);

// Type-checks a program: every variable defined once before use, every equation's
// operand types accepted by its primitive's shape rule and its declared output types
// equal to what the rule computes, sub-programs recursively. Raises
// jx::Error("[verify_jaxpr] equation N (prim): ...") naming the first problem.
void verify_jaxpr(const Jaxpr& jaxpr);

// Evaluates a program by binding each equation's primitive in order, so it runs under
// whatever transformations are current (eagerly when none).
std::vector<Array> eval_jaxpr(const Jaxpr& jaxpr, std::span<const Array> consts, std::span<const Array> args);
inline std::vector<Array> eval_jaxpr(const ClosedJaxpr& j, std::span<const Array> args) {
  return eval_jaxpr(j.jaxpr, j.consts, args);
}

namespace detail {
// Params::str() of a sub-program parameter: the nested text form.
std::string jaxpr_param_str(const ClosedJaxpr& j);
}  // namespace detail

}  // namespace jx
