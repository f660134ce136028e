// Random programs for differential testing of jit: a seeded generator of small DAGs of
// jx::lax operations over random shapes and dtypes, and an interpreter that replays one
// with lax calls (so the same program runs eagerly, under jit, or under make_jaxpr).
//
// Generation tracks every value's shape, dtype and a rough bound on its magnitude, so the
// programs stay well conditioned: periodic functions and exp see bounded inputs,
// denominators are kept away from zero. NaNs still appear on purpose (log and sqrt of
// negative values), and comparisons check that their positions agree.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "jx/jx.h"

namespace jx::testing::random_program {

enum class Op {
  Unary,       // a = unary[k](x)
  Binary,      // a = binary[k](x, y), same shape and dtype
  SafeDiv,     // a = x / (|y| + 1)  (floats)
  SafeLog,     // a = log(|x| + 0.5)  (floats)
  Compare,     // bool = cmp[k](x, y)
  Select,      // select_n(pred, x, y)
  Convert,     // convert_element_type
  Broadcast,   // broadcast_in_dim to a larger shape
  Transpose,
  Slice,
  Rev,
  Reshape,
  Reduce,      // reduce_{sum,max,min,and,or}[k] over axes
  Constant,    // a full array of a value (a constant of the program)
  Dot,         // dot_general of rank-2 floats, contracting lhs dim 1 with rhs dim 0
  Iota,        // broadcasted_iota of an existing value's shape
  IntegerPow,  // integer_pow[y=kind]
  Clamp,       // clamp(scalar lo, x, scalar hi), lo = -constant, hi = constant
  MoreUnary,   // expm1 / erf / atan / sign / ceil / round (floats)
  Atan2,
  IntDivRem,   // x / (|y| + 1) or rem(x, |y| + 1) on integers
  Select3,     // select_n(rem(|w|, 3), a, b, c) with an int32 w
  Squeeze,     // removes the size-1 dims v1
  ExpandDims,  // inserts size-1 dims at v1
  ArgMax,      // argmax (kind 0) / argmin (kind 1) along axis v1[0]
  Cumsum,      // cumsum along axis v1[0] (reverse when kind is 1)
  Concat,      // concatenate {a, b} along v1[0]
  Pad,         // pad with `constant`: v1 = lo, v2 = hi, v3 = interior per dim
};

struct ValueInfo {
  Shape shape;
  DType dtype;
  double bound;  // |value| <= bound for finite elements (a generation-time estimate)
  // Computed (in part) in float32: a float64 result then carries float32 rounding, and
  // is compared with float32's tolerance.
  bool f32_lineage = false;
  // Expected bit-identical under eager and jit: no transcendental function, float sum or
  // dot among its ancestors (IEEE add/sub/mul/div/sqrt are correctly rounded, so they
  // agree exactly). Discontinuous or ill-conditioned functions (floor, sign, float->int,
  // log and sqrt near 0) only get exact inputs, so an ulp of difference upstream cannot
  // turn into a large one.
  bool exact = true;
};

// Whether an operation's result is bit-identical under eager and jit for equal inputs.
inline bool exact_op(Op op, int kind, DType dtype) {
  if (dtype != DType::Float32 && dtype != DType::Float64) return true;
  switch (op) {
    case Op::Unary: return kind <= 1 || kind == 9;  // neg, abs, floor
    case Op::MoreUnary: return kind >= 3;           // sign, ceil, round
    case Op::SafeLog:
    case Op::Atan2:
    case Op::Dot:
    case Op::Cumsum:
    case Op::IntegerPow: return false;
    case Op::Reduce: return kind != 0;  // max/min are exact, sums depend on the order
    default: return true;
  }
}

struct Step {
  Op op;
  int kind = 0;             // which unary / binary / comparison / reduction
  std::vector<int> args;    // value indices
  std::vector<int64_t> v1, v2, v3;  // shape/dims/permutation/starts/limits/strides/axes
  Shape shape;
  DType dtype = DType::Float32;
  double constant = 0;
};

inline Step step(Op op, int kind, std::vector<int> args, std::vector<int64_t> v1 = {}, std::vector<int64_t> v2 = {},
                 std::vector<int64_t> v3 = {}, Shape shape = {}, DType dtype = DType::Float32) {
  Step s;
  s.op = op;
  s.kind = kind;
  s.args = std::move(args);
  s.v1 = std::move(v1);
  s.v2 = std::move(v2);
  s.v3 = std::move(v3);
  s.shape = std::move(shape);
  s.dtype = dtype;
  return s;
}

struct Program {
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> values;  // inputs first, then one per step
  std::vector<Step> steps;
  std::vector<int> outputs;
};

inline const char* const kUnaryNames[] = {"neg", "abs", "sin", "cos", "tanh", "logistic", "exp", "log", "sqrt", "floor"};
inline const char* const kBinaryNames[] = {"add", "sub", "mul", "max", "min", "and", "or", "xor"};
inline const char* const kCompareNames[] = {"eq", "ne", "lt", "le", "gt", "ge"};
inline const char* const kReduceNames[] = {"reduce_sum", "reduce_max", "reduce_min", "reduce_and", "reduce_or"};

inline bool is_float(DType d) { return d == DType::Float32 || d == DType::Float64; }

// ---- replay ----

inline Array apply_unary(int k, const Array& x) {
  switch (k) {
    case 0: return lax::neg(x);
    case 1: return lax::abs(x);
    case 2: return lax::sin(x);
    case 3: return lax::cos(x);
    case 4: return lax::tanh(x);
    case 5: return lax::logistic(x);
    case 6: return lax::exp(x);
    case 7: return lax::log(x);
    case 8: return lax::sqrt(x);
    default: return lax::floor(x);
  }
}

inline Array apply_binary(int k, const Array& x, const Array& y) {
  switch (k) {
    case 0: return lax::add(x, y);
    case 1: return lax::sub(x, y);
    case 2: return lax::mul(x, y);
    case 3: return lax::max(x, y);
    case 4: return lax::min(x, y);
    case 5: return lax::bitwise_and(x, y);
    case 6: return lax::bitwise_or(x, y);
    default: return lax::bitwise_xor(x, y);
  }
}

inline Array apply_compare(int k, const Array& x, const Array& y) {
  switch (k) {
    case 0: return lax::eq(x, y);
    case 1: return lax::ne(x, y);
    case 2: return lax::lt(x, y);
    case 3: return lax::le(x, y);
    case 4: return lax::gt(x, y);
    default: return lax::ge(x, y);
  }
}

inline Array full(const Shape& shape, DType dtype, double value) {
  return lax::broadcast_in_dim(lax::convert_element_type(Array(value), dtype), shape, {});
}

inline Array apply_step(const Step& s, const std::vector<Array>& v) {
  auto arg = [&](int i) -> const Array& { return v[static_cast<size_t>(s.args[static_cast<size_t>(i)])]; };
  switch (s.op) {
    case Op::Unary: return apply_unary(s.kind, arg(0));
    case Op::Binary: return apply_binary(s.kind, arg(0), arg(1));
    case Op::SafeDiv: {
      const Array& y = arg(1);
      return lax::div(arg(0), lax::add(lax::abs(y), full(y.shape(), y.dtype(), 1.0)));
    }
    case Op::SafeLog: {
      const Array& x = arg(0);
      return lax::log(lax::add(lax::abs(x), full(x.shape(), x.dtype(), 0.5)));
    }
    case Op::Compare: return apply_compare(s.kind, arg(0), arg(1));
    case Op::Select: return lax::select_n(arg(0), {arg(1), arg(2)});
    case Op::Convert: return lax::convert_element_type(arg(0), s.dtype);
    case Op::Broadcast: return lax::broadcast_in_dim(arg(0), s.shape, s.v1);
    case Op::Transpose: return lax::transpose(arg(0), s.v1);
    case Op::Slice: return lax::slice(arg(0), s.v1, s.v2, s.v3);
    case Op::Rev: return lax::rev(arg(0), s.v1);
    case Op::Reshape: return lax::reshape(arg(0), s.shape);
    case Op::Reduce:
      switch (s.kind) {
        case 0: return lax::reduce_sum(arg(0), s.v1);
        case 1: return lax::reduce_max(arg(0), s.v1);
        case 2: return lax::reduce_min(arg(0), s.v1);
        case 3: return lax::reduce_and(arg(0), s.v1);
        default: return lax::reduce_or(arg(0), s.v1);
      }
    case Op::Constant: return full(s.shape, s.dtype, s.constant);
    case Op::Dot: return lax::dot_general(arg(0), arg(1), lax::DotDimensionNumbers{{1}, {0}, {}, {}});
    case Op::Iota: return lax::broadcasted_iota(s.dtype, s.shape, static_cast<int>(s.v1[0]));
    case Op::IntegerPow: return lax::integer_pow(arg(0), s.kind);
    case Op::Clamp: {
      Array lo = lax::convert_element_type(Array(-s.constant), arg(0).dtype());
      Array hi = lax::convert_element_type(Array(s.constant), arg(0).dtype());
      return lax::clamp(lo, arg(0), hi);
    }
    case Op::MoreUnary:
      switch (s.kind) {
        case 0: return lax::expm1(arg(0));
        case 1: return lax::erf(arg(0));
        case 2: return lax::atan(arg(0));
        case 3: return lax::sign(arg(0));
        case 4: return lax::ceil(arg(0));
        default: return lax::round(arg(0), lax::RoundingMethod::ToNearestEven);
      }
    case Op::Atan2: return lax::atan2(arg(0), arg(1));
    case Op::IntDivRem: {
      const Array& y = arg(1);
      Array d = lax::add(lax::abs(y), full(y.shape(), y.dtype(), 1));
      return s.kind == 0 ? lax::div(arg(0), d) : lax::rem(arg(0), d);
    }
    case Op::Select3: {
      const Array& w = arg(0);
      Array which = lax::rem(lax::abs(w), full(w.shape(), w.dtype(), 3));
      return lax::select_n(which, {arg(1), arg(2), arg(3)});
    }
    case Op::Squeeze: return lax::squeeze(arg(0), s.v1);
    case Op::ExpandDims: return lax::expand_dims(arg(0), s.v1);
    case Op::ArgMax:
      return s.kind == 0 ? lax::argmax(arg(0), s.v1[0]) : lax::argmin(arg(0), s.v1[0]);
    case Op::Cumsum: return lax::cumsum(arg(0), s.v1[0], s.kind == 1);
    case Op::Concat: return lax::concatenate({arg(0), arg(1)}, s.v1[0]);
    case Op::Pad: {
      std::vector<lax::PadDim> config;
      for (size_t i = 0; i < s.v1.size(); ++i) config.push_back({s.v1[i], s.v2[i], s.v3[i]});
      return lax::pad(arg(0), lax::convert_element_type(Array(s.constant), arg(0).dtype()), config);
    }
  }
  return Array();
}

// Runs the program on its inputs with lax calls: under jit or make_jaxpr this traces.
inline std::vector<Array> run(const Program& p, std::span<const Array> inputs) {
  std::vector<Array> v(inputs.begin(), inputs.end());
  for (const Step& s : p.steps) v.push_back(apply_step(s, v));
  std::vector<Array> out;
  for (int o : p.outputs) out.push_back(v[static_cast<size_t>(o)]);
  return out;
}

// ---- generation ----

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  Program generate(int min_steps = 5, int max_steps = 30) {
    Program p;
    int n_inputs = uniform(1, 4);
    // A main float dtype per program (most values), so binary ops find partners.
    main_float_ = chance(0.6) ? DType::Float32 : DType::Float64;
    large_ = chance(0.08);
    for (int i = 0; i < n_inputs; ++i) {
      DType d = chance(0.65) ? main_float_ : chance(0.6) ? DType::Int32 : chance(0.5) ? DType::Bool : other_float();
      ValueInfo info{random_shape(0, 3), d, d == DType::Int32 ? 20.0 : d == DType::Bool ? 1.0 : 4.0,
                     d == DType::Float32};
      p.inputs.push_back(info);
      p.values.push_back(info);
    }
    int n_steps = uniform(min_steps, max_steps);
    while (static_cast<int>(p.steps.size()) < n_steps) add_step(p);
    // Outputs: the last value, and a few others (inputs and intermediates included).
    p.outputs.push_back(static_cast<int>(p.values.size()) - 1);
    int extra = uniform(0, 3);
    for (int i = 0; i < extra; ++i) p.outputs.push_back(uniform(0, static_cast<int>(p.values.size()) - 1));
    return p;
  }

