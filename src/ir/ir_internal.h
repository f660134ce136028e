// Helpers shared by the IR printer, parser and verifier (not part of the public API).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "jx/jaxpr.h"

namespace jx::detail {

// JAX's variable names: a..z, ba, bb, ..., the n-th name of a program, skipping the
// words the text form reserves ("in", "let", "inf", "nan"), so every name parses back.
std::string jaxpr_var_name(int64_t n);
// Words the parser reads as keywords or literal values, never as variable names.
bool is_reserved_jaxpr_word(std::string_view word);
// The printed name of every variable of `jaxpr` (not of its sub-programs), assigned in
// order of first appearance: constvars, invars, then equations in order.
std::unordered_map<int64_t, std::string> jaxpr_var_names(const Jaxpr& jaxpr);
// The short spelling of a dtype in a type ("f32"), as Aval::str() writes it.
std::string_view dtype_short_name(DType d);

}  // namespace jx::detail
