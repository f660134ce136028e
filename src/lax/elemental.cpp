#include "lax/elemental.h"

#include <algorithm>
#include <string>

namespace jx::lax::elemental {

using lowering::Cmp;

bool is_signed_int(DType d) { return is_integer(d) && !is_unsigned(d); }

// Floats: IEEE 754-2019 maximum / minimum (NaN if either is; +0 above -0), as XLA and
// eager (lax/reduction_ops.h, ieee_maximum).
Value* max(ScalarBuilder& b, DType d, Value* a, Value* c) {
  if (d == DType::Bool) return b.bit_or(a, c);
  if (is_integer(d)) return b.int_max(d, a, c);
  return b.float_maximum(a, c);
}

Value* min(ScalarBuilder& b, DType d, Value* a, Value* c) {
  if (d == DType::Bool) return b.bit_and(a, c);
  if (is_integer(d)) return b.int_min(d, a, c);
  return b.float_minimum(a, c);
}

ElementalEmitter neg() {
  return [](ScalarBuilder& b, const ElementalArgs& x) { return b.neg(x.in(), x[0]); };
}
ElementalEmitter add() {
  return [](ScalarBuilder& b, const ElementalArgs& x) { return b.add(x.in(), x[0], x[1]); };
}
ElementalEmitter sub() {
  return [](ScalarBuilder& b, const ElementalArgs& x) { return b.sub(x.in(), x[0], x[1]); };
}
ElementalEmitter mul() {
  return [](ScalarBuilder& b, const ElementalArgs& x) { return b.mul(x.in(), x[0], x[1]); };
}

namespace {

Value* int_div(ScalarBuilder& b, DType d, Value* a, Value* c) {
  Value* zero = b.compare(Cmp::kEq, d, c, b.int_constant(d, 0));
  if (is_unsigned(d)) {
    Value* q = b.div(d, a, b.select(zero, b.int_constant(d, 1), c));
    return b.select(zero, b.int_constant(d, -1), q);
  }
  Value* minus_one = b.compare(Cmp::kEq, d, c, b.int_constant(d, -1));
  Value* safe = b.select(b.bit_or(zero, minus_one), b.int_constant(d, 1), c);
  Value* q = b.div(d, a, safe);
  q = b.select(minus_one, b.neg(d, a), q);
  return b.select(zero, b.int_constant(d, -1), q);
}

Value* int_rem(ScalarBuilder& b, DType d, Value* a, Value* c) {
  Value* zero = b.compare(Cmp::kEq, d, c, b.int_constant(d, 0));
  if (is_unsigned(d)) {
    Value* r = b.rem(d, a, b.select(zero, b.int_constant(d, 1), c));
    return b.select(zero, a, r);
  }
  Value* minus_one = b.compare(Cmp::kEq, d, c, b.int_constant(d, -1));
  Value* r = b.rem(d, a, b.select(b.bit_or(zero, minus_one), b.int_constant(d, 1), c));
  r = b.select(minus_one, b.int_constant(d, 0), r);
  return b.select(zero, a, r);
}

}  // namespace

ElementalEmitter div() {
  return [](ScalarBuilder& b, const ElementalArgs& x) {
    return is_floating(x.in()) ? b.div(x.in(), x[0], x[1]) : int_div(b, x.in(), x[0], x[1]);
  };
}
ElementalEmitter rem() {
  return [](ScalarBuilder& b, const ElementalArgs& x) {
    return is_floating(x.in()) ? b.rem(x.in(), x[0], x[1]) : int_rem(b, x.in(), x[0], x[1]);
  };
}

ElementalEmitter shift(Shift kind) {
  return [kind](ScalarBuilder& b, const ElementalArgs& x) {
    const DType d = x.in();
    Value* a = x[0];
    Value* n = x[1];
    const int64_t bits = 8 * itemsize(d);
    Value* in_range = b.compare_unsigned(Cmp::kLt, n, b.int_constant(d, bits));
    if (kind == Shift::kRightArithmetic)
      return b.shift_right_arithmetic(a, b.select(in_range, n, b.int_constant(d, bits - 1)));
    Value* safe = b.select(in_range, n, b.int_constant(d, 0));
    Value* shifted = kind == Shift::kLeft ? b.shift_left(a, safe) : b.shift_right_logical(a, safe);
    return b.select(in_range, shifted, b.int_constant(d, 0));
  };
}

ElementalEmitter math_unary(std::string_view fn) {
  return [fn = std::string(fn)](ScalarBuilder& b, const ElementalArgs& x) {
    Value* args[] = {x[0]};
    return b.math(fn, x.in(), args);
  };
}
ElementalEmitter math_binary(std::string_view fn) {
  return [fn = std::string(fn)](ScalarBuilder& b, const ElementalArgs& x) {
    Value* args[] = {x[0], x[1]};
    return b.math(fn, x.in(), args);
  };
}

ElementalEmitter compare(Cmp cmp) {
  return [cmp](ScalarBuilder& b, const ElementalArgs& x) { return b.compare(cmp, x.in(), x[0], x[1]); };
}

Value* integer_pow(ScalarBuilder& b, DType d, Value* x, int64_t y) {
  const bool is_float = is_floating(d);
  uint64_t e = y < 0 ? uint64_t{0} - static_cast<uint64_t>(y) : static_cast<uint64_t>(y);
  if (e == 0) return is_float ? b.float_constant(d, 1.0) : b.int_constant(d, 1);
  Value* acc = nullptr;
  Value* base = x;
  while (e) {
    if (e & 1) acc = acc ? b.mul(d, acc, base) : base;
    e >>= 1;
    if (e) base = b.mul(d, base, base);
  }
  if (is_float && y < 0) acc = b.div(d, b.float_constant(d, 1.0), acc);
  return acc;
}

Value* select_n(ScalarBuilder& b, Value* which, DType which_dtype, std::span<Value* const> cases) {
  const size_t n = cases.size();
  if (n == 1) return cases[0];
  if (which_dtype == DType::Bool) return b.select(which, cases[1], cases[0]);
  const auto bits = static_cast<unsigned>(8 * itemsize(which_dtype));
  const bool is_signed = !is_unsigned(which_dtype);
  const uint64_t max_index = is_signed ? (uint64_t{1} << (bits - 1)) - 1
                                       : (bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1);
  Value* result = cases[0];
  for (size_t k = 1; k < n; ++k) {
    if (k > max_index) break;  // which cannot hold k: the cases beyond are never picked
    Value* kc = b.int_constant(which_dtype, static_cast<int64_t>(k));
    // The last case also takes every index past the end.
    Value* hit = k == n - 1 ? b.compare(Cmp::kGe, which_dtype, which, kc) : b.compare(Cmp::kEq, which_dtype, which, kc);
    result = b.select(hit, cases[k], result);
  }
  return result;
}

// x + y if either is NaN, y if x == y, the smallest subnormal with y's sign from ±0,
// else x's bits stepped one toward y.
Value* nextafter(ScalarBuilder& b, DType d, Value* x, Value* y) {
  const DType bits = d == DType::Float32 ? DType::Int32 : DType::Int64;
  const int64_t sign_mask = d == DType::Float32 ? int64_t{INT32_MIN} : INT64_MIN;
  Value* ix = b.bitcast(x, bits);
  Value* zero = b.float_constant(d, 0.0);
  Value* away_from_zero = b.compare(Cmp::kEq, DType::Bool, b.compare(Cmp::kLt, d, x, y), b.compare(Cmp::kGt, d, x, zero));
  Value* stepped = b.select(away_from_zero, b.add(bits, ix, b.int_constant(bits, 1)), b.sub(bits, ix, b.int_constant(bits, 1)));
  Value* sign_of_y = b.bit_and(b.bitcast(y, bits), b.int_constant(bits, sign_mask));
  Value* from_zero = b.bit_or(sign_of_y, b.int_constant(bits, 1));
  Value* r = b.bitcast(b.select(b.compare(Cmp::kEq, d, x, zero), from_zero, stepped), d);
  r = b.select(b.compare(Cmp::kEq, d, x, y), y, r);
  return b.select(b.unordered(x, y), b.add(d, x, y), r);
}

lowering::AffineMap zero_map(size_t operand_rank, size_t out_rank) {
  return {std::vector<std::vector<int64_t>>(operand_rank, std::vector<int64_t>(out_rank, 0)),
          std::vector<int64_t>(operand_rank, 0)};
}

std::vector<int64_t> sorted_dims(const std::vector<int64_t>& dims, int64_t ndim) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(d < 0 ? d + ndim : d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace jx::lax::elemental