  // Random input values for the program's inputs; some are strided views (transposed,
  // or reversed, or broadcast along a dim), which jit must read like eager does.
  std::vector<Array> inputs(const Program& p) {
    std::vector<Array> out;
    for (const ValueInfo& info : p.inputs) {
      int r = static_cast<int>(info.shape.size());
      int layout = r >= 1 && chance(0.3) ? uniform(0, 2) : -1;
      Shape stored = info.shape;
      std::vector<int64_t> perm(static_cast<size_t>(r));
      std::iota(perm.begin(), perm.end(), 0);
      if (layout == 0) {  // transposed: generated in a permuted shape, transposed back
        std::shuffle(perm.begin(), perm.end(), rng_);
        for (int i = 0; i < r; ++i) stored[static_cast<size_t>(perm[static_cast<size_t>(i)])] = info.shape[static_cast<size_t>(i)];
      }
      int bdim = layout == 2 ? uniform(0, r - 1) : -1;
      if (bdim >= 0) stored[static_cast<size_t>(bdim)] = 1;  // broadcast back to full size
      out.push_back(values(stored, info.dtype));
      Array& x = out.back();
      if (layout == 0) {
        x = lax::transpose(x, perm);  // output dim i is stored dim perm[i]
      } else if (layout == 1) {
        x = lax::rev(x, {uniform(0, r - 1)});
      } else if (layout == 2) {
        std::vector<int64_t> dims(static_cast<size_t>(r));
        std::iota(dims.begin(), dims.end(), 0);
        x = lax::broadcast_in_dim(x, info.shape, dims);
      }
    }
    return out;
  }

