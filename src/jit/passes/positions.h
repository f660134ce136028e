// Positions: what passes that rewrite indexing ask of a program's atoms. Built once over
// a program's equations (it points into them: build it on the program as it is, before
// rewriting), it answers which equation produced an atom, whether an atom is a splat of
// an integer, and along which dim an atom's every element is its own position (an iota
// seen through what keeps its values), memoized so a pass asking of every equation stays
// linear in the program. Used by take_along_selects (its row indices) and one_hot_sums
// (the one-hot masks the former leaves).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "jx/jaxpr.h"

namespace jx::compiler {

class Positions {
 public:
  explicit Positions(const std::vector<Equation>& eqns);

  const Equation* producer(const Atom& a) const;

  // Whether `a` is an integer literal equal to `value`, or a broadcast of one.
  bool is_splat(const Atom& a, int64_t value) const;

  // The dim k of a's shape such that every element of `a` is its position along k (an
  // iota over k), seen through what keeps those values: broadcasts and unit-dim
  // reshapes moving the dim, conversions to an integer type holding them, adding 0 or
  // multiplying by 1, and the select normalizing negative indices (jnp's arange(n) as a
  // row index is all of these). Memoized: linear in the program.
  std::optional<int64_t> position_dim(const Atom& a);

 private:
  std::optional<int64_t> find_position_dim(const Atom& a);

  std::unordered_map<int64_t, const Equation*> producer_;
  std::unordered_map<int64_t, std::optional<int64_t>> position_;
};

}  // namespace jx::compiler
