// Small helpers the rewriting passes share: renaming uses of a variable, and comparing
// atoms (a literal by its type and bits, a variable by its id).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "jx/jaxpr.h"

namespace jx::compiler {

// Uses of replaced variables, renamed while a pass walks the equations in order: a pass
// that drops an equation maps each of its outputs to the atom that now stands for it.
// Callers map a variable only to an atom of the very same aval (weak_type included), so
// every later equation keeps the types it was verified with, and only to an atom already
// renamed (chains are not followed: `from` and `to` may live in different id spaces, a
// body's and its caller's).
class Substitution {
 public:
  void map(const Var& from, Atom to);
  bool empty() const { return map_.empty(); }
  // The atom `a` now stands for (itself when not renamed).
  Atom apply(const Atom& a) const;
  void apply_to_inputs(Equation& eqn) const;
  void apply_to_outvars(Jaxpr& program) const;

 private:
  std::unordered_map<int64_t, Atom> map_;
};

// The bytes of a 0-d literal's value in its own dtype (for exact comparison: 0.0 and
// -0.0 differ, one NaN equals itself).
std::string literal_bits(const Array& value);
// Same variable, or literals of the same aval (weak_type included) and the same bits.
bool same_atom(const Atom& a, const Atom& b);
// A hash agreeing with same_atom.
size_t atom_hash(const Atom& a);

}  // namespace jx::compiler