 private:
  Array values(const Shape& shape, DType dtype) {
    std::vector<Array> out;
    ValueInfo info{shape, dtype, 0};
    {
      size_t n = static_cast<size_t>(shape_size(info.shape));
      if (info.dtype == DType::Bool) {
        std::vector<uint8_t> bytes(n);
        for (auto& x : bytes) x = chance(0.5);
        out.push_back(lax::convert_element_type(Array(bytes, info.shape), DType::Bool));
      } else if (info.dtype == DType::Int32) {
        std::vector<int32_t> xs(n);
        for (auto& x : xs) x = uniform(-20, 20);
        out.push_back(Array(xs, info.shape));
      } else {
        std::vector<double> xs(n);
        std::normal_distribution<double> dist(0.0, 1.3);
        for (auto& x : xs) x = std::clamp(dist(rng_), -4.0, 4.0);
        out.push_back(lax::convert_element_type(Array(xs, info.shape), info.dtype));
      }
    }
    return out[0];
  }

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  DType other_float() { return main_float_ == DType::Float32 ? DType::Float64 : DType::Float32; }

  Shape random_shape(int min_rank, int max_rank) {
    Shape s(static_cast<size_t>(uniform(min_rank, max_rank)));
    // Large programs (some inputs past the kernels' threading threshold) now and then.
    for (auto& d : s) d = chance(0.2) ? 1 : uniform(1, large_ ? 48 : 7);
    return s;
  }

