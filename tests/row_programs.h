// Jaxpr texts of the row programs the rows-fusion tests share (jit_fusion_test: which
// fusions form; jit_codegen_test: what the kernels compute), as jx traces them.
#pragma once

#include <cstdint>
#include <string>

namespace jx::testing {

// Row softmax of t[rows, cols]: max, sub, exp, sum, div (jnp's keepdims form).
inline std::string softmax_text(const std::string& t, int64_t rows, int64_t cols) {
  const std::string r = std::to_string(rows), c = std::to_string(cols);
  const std::string x = t + "[" + r + "," + c + "]", row = t + "[" + r + "]", col = t + "[" + r + ",1]";
  const std::string b = "broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(" + r + ", " + c + ")]";
  return "{ lambda ; a:" + x + ". let\n    b:" + row + " = reduce_max[axes=(1,)] a\n    c:" + col +
         " = expand_dims[dimensions=(1,)] b\n    d:" + x + " = " + b + " c\n    e:" + x + " = sub a d\n    f:" + x +
         " = exp e\n    g:" + row + " = reduce_sum[axes=(1,)] f\n    h:" + col + " = expand_dims[dimensions=(1,)] g\n    i:" +
         x + " = " + b + " h\n    j:" + x + " = div f i\n  in (j) }";
}

// jnp::logsumexp(x, 1) of f32[rows, cols] (the max shift is 0 where the max is not
// finite), and with log_softmax = x - logsumexp as a second, full-shape output.
inline std::string logsumexp_text(int64_t rows, int64_t cols, bool with_log_softmax = false) {
  const std::string r = std::to_string(rows), c = std::to_string(cols);
  const std::string x = "f32[" + r + "," + c + "]", row = "f32[" + r + "]";
  std::string s = "{ lambda ; a:" + x + ". let\n    b:" + row + " = reduce_max[axes=(1,)] a\n    c:" + row +
                  " = broadcast_in_dim[broadcast_dimensions=() shape=(" + r + ",)] 0.0:f32[]\n    d:bool[" + r +
                  "] = is_finite b\n    e:" + row + " = select_n d c b\n    f:" + row + " = stop_gradient e\n    g:f32[" +
                  r + ",1] = expand_dims[dimensions=(1,)] f\n    h:" + x + " = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(" +
                  r + ", " + c + ")] g\n    i:" + x + " = sub a h\n    j:" + x + " = exp i\n    k:" + row +
                  " = reduce_sum[axes=(1,)] j\n    l:" + row + " = log k\n    m:" + row + " = add l f\n";
  if (!with_log_softmax) return s + "  in (m,) }";
  return s + "    n:" + x + " = broadcast_in_dim[broadcast_dimensions=(0,) shape=(" + r + ", " + c + ")] m\n    o:" + x +
         " = sub a n\n  in (m, o) }";
}

}  // namespace jx::testing
