// Helpers shared by the control-flow primitives (cond, while): building bodies out of
// other bodies (joined constants, rearranged or ignored inputs, extra outputs), and the
// checks their shape rules share. A body is a closed sub-program without constvars; its
// constants are leading operands of the equation holding it (body_with_consts_first).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jx/jaxpr.h"
#include "jx/transforms.h"

namespace jx::detail {

// A body and the values of its leading constant inputs.
struct BodyWithConsts {
  JaxprRef body;
  std::vector<Array> consts;
};

// A user function staged on inputs of these types (by the trace named `name`, which
// concretization errors mention), its captured constants lifted to leading inputs.
BodyWithConsts stage_user_body(const FlatFn& f, std::span<const Aval> in_avals, std::string name);

// A body computing f, which only evaluates other bodies and lax operations on its inputs,
// staged apart from any transformation; it captures no constants (checked).
JaxprRef stage_rewritten_body(const FlatFn& f, std::span<const Aval> in_avals, std::string_view prim);

// The constants of several bodies as one operand list, each array once (by identity), so
// that every branch of a cond takes all of them: slots[b][k] is where body b's constant k is.
struct JoinedConsts {
  std::vector<Array> values;
  std::vector<std::vector<size_t>> slots;
};
JoinedConsts join_consts(std::span<const BodyWithConsts> bodies);
// Each body rewritten to take (every joined constant..., its other inputs...), ignoring the
// constants of the others.
std::vector<JaxprRef> bodies_taking_joined_consts(std::span<const BodyWithConsts> bodies, const JoinedConsts& joined,
                                                  std::string_view prim);

// The body with its inputs reordered: new input k is old input order[k] (a permutation).
JaxprRef permute_inputs(const JaxprRef& body, std::span<const size_t> order);

// Types that agree but for weak_type (a body's inputs and outputs compare this way).
bool same_type(const Aval& a, const Aval& b);
// Raises "[prim] <what> takes N inputs (...) but gets M operands (...)" or names the first
// input whose type differs from its operand's; `what` names the body ("branch1").
void check_body_inputs(std::string_view prim, std::string_view what, const JaxprRef& body,
                       std::span<const Aval> operands);
// The outputs of an impl given the weak types its shape rule promised (shape and dtype agree).
std::vector<Array> with_weak_types(std::vector<Array> outs, std::span<const Aval> avals);
// The types of these arrays.
std::vector<Aval> avals_of(std::span<const Array> xs);
// a |= b, elementwise.
void or_into(std::vector<bool>& a, const std::vector<bool>& b);

}  // namespace jx::detail