  int pick(const Program& p) {
    // Prefer recent values, so programs are deep rather than wide.
    int n = static_cast<int>(p.values.size());
    if (chance(0.6)) return std::max(0, n - 1 - uniform(0, std::min(n - 1, 3)));
    return uniform(0, n - 1);
  }
  int pick_where(const Program& p, auto pred) {
    std::vector<int> ok;
    for (int i = 0; i < static_cast<int>(p.values.size()); ++i)
      if (pred(p.values[static_cast<size_t>(i)])) ok.push_back(i);
    if (ok.empty()) return -1;
    // Prefer recent ones.
    if (chance(0.5)) return ok.back();
    return ok[static_cast<size_t>(uniform(0, static_cast<int>(ok.size()) - 1))];
  }

  int push(Program& p, Step s, ValueInfo info) {
    info.f32_lineage = info.dtype == DType::Float32;
    for (int a : s.args) info.f32_lineage = info.f32_lineage || p.values[static_cast<size_t>(a)].f32_lineage;
    // A conversion's dtype is its result's; other ops are judged by their operand's.
    DType judged = s.args.empty() || s.op == Op::Convert ? info.dtype : p.values[static_cast<size_t>(s.args[0])].dtype;
    info.exact = exact_op(s.op, s.kind, judged);
    for (int a : s.args) info.exact = info.exact && p.values[static_cast<size_t>(a)].exact;
    p.steps.push_back(std::move(s));
    p.values.push_back(std::move(info));
    return static_cast<int>(p.values.size()) - 1;
  }

