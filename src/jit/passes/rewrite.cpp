#include "jit/passes/rewrite.h"

#include <functional>

namespace jx::compiler {

void Substitution::map(const Var& from, Atom to) { map_.insert_or_assign(from.id, std::move(to)); }

Atom Substitution::apply(const Atom& a) const {
  if (!a.is_var()) return a;
  auto it = map_.find(a.var().id);
  return it == map_.end() ? a : it->second;
}

void Substitution::apply_to_inputs(Equation& eqn) const {
  if (map_.empty()) return;
  for (Atom& a : eqn.inputs) a = apply(a);
}

void Substitution::apply_to_outvars(Jaxpr& program) const {
  if (map_.empty()) return;
  for (Atom& a : program.outvars) a = apply(a);
}

std::string literal_bits(const Array& value) {
  std::string bits(static_cast<size_t>(value.itemsize()), '\0');
  value.copy_to(bits.data(), value.dtype());
  return bits;
}

bool same_atom(const Atom& a, const Atom& b) {
  if (a.is_var() != b.is_var()) return false;
  if (a.is_var()) return a.var().id == b.var().id;
  const Array& x = a.literal().value;
  const Array& y = b.literal().value;
  return x.aval() == y.aval() && literal_bits(x) == literal_bits(y);
}

size_t atom_hash(const Atom& a) {
  if (a.is_var()) return std::hash<int64_t>()(a.var().id);
  const Array& x = a.literal().value;
  size_t h = std::hash<std::string>()(literal_bits(x));
  return h ^ (static_cast<size_t>(x.dtype()) * 0x9e3779b97f4a7c15ull) ^ (x.weak_type() ? 0x5555 : 0);
}

}  // namespace jx::compiler
