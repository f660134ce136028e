// Jaxpr texts of the row (and column) programs the rows-fusion tests share (jit_fusion_test: which
// fusions form; jit_codegen_test: what the kernels compute), as jx traces them.
#pragma once

#include <cstdint>
#include <string>

namespace jx::testing {

// Softmax of t[rows, cols] over `axis`: max, sub, exp, sum, div (jnp's keepdims form).
// Over axis 1 a row softmax; over axis 0 each column is normalized, which the rows kernels
// run on their columns schedule (codegen/kernel_plan.h, Mode::Columns).
inline std::string softmax_text(const std::string& t, int64_t rows, int64_t cols, int axis = 1) {
  const std::string r = std::to_string(rows), c = std::to_string(cols), a = std::to_string(axis);
  const std::string x = t + "[" + r + "," + c + "]", reduced = t + "[" + (axis == 1 ? r : c) + "]",
                    kept = t + (axis == 1 ? "[" + r + ",1]" : "[1," + c + "]");
  const std::string b = "broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(" + r + ", " + c + ")]";
  return "{ lambda ; a:" + x + ". let\n    b:" + reduced + " = reduce_max[axes=(" + a + ",)] a\n    c:" + kept +
         " = expand_dims[dimensions=(" + a + ",)] b\n    d:" + x + " = " + b + " c\n    e:" + x + " = sub a d\n    f:" +
         x + " = exp e\n    g:" + reduced + " = reduce_sum[axes=(" + a + ",)] f\n    h:" + kept +
         " = expand_dims[dimensions=(" + a + ",)] g\n    i:" + x + " = " + b + " h\n    j:" + x + " = div f i\n  in (j) }";
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

// A cross-entropy's total over the rows of f32[rows, cols] logits a and i32[rows] labels
// b: `total` (reduce_sum, reduce_max, ...) over the rows of logsumexp(a) - a[label] (the
// label's entry picked by a one-hot sum, as take_along_axis leaves it), a row value beside
// the row reductions, with the row maxima's total too: a rows kernel with two totals.
inline std::string cross_entropy_text(int64_t rows, int64_t cols, const std::string& total = "reduce_sum",
                                      const std::string& t = "f32") {
  const std::string r = std::to_string(rows), c = std::to_string(cols);
  const std::string x = t + "[" + r + "," + c + "]", row = t + "[" + r + "]", ints = "i32[" + r + "," + c + "]";
  const std::string shape = "shape=(" + r + ", " + c + ")";
  return "{ lambda ; a:" + x + " b:i32[" + r + "]. let\n    c:" + row + " = reduce_max[axes=(1,)] a\n    d:" + t + "[" + r +
         ",1] = expand_dims[dimensions=(1,)] c\n    e:" + x + " = broadcast_in_dim[broadcast_dimensions=(0, 1) " + shape +
         "] d\n    f:" + x + " = sub a e\n    g:" + x + " = exp f\n    h:" + row + " = reduce_sum[axes=(1,)] g\n    i:" +
         row + " = log h\n    j:" + row + " = add i c\n    k:" + ints + " = iota[dimension=1 dtype=int32 " + shape +
         "]\n    l:" + ints + " = broadcast_in_dim[broadcast_dimensions=(0,) " + shape + "] b\n    m:bool[" + r + "," + c +
         "] = eq k l\n    n:" + x + " = broadcast_in_dim[broadcast_dimensions=() " + shape + "] 0.0:" + t +
         "[]\n    o:" + x + " = select_n m n a\n    p:" + row + " = reduce_sum[axes=(1,)] o\n    q:" + row +
         " = sub j p\n    s:" + t + "[] = " + total + "[axes=(0,)] q\n    u:" + t + "[] = " + total +
         "[axes=(0,)] c\n  in (s, u) }";
}

// A layer norm over the rows of t[rows, cols] a: (a - mean) * rsqrt(variance + 1e-5),
// two passes over each row; `with_statistics` also outputs the mean and the variance.
inline std::string layer_norm_text(const std::string& t, int64_t rows, int64_t cols, bool with_statistics = false) {
  const std::string r = std::to_string(rows), c = std::to_string(cols);
  const std::string x = t + "[" + r + "," + c + "]", row = t + "[" + r + "]";
  const std::string to_rows = " = broadcast_in_dim[broadcast_dimensions=(0,) shape=(" + r + ", " + c + ")] ";
  const std::string splat = " = broadcast_in_dim[broadcast_dimensions=() shape=(" + r + ",)] ";
  return "{ lambda ; a:" + x + ". let\n    n:" + row + splat + c + ".0:" + t + "[]\n    p:" + row + splat + "1e-05:" + t +
         "[]\n    b:" + row + " = reduce_sum[axes=(1,)] a\n    c:" + row + " = div b n\n    d:" + x + to_rows +
         "c\n    e:" + x + " = sub a d\n    f:" + x + " = mul e e\n    g:" + row + " = reduce_sum[axes=(1,)] f\n    h:" +
         row + " = div g n\n    i:" + row + " = add h p\n    j:" + row + " = rsqrt i\n    k:" + x + to_rows +
         "j\n    l:" + x + " = mul e k\n  in (" + (with_statistics ? "l, c, h" : "l") + ") }";
}

// The gradient of a cross-entropy's mean over f32[rows, cols] logits a with i32[rows]
// labels b, as jax.grad leaves it fused: softmax(a) / rows minus 1 / rows at each row's
// label, one full-shape output after a row max and a row sum of exp.
inline std::string cross_entropy_grad_text(int64_t rows, int64_t cols) {
  const std::string r = std::to_string(rows), c = std::to_string(cols);
  const std::string x = "f32[" + r + "," + c + "]", col = "f32[" + r + ",1]", ints = "i32[" + r + "," + c + "]";
  const std::string shape = "shape=(" + r + ", " + c + ")", scale = std::to_string(1.0 / static_cast<double>(rows));
  return "{ lambda ; a:" + x + " b:i32[" + r + "]. let\n    c:f32[" + r + "] = reduce_max[axes=(1,)] a\n    d:" + col +
         " = expand_dims[dimensions=(1,)] c\n    e:" + x + " = broadcast_in_dim[broadcast_dimensions=(0, 1) " + shape +
         "] d\n    f:" + x + " = sub a e\n    g:" + x + " = exp f\n    h:f32[" + r +
         "] = reduce_sum[axes=(1,)] g\n    i:" + col + " = expand_dims[dimensions=(1,)] h\n    k:" + ints +
         " = iota[dimension=1 dtype=int32 " + shape + "]\n    l:" + ints + " = broadcast_in_dim[broadcast_dimensions=(0,) " +
         shape + "] b\n    m:bool[" + r + "," + c + "] = eq k l\n    n:" + x +
         " = broadcast_in_dim[broadcast_dimensions=() " + shape + "] 0.0:f32[]\n    o:" + x +
         " = broadcast_in_dim[broadcast_dimensions=() " + shape + "] -" + scale + ":f32[]\n    p:" + x +
         " = select_n m n o\n    q:" + col + " = broadcast_in_dim[broadcast_dimensions=() shape=(" + r + ", 1)] " + scale +
         ":f32[]\n    s:" + col + " = div q i\n    t:" + x + " = broadcast_in_dim[broadcast_dimensions=(0, 1) " + shape +
         "] s\n    u:" + x + " = mul t g\n    v:" + x + " = add p u\n  in (v) }";
}

// One leapfrog step of f32[3, n] positions a and momenta b in the trap a(q) = -q (1 + |q|^2)
// (bench_common.h's leapfrog_step, dt = 0.01) as jx traces it: two sums over the leading
// axis, the second of positions computed from the first. Outputs (q, p) after the step.
inline std::string leapfrog_text(int64_t n) {
  const std::string x = "f32[3," + std::to_string(n) + "]", col = "f32[" + std::to_string(n) + "]",
                    kept = "f32[1," + std::to_string(n) + "]";
  const std::string full = "broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(3, " + std::to_string(n) + ")]";
  const std::string scalar = "broadcast_in_dim[broadcast_dimensions=() shape=(3, " + std::to_string(n) + ")]";
  auto force = [&](const std::string& q, const std::string& v) {  // -q * (1 + sum(q * q, 0, keepdims))
    return "    " + v + "sq:" + x + " = mul " + q + " " + q + "\n    " + v + "s:" + col + " = reduce_sum[axes=(0,)] " + v +
           "sq\n    " + v + "k:" + kept + " = expand_dims[dimensions=(0,)] " + v + "s\n    " + v + "one:" + kept +
           " = broadcast_in_dim[broadcast_dimensions=() shape=(1, " + std::to_string(n) + ")] 1.0:f32[]\n    " + v +
           "a:" + kept + " = add " + v + "one " + v + "k\n    " + v + "n:" + x + " = neg " + q + "\n    " + v + "b:" + x +
           " = " + full + " " + v + "a\n    " + v + ":" + x + " = mul " + v + "n " + v + "b\n";
  };
  return "{ lambda ; a:" + x + " b:" + x + ". let\n" + force("a", "f") + "    h:" + x + " = " + scalar +
         " 0.005:f32[]\n    hf:" + x + " = mul h f\n    ph:" + x + " = add b hf\n    dt:" + x + " = " + scalar +
         " 0.01:f32[]\n    dp:" + x + " = mul dt ph\n    q:" + x + " = add a dp\n" + force("q", "g") + "    hg:" + x +
         " = mul h g\n    p:" + x + " = add ph hg\n  in (q, p) }";
}

}  // namespace jx::testing