  // A value of `shape` and `dtype` made from `src` (same dtype) by broadcasting when its
  // shape allows (NumPy's trailing alignment), else a constant.
  int coerce(Program& p, int src, const Shape& shape, DType dtype) {
    const ValueInfo& s = p.values[static_cast<size_t>(src)];
    if (s.dtype == dtype && s.shape == shape) return src;
    if (s.dtype == dtype && s.shape.size() <= shape.size()) {
      size_t off = shape.size() - s.shape.size();
      bool ok = true;
      std::vector<int64_t> dims;
      for (size_t i = 0; i < s.shape.size(); ++i) {
        ok = ok && (s.shape[i] == 1 || s.shape[i] == shape[off + i]);
        dims.push_back(static_cast<int64_t>(off + i));
      }
      if (ok) {
        Step st = step(Op::Broadcast, 0, {src}, dims, {}, {}, shape, dtype);
        return push(p, st, ValueInfo{shape, dtype, s.bound});
      }
    }
    return constant(p, shape, dtype);
  }

  int constant(Program& p, const Shape& shape, DType dtype) {
    Step st = step(Op::Constant, 0, {}, {}, {}, {}, shape, dtype);
    if (dtype == DType::Bool) st.constant = chance(0.5);
    else if (dtype == DType::Int32) st.constant = uniform(-5, 5);
    else if (!is_float(dtype)) st.constant = uniform(0, 5);
    else st.constant = uniform(-8, 8) * 0.25;
    return push(p, st, ValueInfo{shape, dtype, std::abs(st.constant)});
  }

  // A partner for a binary op with `a`: same dtype, coerced to a's shape.
  int partner(Program& p, int a) {
    ValueInfo ai = p.values[static_cast<size_t>(a)];
    int b = pick_where(p, [&](const ValueInfo& v) {
      if (v.dtype != ai.dtype || v.shape.size() > ai.shape.size()) return false;
      size_t off = ai.shape.size() - v.shape.size();
      for (size_t i = 0; i < v.shape.size(); ++i)
        if (v.shape[i] != 1 && v.shape[i] != ai.shape[off + i]) return false;
      return true;
    });
    if (b < 0 || chance(0.1)) return constant(p, ai.shape, ai.dtype);
    return coerce(p, b, ai.shape, ai.dtype);
  }

  void add_step(Program& p) {
    int a = pick(p);
    ValueInfo ai = p.values[static_cast<size_t>(a)];
    bool fl = is_float(ai.dtype), bo = ai.dtype == DType::Bool, in = !fl && !bo;
    bool uns = ai.dtype == DType::UInt8 || ai.dtype == DType::UInt32;  // no abs / neg / negative bounds
    int r = static_cast<int>(ai.shape.size());
    switch (uniform(0, 27)) {
      case 0:
      case 1: {  // unary
        if (bo || uns) return;
        int k;
        if (in) k = uniform(0, 1);
        else {
          k = uniform(0, 9);
          if ((k == 2 || k == 3) && ai.bound > 20) k = 4;  // sin/cos of huge values is chaotic
          if (k == 6 && ai.bound > 10) k = 5;
          if (k >= 7 && !ai.exact) k = 4;  // log, sqrt near 0 and floor amplify an ulp
        }
        double bound = k <= 1 ? ai.bound : k <= 5 ? 1.0 : k == 6 ? std::exp(ai.bound) : k == 7 ? std::max(std::log(ai.bound + 1), 20.0)
                       : k == 8 ? std::sqrt(ai.bound) : ai.bound + 1;
        push(p, step(Op::Unary, k, {a}), ValueInfo{ai.shape, ai.dtype, bound});
        return;
      }
      case 2:
      case 3:
      case 4: {  // binary
        int b = partner(p, a);
        double bb = p.values[static_cast<size_t>(b)].bound;
        int k;
        if (fl) k = uniform(0, 4);
        else if (in) k = uniform(0, 7);
        else k = uniform(5, 7);
        if (k == 2 && ai.bound * bb > 1e6) k = 3;
        double bound = k == 2 ? ai.bound * bb : k <= 1 ? ai.bound + bb : std::max(ai.bound, bb);
        if (in && k >= 5) bound = 64;
        push(p, step(Op::Binary, k, {a, b}), ValueInfo{ai.shape, ai.dtype, bound});
        return;
      }
      case 5: {  // division or log, kept away from zero
        if (!fl) return;
        if (chance(0.5)) {
          int b = partner(p, a);
          push(p, step(Op::SafeDiv, 0, {a, b}), ValueInfo{ai.shape, ai.dtype, ai.bound});
        } else {
          push(p, step(Op::SafeLog, 0, {a}), ValueInfo{ai.shape, ai.dtype, std::log(ai.bound + 1) + 1});
        }
        return;
      }
      case 6: {  // select_n(x cmp y, u, v)
        if (bo) return;
        int b = partner(p, a);
        int pred = push(p, step(Op::Compare, uniform(0, 5), {a, b}), ValueInfo{ai.shape, DType::Bool, 1});
        int u = pick(p);
        ValueInfo ui = p.values[static_cast<size_t>(u)];
        int uc = coerce(p, u, ai.shape, ui.dtype);
        int v = partner(p, uc);
        double bound = std::max(p.values[static_cast<size_t>(uc)].bound, p.values[static_cast<size_t>(v)].bound);
        push(p, step(Op::Select, 0, {pred, uc, v}), ValueInfo{ai.shape, ui.dtype, bound});
        return;
      }
      case 7: {  // compare alone (bool values for and/or/reductions)
        if (bo) return;
        int b = partner(p, a);
        push(p, step(Op::Compare, uniform(0, 5), {a, b}), ValueInfo{ai.shape, DType::Bool, 1});
        return;
      }
      case 8: {  // convert
        DType to;
        int c = uniform(0, 7);
        const DType targets[] = {DType::Float32, DType::Float64, DType::Int32, DType::Bool,
                                 DType::Int8,    DType::UInt8,   DType::Int64, DType::UInt32};
        to = targets[c];
        if (to == ai.dtype) return;
        bool to_int = !is_float(to) && to != DType::Bool;
        if (fl && to_int && ai.bound > 1e6) return;  // out-of-range float -> int conversions
        if (fl && !is_float(to) && !ai.exact) return;  // truncation is discontinuous
        double bound = to == DType::Bool ? 1 : to == DType::Int8 ? 128 : to == DType::UInt8 ? 255 : ai.bound;
        if (to == DType::UInt32 && (ai.dtype == DType::Int32 || fl)) bound = 4.3e9;
        Step s = step(Op::Convert, 0, {a});
        s.dtype = to;
        push(p, s, ValueInfo{ai.shape, to, bound});
        return;
      }
      case 9: {  // broadcast_in_dim into a random larger shape
        int out_rank = uniform(r, 3);
        if (out_rank == r && r > 0 && chance(0.5)) return;
        // Choose which output dims the operand's dims land on (increasing).
        std::vector<int64_t> positions(static_cast<size_t>(out_rank));
        std::iota(positions.begin(), positions.end(), 0);
        std::shuffle(positions.begin(), positions.end(), rng_);
        positions.resize(static_cast<size_t>(r));
        std::sort(positions.begin(), positions.end());
        Shape out(static_cast<size_t>(out_rank));
        for (auto& d : out) d = uniform(1, 5);
        for (int i = 0; i < r; ++i) {
          int64_t d = ai.shape[static_cast<size_t>(i)];
          out[static_cast<size_t>(positions[static_cast<size_t>(i)])] = d == 1 && chance(0.5) ? uniform(1, 5) : d;
        }
        Step s = step(Op::Broadcast, 0, {a}, positions);
        s.shape = out;
        push(p, s, ValueInfo{out, ai.dtype, ai.bound});
        return;
      }
      case 10: {  // transpose
        if (r < 2) return;
        std::vector<int64_t> perm(static_cast<size_t>(r));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng_);
        Shape out;
        for (int64_t d : perm) out.push_back(ai.shape[static_cast<size_t>(d)]);
        push(p, step(Op::Transpose, 0, {a}, perm), ValueInfo{out, ai.dtype, ai.bound});
        return;
      }
      case 11: {  // slice
        if (r == 0) return;
        std::vector<int64_t> start, limit, stride;
        Shape out;
        for (int64_t d : ai.shape) {
          int64_t s0 = uniform(0, static_cast<int>(d) - 1);
          int64_t l = uniform(static_cast<int>(s0) + 1, static_cast<int>(d));
          int64_t st = chance(0.3) ? uniform(1, 3) : 1;
          start.push_back(s0);
          limit.push_back(l);
          stride.push_back(st);
          out.push_back((l - s0 + st - 1) / st);
        }
        push(p, step(Op::Slice, 0, {a}, start, limit, stride), ValueInfo{out, ai.dtype, ai.bound});
        return;
      }
      case 12: {  // rev
        if (r == 0) return;
        std::vector<int64_t> dims;
        for (int i = 0; i < r; ++i)
          if (chance(0.5)) dims.push_back(i);
        if (dims.empty()) dims.push_back(uniform(0, r - 1));
        push(p, step(Op::Rev, 0, {a}, dims), ValueInfo{ai.shape, ai.dtype, ai.bound});
        return;
      }
      case 13: {  // reshape: regroup the elements into another shape of the same size
        int64_t n = shape_size(ai.shape);
        Shape out;
        int64_t left = n;
        int out_rank = uniform(0, 3);
        for (int i = 0; i + 1 < out_rank; ++i) {
          std::vector<int64_t> divisors;
          for (int64_t d = 1; d <= left; ++d)
            if (left % d == 0) divisors.push_back(d);
          int64_t d = divisors[static_cast<size_t>(uniform(0, static_cast<int>(divisors.size()) - 1))];
          out.push_back(d);
          left /= d;
        }
        if (out_rank > 0) out.push_back(left);
        else if (n != 1) return;
        Step s = step(Op::Reshape, 0, {a});
        s.shape = out;
        push(p, s, ValueInfo{out, ai.dtype, ai.bound});
        return;
      }
      case 14: {  // reduction over a random subset of axes
        std::vector<int64_t> axes;
        for (int i = 0; i < r; ++i)
          if (chance(0.5)) axes.push_back(i);
        int k;
        if (bo) k = uniform(3, 4);
        else if (in) k = uniform(0, 2);
        else k = chance(0.4) ? 0 : uniform(1, 2);
        Shape out;
        int64_t n = 1;
        for (int i = 0; i < r; ++i) {
          if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.push_back(ai.shape[static_cast<size_t>(i)]);
          else n *= ai.shape[static_cast<size_t>(i)];
        }
        double bound = k == 0 ? ai.bound * static_cast<double>(n) : ai.bound;
        if (in && k == 0) bound = std::max(bound, 64.0);
        push(p, step(Op::Reduce, k, {a}, axes), ValueInfo{out, ai.dtype, bound});
        return;
      }
      case 16: {  // integer_pow
        if (bo) return;
        int y = uniform(2, 3);
        if (std::pow(ai.bound, y) > 1e6) return;
        push(p, step(Op::IntegerPow, y, {a}), ValueInfo{ai.shape, ai.dtype, std::pow(ai.bound, y)});
        return;
      }
      case 17: {  // clamp
        if (bo || uns) return;
        Step s = step(Op::Clamp, 0, {a});
        s.constant = in ? uniform(0, 10) : uniform(0, 8) * 0.25;
        push(p, s, ValueInfo{ai.shape, ai.dtype, s.constant});
        return;
      }
      case 18: {  // more float unary functions, or integer division
        if (fl) {
          int k = uniform(0, 5);
          if (k == 0 && ai.bound > 10) k = 1;
          if (k >= 3 && !ai.exact) k = 2;  // sign, ceil, round are discontinuous
          double bound = k == 0 ? std::exp(ai.bound) : k <= 3 ? 2.0 : ai.bound + 1;
          push(p, step(Op::MoreUnary, k, {a}), ValueInfo{ai.shape, ai.dtype, bound});
        } else if (in && !uns) {
          int b = partner(p, a);
          push(p, step(Op::IntDivRem, uniform(0, 1), {a, b}), ValueInfo{ai.shape, ai.dtype, ai.bound});
        }
        return;
      }
      case 19: {  // atan2
        if (!fl) return;
        int b = partner(p, a);
        push(p, step(Op::Atan2, 0, {a, b}), ValueInfo{ai.shape, ai.dtype, 3.2});
        return;
      }
      case 20: {  // three-way select on an int32 selector
        if (ai.dtype != DType::Int32) return;
        int u = pick(p);
        ValueInfo ui = p.values[static_cast<size_t>(u)];
        int c0 = coerce(p, u, ai.shape, ui.dtype);
        int c1 = partner(p, c0), c2 = partner(p, c0);
        double bound = std::max({p.values[static_cast<size_t>(c0)].bound, p.values[static_cast<size_t>(c1)].bound,
                                 p.values[static_cast<size_t>(c2)].bound});
        push(p, step(Op::Select3, 0, {a, c0, c1, c2}), ValueInfo{ai.shape, ui.dtype, bound});
        return;
      }
      case 21: {  // squeeze size-1 dims, or insert some
        std::vector<int64_t> ones;
        for (int i = 0; i < r; ++i)
          if (ai.shape[static_cast<size_t>(i)] == 1) ones.push_back(i);
        if (!ones.empty() && chance(0.6)) {
          Shape out;
          for (int i = 0; i < r; ++i)
            if (ai.shape[static_cast<size_t>(i)] != 1) out.push_back(ai.shape[static_cast<size_t>(i)]);
          push(p, step(Op::Squeeze, 0, {a}, ones), ValueInfo{out, ai.dtype, ai.bound});
        } else if (r < 3) {
          int64_t at = uniform(0, r);
          Shape out = ai.shape;
          out.insert(out.begin() + at, 1);
          push(p, step(Op::ExpandDims, 0, {a}, {at}), ValueInfo{out, ai.dtype, ai.bound});
        }
        return;
      }
      case 22: {  // argmax / argmin
        if (r == 0 || bo) return;
        int64_t axis = uniform(0, r - 1);
        Shape out = ai.shape;
        out.erase(out.begin() + axis);
        push(p, step(Op::ArgMax, uniform(0, 1), {a}, {axis}), ValueInfo{out, DType::Int32, 7});
        return;
      }
      case 23: {  // cumsum
        if (r == 0 || bo) return;
        int64_t axis = uniform(0, r - 1);
        double bound = ai.bound * static_cast<double>(ai.shape[static_cast<size_t>(axis)]);
        if (in) bound = std::max(bound, 64.0);
        push(p, step(Op::Cumsum, uniform(0, 1), {a}, {axis}), ValueInfo{ai.shape, ai.dtype, bound});
        return;
      }
      case 24: {  // concatenate with a partner
        if (r == 0) return;
        int b = partner(p, a);
        int64_t axis = uniform(0, r - 1);
        Shape out = ai.shape;
        out[static_cast<size_t>(axis)] *= 2;
        double bound = std::max(ai.bound, p.values[static_cast<size_t>(b)].bound);
        push(p, step(Op::Concat, 0, {a, b}, {axis}), ValueInfo{out, ai.dtype, bound});
        return;
      }
      case 25: {  // pad (negative lo/hi crop)
        if (r == 0) return;
        std::vector<int64_t> lo, hi, interior;
        Shape out;
        for (int64_t d : ai.shape) {
          int64_t in_ = chance(0.3) ? 1 : 0;
          int64_t grown = d + (d - 1) * in_;
          int64_t l = uniform(-1, 2), h = uniform(-1, 2);
          if (grown + l + h < 1) l = h = 0;
          lo.push_back(l);
          hi.push_back(h);
          interior.push_back(in_);
          out.push_back(grown + l + h);
        }
        Step s = step(Op::Pad, 0, {a}, lo, hi, interior);
        s.constant = bo ? 1 : in ? -3 : 0.5;
        push(p, s, ValueInfo{out, ai.dtype, std::max(ai.bound, 3.0)});
        return;
      }
      default: {  // dot of rank-2 floats, or an iota
        if (fl && r == 2) {
          int64_t k = ai.shape[1];
          int b = pick_where(p, [&](const ValueInfo& v) {
            return v.dtype == ai.dtype && v.shape.size() == 2 && v.shape[0] == k;
          });
          if (b < 0) {  // a^T @ a' with a' = a: contract dim 1 of a^T with dim 0 of a
            Step t = step(Op::Transpose, 0, {a}, {1, 0});
            int at = push(p, t, ValueInfo{{ai.shape[1], ai.shape[0]}, ai.dtype, ai.bound});
            push(p, step(Op::Dot, 0, {at, a}),
                 ValueInfo{{ai.shape[1], ai.shape[1]}, ai.dtype, ai.bound * ai.bound * static_cast<double>(ai.shape[0])});
            return;
          }
          const ValueInfo& bi = p.values[static_cast<size_t>(b)];
          push(p, step(Op::Dot, 0, {a, b}),
               ValueInfo{{ai.shape[0], bi.shape[1]}, ai.dtype, ai.bound * bi.bound * static_cast<double>(k)});
          return;
        }
        if (r == 0) return;
        Step s = step(Op::Iota, 0, {}, {uniform(0, r - 1)});
        s.shape = ai.shape;
        s.dtype = chance(0.5) ? DType::Int32 : main_float_;
        push(p, s, ValueInfo{ai.shape, s.dtype, 7});
        return;
      }
    }
  }

  std::mt19937_64 rng_;
  DType main_float_ = DType::Float32;
  bool large_ = false;
};

}  // namespace jx::testing::random_program
