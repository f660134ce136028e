// Native kernels of single elementwise equations against eager evaluation, for every
// elementwise primitive and every native dtype its shape rule accepts: bitwise equal
// for integer, bool and exactly rounded float ops and for the transcendentals that call
// eager's libmvec variant; within a few ULP, with exact special values, for the ones
// kernels compute inline (fast_math.h: exp f32/f64, tanh f32, erf f32, logistic). Inputs
// are every pair of edge values (0, -0, ±inf, NaN, INT_MIN, division by zero, shifts by
// the width or more...) followed by random values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backend/cpu/vector_math.h"
#include "jit/codegen/kernel.h"
#include "jit/kernel_support.h"
#include "jx/jaxpr.h"
#include "jx/jx.h"
#include "op_table.h"
#include "test_util.h"

namespace jx {
namespace {

const std::vector<DType> kNativeDTypes = {DType::Bool,   DType::Int8,   DType::Int16,   DType::Int32,  DType::Int64,
                                          DType::UInt8,  DType::UInt32, DType::Float32, DType::Float64};

const Primitive& prim(std::string_view name) {
  const Primitive* p = find_primitive(name);
  if (!p) throw std::runtime_error(detail::cat("no primitive ", name));
  return *p;
}

// { lambda ; a b ... . let out = p[params] a b ... in (out,) }, or nullopt when p's shape
// rule refuses the operand types.
std::optional<Jaxpr> one_equation(const Primitive& p, const std::vector<Aval>& in, const Params& params = {}) {
  std::vector<Aval> out;
  try {
    out = p.abstract_eval(in, params);
  } catch (const Error&) {
    return std::nullopt;
  }
  Jaxpr j;
  Equation eqn{&p, {}, {}, params};
  int64_t id = 0;
  for (const Aval& a : in) {
    Var v{id++, a};
    j.invars.push_back(v);
    eqn.inputs.emplace_back(v);
  }
  for (const Aval& a : out) {
    Var v{id++, a};
    eqn.outputs.push_back(v);
    j.outvars.emplace_back(v);
  }
  j.eqns.push_back(std::move(eqn));
  verify_jaxpr(j);
  return j;
}

// Compiles `j` as a loop kernel and runs it on contiguous copies of `args`.
std::vector<Array> run_native(const Jaxpr& j, const std::vector<Array>& args, const std::string& name,
                              const std::string& kind = "loop") {
  compiler::KernelOptions options;
  options.name = name;
  options.disk_cache = false;
  std::unique_ptr<compiler::Kernel> kernel = compiler::compile_kernel(j, kind, options);
  std::vector<std::vector<unsigned char>> in_buf, out_buf;
  std::vector<const void*> in_ptr;
  std::vector<void*> out_ptr;
  for (const Array& a : args) {
    in_buf.emplace_back(static_cast<size_t>(std::max<int64_t>(a.nbytes(), 1)));
    a.copy_to(in_buf.back().data(), a.dtype());
  }
  for (auto& b : in_buf) in_ptr.push_back(b.data());
  std::vector<Aval> outs = j.out_avals();
  for (const Aval& a : outs) out_buf.emplace_back(static_cast<size_t>(std::max<int64_t>(a.size() * itemsize(a.dtype), 1)));
  for (auto& b : out_buf) out_ptr.push_back(b.data());
  kernel->run(in_ptr.data(), out_ptr.data());
  std::vector<Array> result;
  for (size_t i = 0; i < outs.size(); ++i) result.emplace_back(out_buf[i].data(), outs[i].shape, outs[i].dtype);
  return result;
}

// "[y=3]", or "" without parameters.
std::string params_text(const Params& params) { return params.empty() ? std::string() : detail::cat("[", params.str(), "]"); }

// ---- inputs ----

constexpr int64_t kN = 2063;  // not a multiple of any vector width: the remainder loop runs too

std::vector<double> edge_values(DType d) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (d) {
    case DType::Bool: return {0, 1};
    case DType::Int8: return {0, 1, -1, 2, -2, 7, 8, 9, -128, 127, -127, 100, -100, 64};
    case DType::Int16: return {0, 1, -1, 2, -2, 15, 16, 17, -32768, 32767, -32767, 1000, -1000};
    case DType::Int32: return {0, 1, -1, 2, -2, 31, 32, 33, -2147483648.0, 2147483647.0, -2147483647.0, 100000, -100000};
    case DType::Int64: return {0, 1, -1, 2, -2, 63, 64, 65, -9223372036854775808.0, 1e18, -1e18, 123456789, -77};
    case DType::UInt8: return {0, 1, 2, 7, 8, 9, 127, 128, 254, 255, 100};
    case DType::UInt32: return {0, 1, 2, 31, 32, 33, 2147483647.0, 2147483648.0, 4294967295.0, 4294967294.0, 77777};
    default: {
      const double denorm = d == DType::Float32 ? std::numeric_limits<float>::denorm_min() : std::numeric_limits<double>::denorm_min();
      const double big = d == DType::Float32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
      return {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, inf, -inf, std::nan(""), denorm, -denorm,
              big, -big, 1e-30, 3.14159, 100.0, -100.0, 3e9, -3e9, 255.5, -128.5, 2147483648.0, 9.3e18, 0.999, -7.0};
    }
  }
}

double random_value(DType d, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  switch (d) {
    case DType::Bool: return static_cast<double>(rng() & 1);
    case DType::Int8: return static_cast<double>(static_cast<int8_t>(rng()));
    case DType::Int16: return static_cast<double>(static_cast<int16_t>(rng()));
    case DType::Int32: return static_cast<double>(static_cast<int32_t>(rng()));
    case DType::Int64: return static_cast<double>(static_cast<int32_t>(rng())) * 4096.0;
    case DType::UInt8: return static_cast<double>(static_cast<uint8_t>(rng()));
    case DType::UInt32: return static_cast<double>(static_cast<uint32_t>(rng()));
    default: {
      // Mostly moderate values, some small and some large.
      const int k = static_cast<int>(rng() % 4);
      if (k == 0) return u(rng) * 4;
      if (k == 1) return u(rng) * 100;
      if (k == 2) return u(rng) * 1e-3;
      return std::ldexp(u(rng), static_cast<int>(rng() % 40) - 20);
    }
  }
}

// Operand `k` of `arity` operands of dtype d: every pair (triple) of edge values first
// (operand 0 varies slowest), then random values; n elements in all.
Array make_operand(DType d, int k, int arity, int64_t n, uint64_t seed) {
  std::vector<double> edges = edge_values(d);
  std::mt19937_64 rng(seed * 7919 + static_cast<uint64_t>(k) * 104729 + static_cast<uint64_t>(d));
  std::vector<double> v(static_cast<size_t>(n));
  int64_t combos = 1;
  for (int i = 0; i < arity; ++i) combos *= static_cast<int64_t>(edges.size());
  combos = std::min(combos, n - 512);  // leaves random values too
  int64_t stride = 1;
  for (int i = k + 1; i < arity; ++i) stride *= static_cast<int64_t>(edges.size());
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        i < combos ? edges[static_cast<size_t>((i / stride) % static_cast<int64_t>(edges.size()))] : random_value(d, rng);
  return lax::convert_element_type(Array(v, Shape{n}), d);
}

// kN copies of v as dtype d.
Array filled(DType d, int v) { return lax::broadcast_in_dim(lax::convert_element_type(Array(v), d), {kN}, {}); }

// ---- comparison ----

// Distance in units in the last place between two finite or infinite floats of one
// type (0 for two NaNs; "infinite" when exactly one is NaN).
template <class F, class I>
uint64_t ulp_distance(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : ~uint64_t{0};
  auto ordered = [](F x) {
    I i;
    std::memcpy(&i, &x, sizeof(F));
    return i < 0 ? std::numeric_limits<I>::min() - i : i;  // monotone in x, -0 == +0
  };
  I ia = ordered(a), ib = ordered(b);
  return ia > ib ? static_cast<uint64_t>(ia) - static_cast<uint64_t>(ib) : static_cast<uint64_t>(ib) - static_cast<uint64_t>(ia);
}

// Checks native == eager: bitwise (NaN matching any NaN) when max_ulp is 0, else within
// max_ulp units in the last place for finite nonzero results, while NaN, infinities and
// zeros (with their sign) must still match exactly: ULP distance alone would accept
// FLT_MAX for inf or -0 for +0. Reports the first few mismatches with their inputs.
::testing::AssertionResult matches(const Array& native, const Array& eager, const std::vector<Array>& args,
                                   uint64_t max_ulp) {
  if (native.dtype() != eager.dtype() || native.shape() != eager.shape())
    return ::testing::AssertionFailure() << "native " << native.aval().str() << " vs eager " << eager.aval().str();
  const int64_t n = native.size();
  int64_t bad = 0;
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  auto describe = [&](int64_t i) {
    std::string s = "[";
    for (const Array& a : args) s += detail::cat((a.ndim() == 0 ? a : a[i]).astype(DType::Float64).item<double>(), " ");
    return s + "]";
  };
  if (is_floating(native.dtype())) {
    std::vector<double> a = native.to_vector<double>(), b = eager.to_vector<double>();
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t d = native.dtype() == DType::Float32
                             ? ulp_distance<float, int32_t>(static_cast<float>(a[i]), static_cast<float>(b[i]))
                             : ulp_distance<double, int64_t>(a[i], b[i]);
      // Bitwise for exact ops, including the sign of zero.
      const bool special = std::isnan(a[i]) || std::isnan(b[i]) || std::isinf(a[i]) || std::isinf(b[i]) || a[i] == 0 || b[i] == 0;
      const bool bitwise = d == 0 && (std::isnan(a[i]) || std::signbit(a[i]) == std::signbit(b[i]));
      const bool ok = max_ulp == 0 || special ? bitwise : d <= max_ulp;
      if (!ok && ++bad <= 5)
        failure << "\n  at " << i << " inputs " << describe(i) << ": native " << a[i] << " eager " << b[i] << " (" << d
                << " ulp)";
    }
  } else {
    std::vector<int64_t> a = native.to_vector<int64_t>(), b = eager.to_vector<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      if (a[i] != b[i] && ++bad <= 5)
        failure << "\n  at " << i << " inputs " << describe(i) << ": native " << a[i] << " eager " << b[i];
  }
  if (bad) return failure << "\n  " << bad << " of " << n << " elements differ";
  return ::testing::AssertionSuccess();
}

int g_kernel_count = 0;
// Tolerances of the native kernels per row are in tests/op_table.cpp (jit_ulp,
// inline_ulp): transcendentals call the libmvec variant eager runs for the current vector
// ISA (bitwise), the inline polynomials of fast_math.h stay within a few ULP, and NaN,
// infinities and zeros stay exact (matches()).
// A tolerance: float sums and products a kernel may reassociate (allclose, not ULP).
constexpr uint64_t kReassociated = ~uint64_t{0};

// Equations checked together: each has its own inputs and output in one fused program,
// compiled once as a loop kernel (compiling one kernel per equation would take most of
// this test's time), then every output is compared with eager's.
class KernelBatch {
 public:
  explicit KernelBatch(std::string kind = "loop") : kind_(std::move(kind)) {}

  // Adds p(in...) when p's shape rule accepts the types (returns whether it did). Inputs
  // are edge values and random values unless `given` holds them.
  bool add(const Primitive& p, const std::vector<Aval>& in, const Params& params, uint64_t max_ulp,
           std::vector<Array> given = {}) {
    std::optional<Jaxpr> one = one_equation(p, in, params);
    if (!one) return false;
    Equation eqn = one->eqns[0];
    std::string why;
    if (kind_ == "loop") EXPECT_TRUE(compiler::scalar_op_supported(eqn, &why)) << p.name() << ": " << why;
    else if (!compiler::reduction_supported(eqn, &why)) return false;
    Check check{detail::cat(p.name(), params_text(params), " of"), max_ulp, {}};
    for (size_t k = 0; k < in.size(); ++k) {
      check.label += detail::cat(" ", in[k].str());
      check.args.push_back(given.empty() ? make_operand(in[k].dtype, static_cast<int>(k), static_cast<int>(in.size()),
                                                        in[k].size(), 1 + k)
                                         : given[k]);
      Var v{next_id_++, in[k]};
      program_.invars.push_back(v);
      eqn.inputs[k] = v;
      args_.push_back(check.args.back());
    }
    Var out{next_id_++, eqn.outputs[0].aval};
    eqn.outputs[0] = out;
    program_.outvars.emplace_back(out);
    program_.eqns.push_back(std::move(eqn));
    checks_.push_back(std::move(check));
    return true;
  }

  // Compiles, runs and compares; returns how many equations were checked.
  size_t run() {
    if (checks_.empty()) return 0;
    verify_jaxpr(program_);
    std::vector<Array> eager = eval_jaxpr(program_, {}, args_);
    std::vector<Array> native = run_native(program_, args_, detail::cat("scalar_ops_test.k", g_kernel_count++), kind_);
    for (size_t i = 0; i < checks_.size(); ++i) {
      if (checks_[i].max_ulp == kReassociated) {
        const DType d = eager[i].dtype();
        EXPECT_ALLCLOSE(native[i], eager[i], d == DType::Float32 ? 1e-5 : 1e-12, 1e-5) << checks_[i].label;
      } else {
        EXPECT_TRUE(matches(native[i], eager[i], checks_[i].args, checks_[i].max_ulp)) << checks_[i].label;
      }
    }
    return checks_.size();
  }

 private:
  struct Check {
    std::string label;
    uint64_t max_ulp;
    std::vector<Array> args;
  };
  std::string kind_;
  Jaxpr program_;
  int64_t next_id_ = 0;
  std::vector<Check> checks_;
  std::vector<Array> args_;
};

std::vector<Aval> same_avals(DType d, int arity) { return std::vector<Aval>(static_cast<size_t>(arity), Aval{{kN}, d, false}); }

// ---- the op table's jit scalar-op rows (tests/op_table.cpp) ----

using op_table::OpRow;

std::vector<const OpRow*> scalar_op_rows() {
  std::vector<const OpRow*> out;
  for (const OpRow& row : op_table::rows())
    if (row.jit_ulp) out.push_back(&row);
  return out;
}

class ScalarOp : public ::testing::TestWithParam<const OpRow*> {};

TEST_P(ScalarOp, MatchesEagerForEveryDType) {
  const OpRow& row = *GetParam();
  KernelBatch batch;
  for (DType d : kNativeDTypes) batch.add(prim(row.primitive), same_avals(d, row.arity), row.params, row.jit_ulp_for(d));
  EXPECT_GT(batch.run(), 0u) << row.label() << " accepted no native dtype";
}

std::string row_name(const ::testing::TestParamInfo<const OpRow*>& info) {
  std::string s = info.param->primitive;
  if (info.param->params.has("rounding_method")) s += detail::cat("_method", info.param->params.get_int("rounding_method"));
  return s;
}

INSTANTIATE_TEST_SUITE_P(Elementwise, ScalarOp, ::testing::ValuesIn(scalar_op_rows()), row_name);

// ---- rows with parameters or mixed operand types ----

// The inline functions (fast_math.h) keep libm's special values exactly: NaN in, NaN out;
// ±inf, ±0 with the sign of zero; exp's overflow and underflow thresholds as libm's (the
// last finite and first zero results on each side); tanh and erf saturating to exactly ±1.
// Each value checked in every lane of a vector body and in the scalar remainder (kN
// copies), against the expected constant and against eager.
TEST(ScalarOps, InlineFunctionsKeepLibmSpecialValues) {
  constexpr double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  constexpr double kNonzeroFinite = 12345.0;  // marker: any finite nonzero value (not 0, not inf)
  struct Special {
    const char* name;
    DType dtype;
    double x, expected;
  };
  const std::vector<Special> specials = {
      {"exp", DType::Float32, nan, nan}, {"exp", DType::Float32, inf, inf}, {"exp", DType::Float32, -inf, 0.0},
      {"exp", DType::Float32, 0.0, 1.0}, {"exp", DType::Float32, -0.0, 1.0}, {"exp", DType::Float32, 89.0, inf},
      {"exp", DType::Float32, 88.7228, kNonzeroFinite}, {"exp", DType::Float32, -104.0, 0.0},
      {"exp", DType::Float32, -103.0, kNonzeroFinite}, {"exp", DType::Float32, 1e30, inf},
      {"exp", DType::Float32, -1e30, 0.0}, {"exp", DType::Float64, nan, nan}, {"exp", DType::Float64, inf, inf},
      {"exp", DType::Float64, -inf, 0.0}, {"exp", DType::Float64, 0.0, 1.0}, {"exp", DType::Float64, -0.0, 1.0},
      {"exp", DType::Float64, 710.0, inf}, {"exp", DType::Float64, 709.78, kNonzeroFinite},
      {"exp", DType::Float64, -746.0, 0.0}, {"exp", DType::Float64, -744.0, kNonzeroFinite},
      {"exp", DType::Float64, 1e300, inf}, {"exp", DType::Float64, -1e300, 0.0},
      {"tanh", DType::Float32, nan, nan}, {"tanh", DType::Float32, inf, 1.0}, {"tanh", DType::Float32, -inf, -1.0},
      {"tanh", DType::Float32, 0.0, 0.0}, {"tanh", DType::Float32, -0.0, -0.0}, {"tanh", DType::Float32, 20.0, 1.0},
      {"tanh", DType::Float32, -20.0, -1.0}, {"tanh", DType::Float32, 1e-30, static_cast<float>(1e-30)},
      {"tanh", DType::Float32, -1e-30, static_cast<float>(-1e-30)},
      {"erf", DType::Float32, nan, nan}, {"erf", DType::Float32, inf, 1.0}, {"erf", DType::Float32, -inf, -1.0},
      {"erf", DType::Float32, 0.0, 0.0}, {"erf", DType::Float32, -0.0, -0.0}, {"erf", DType::Float32, 5.0, 1.0},
      {"erf", DType::Float32, -5.0, -1.0},
      {"logistic", DType::Float32, nan, nan}, {"logistic", DType::Float32, inf, 1.0},
      {"logistic", DType::Float32, -inf, 0.0}, {"logistic", DType::Float32, 0.0, 0.5},
      {"logistic", DType::Float32, -0.0, 0.5}, {"logistic", DType::Float32, 200.0, 1.0},
      {"logistic", DType::Float32, -200.0, 0.0}, {"logistic", DType::Float64, nan, nan},
      {"logistic", DType::Float64, inf, 1.0}, {"logistic", DType::Float64, -inf, 0.0},
      {"logistic", DType::Float64, 0.0, 0.5}, {"logistic", DType::Float64, 1000.0, 1.0},
      {"logistic", DType::Float64, -1000.0, 0.0}};
  for (const Special& c : specials) {
    SCOPED_TRACE(detail::cat(c.name, "(", c.x, ") ", dtype_name(c.dtype)));
    std::optional<Jaxpr> j = one_equation(prim(c.name), same_avals(c.dtype, 1));
    ASSERT_TRUE(j);
    const Array x = lax::broadcast_in_dim(lax::convert_element_type(Array(c.x), c.dtype), {kN}, {});
    const std::vector<double> native =
        run_native(*j, {x}, detail::cat("scalar_ops_test.special", g_kernel_count++))[0].to_vector<double>();
    const std::vector<double> eager = eval_jaxpr(*j, {}, std::vector<Array>{x})[0].to_vector<double>();
    int bad = 0;
    for (int64_t i = 0; i < kN && bad < 3; ++i) {
      const double v = native[static_cast<size_t>(i)];
      bool ok;
      if (c.expected == kNonzeroFinite) ok = std::isfinite(v) && v != 0;
      else if (std::isnan(c.expected)) ok = std::isnan(v);
      else ok = v == c.expected && std::signbit(v) == std::signbit(c.expected);
      // Eager's libm / libmvec gives the same special value.
      if (c.expected != kNonzeroFinite)
        ok = ok && (std::isnan(v) ? std::isnan(eager[static_cast<size_t>(i)])
                                  : v == eager[static_cast<size_t>(i)] &&
                                        std::signbit(v) == std::signbit(eager[static_cast<size_t>(i)]));
      if (!ok) {
        ++bad;
        ADD_FAILURE() << "element " << i << ": native " << v << " eager " << eager[static_cast<size_t>(i)] << " expected "
                      << (c.expected == kNonzeroFinite ? std::string("finite nonzero") : detail::cat(c.expected));
      }
    }
  }
}

TEST(ScalarOps, IntegerPowEveryExponent) {
  KernelBatch batch;
  for (int64_t y : {0, 1, 2, 3, 5, 13, -1, -2, -7})
    for (DType d : kNativeDTypes) batch.add(prim("integer_pow"), same_avals(d, 1), {{"y", y}}, 0);
  EXPECT_EQ(batch.run(), 6u * 8u + 3u * 2u);  // negative powers of floats only
}

TEST(ScalarOps, PowWithIntegerExponentIsExactRepeatedSquaring) {
  KernelBatch batch;
  for (DType base : {DType::Float32, DType::Float64})
    for (DType e : {DType::Int8, DType::Int32, DType::Int64, DType::UInt8, DType::UInt32}) {
      std::vector<Aval> in{{{kN}, base, false}, {{kN}, e, false}};
      std::vector<Array> args{make_operand(base, 0, 2, kN, 3),
                              lax::rem(make_operand(e, 1, 2, kN, 4), filled(e, 40))};
      EXPECT_TRUE(batch.add(prim("pow"), in, {}, 0, args)) << dtype_name(e);
    }
  batch.run();
}

TEST(ScalarOps, ConvertEveryPairOfDTypes) {
  size_t pairs = 0;
  for (DType from : kNativeDTypes) {
    KernelBatch batch;  // one kernel per source dtype
    for (DType to : kNativeDTypes)
      batch.add(prim("convert_element_type"), same_avals(from, 1), {{"new_dtype", to}, {"weak_type", false}}, 0);
    pairs += batch.run();
  }
  EXPECT_EQ(pairs, 81u);
}

TEST(ScalarOps, SelectNByBoolAndIntegerPredicates) {
  KernelBatch batch;
  for (DType cases : kNativeDTypes) {
    std::vector<Aval> two{{{kN}, DType::Bool, false}, {{kN}, cases, false}, {{kN}, cases, false}};
    EXPECT_TRUE(batch.add(prim("select_n"), two, {}, 0));
    for (DType which : {DType::Int32, DType::Int8, DType::UInt8, DType::UInt32, DType::Int64}) {
      // Predicates around and beyond [0, 3): negative and too large ones clamp as eager.
      std::vector<Aval> three{{{kN}, which, false}, {{kN}, cases, false}, {{kN}, cases, false}, {{kN}, cases, false}};
      std::vector<Array> args{lax::convert_element_type(lax::rem(make_operand(DType::Int32, 0, 1, kN, 9), filled(DType::Int32, 6)), which),
                              make_operand(cases, 1, 3, kN, 10), make_operand(cases, 2, 3, kN, 11),
                              make_operand(cases, 0, 3, kN, 12)};
      EXPECT_TRUE(batch.add(prim("select_n"), three, {}, 0, args));
    }
  }
  // One case, whatever the predicate.
  std::vector<Aval> one{{{kN}, DType::Int32, false}, {{kN}, DType::Float32, false}};
  EXPECT_TRUE(batch.add(prim("select_n"), one, {}, 0));
  // A 0-d predicate picks one case for every element.
  for (int w : {-1, 1, 7}) {
    std::vector<Aval> scalar_which{{{}, DType::Int32, false}, {{kN}, DType::Int16, false}, {{kN}, DType::Int16, false}};
    EXPECT_TRUE(batch.add(prim("select_n"), scalar_which, {}, 0,
                          {Array(w), make_operand(DType::Int16, 0, 1, kN, 13), make_operand(DType::Int16, 0, 1, kN, 14)}));
  }
  std::vector<Aval> bool_which{{{}, DType::Bool, false}, {{kN}, DType::Float64, false}, {{kN}, DType::Float64, false}};
  EXPECT_TRUE(batch.add(prim("select_n"), bool_which, {}, 0,
                        {Array(true), make_operand(DType::Float64, 0, 1, kN, 15), make_operand(DType::Float64, 0, 1, kN, 16)}));
  EXPECT_EQ(batch.run(), 9u * 6u + 1u + 3u + 1u);
}

TEST(ScalarOps, ClampWithScalarBounds) {
  KernelBatch batch;
  for (DType d : {DType::Float32, DType::Int32, DType::UInt8}) {
    std::vector<Aval> in{{{}, d, false}, {{kN}, d, false}, {{}, d, false}};
    std::vector<Array> args{lax::convert_element_type(Array(-3), d), make_operand(d, 0, 1, kN, 5),
                            lax::convert_element_type(Array(100), d)};
    EXPECT_TRUE(batch.add(prim("clamp"), in, {}, 0, args));
  }
  batch.run();
}

// Literal operands (emit_literal): every edge value of every dtype, NaN and -0 included,
// as clamp's 0-d bounds, clamp(lit, x, lit) and clamp(lit, x, x), which every dtype has
// and which tell -0 from +0.
TEST(ScalarOps, LiteralOperandsKeepTheirExactValue) {
  for (DType d : kNativeDTypes) {
    Jaxpr j;
    Var x{0, Aval{{kN}, d, false}};
    j.invars.push_back(x);
    int64_t id = 1;
    for (double e : edge_values(d)) {
      Literal literal{lax::convert_element_type(Array(e), d)};
      for (bool hi_is_x : {false, true}) {
        Var out{id++, Aval{{kN}, d, false}};
        j.eqns.push_back(Equation{&prim("clamp"), {Atom(literal), Atom(x), hi_is_x ? Atom(x) : Atom(literal)}, {out}, {}});
        j.outvars.emplace_back(out);
      }
    }
    verify_jaxpr(j);
    std::vector<Array> args{make_operand(d, 0, 1, kN, 21)};
    std::vector<Array> eager = eval_jaxpr(j, {}, args);
    std::vector<Array> native = run_native(j, args, detail::cat("scalar_ops_test.lit", g_kernel_count++));
    for (size_t i = 0; i < eager.size(); ++i)
      EXPECT_TRUE(matches(native[i], eager[i], args, 0)) << dtype_name(d) << " literal " << edge_values(d)[i / 2];
  }
}

// ---- reductions: identity and combine (reduction_identity, emit_reduce_combine) ----

// Operand values for a reduction: products stay near 1, a few rows of max/min hold NaN
// or infinities (NaN must win wherever it sits).
Array reduction_operand(const std::string& name, DType d, const Shape& shape) {
  const int64_t n = shape_size(shape);
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (is_floating(d)) {
      v[i] = name == "reduce_prod" ? 1 + 0.05 * u(rng) : u(rng) * 10;
      if ((name == "reduce_max" || name == "reduce_min") && i % 97 == 5) v[i] = std::nan("");
      if (i % 89 == 3) v[i] = (i % 2 ? 1 : -1) * std::numeric_limits<double>::infinity();
      if (name == "reduce_prod" && i % 89 == 3) v[i] = 1;
    } else {
      v[i] = random_value(d, rng);
      if (name == "reduce_and" && rng() % 8) v[i] = d == DType::Bool ? 1 : -1;  // mostly all bits set
    }
  }
  return lax::convert_element_type(Array(v, shape), d);
}

// All six reductions of one dtype over the same axes share a kernel ("reduction" kind).
TEST(ScalarOps, ReductionsMatchEager) {
  size_t checked = 0;
  for (DType d : kNativeDTypes)
    for (std::vector<int64_t> axes : {std::vector<int64_t>{1}, std::vector<int64_t>{0}, std::vector<int64_t>{0, 1}})
      for (Shape shape : {Shape{64, 37}, Shape{3, 0}}) {
        KernelBatch batch("reduction");
        for (const char* name : {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or"}) {
          // Float sums and products may be reassociated (eager's are pairwise, the kernel's
          // vectorized); everything else is exact, NaN propagation included.
          const bool reassociated = is_floating(d) && (std::string(name) == "reduce_sum" || std::string(name) == "reduce_prod");
          batch.add(prim(name), {Aval{shape, d, false}}, {{"axes", axes}}, reassociated ? kReassociated : 0,
                    {reduction_operand(name, d, shape)});
        }
        checked += batch.run();
      }
  // sum, prod, max and min of numbers (reduction_supported sends bool's to eager), and /
  // or of bool and integers.
  EXPECT_EQ(checked, (8u + 8u + 8u + 8u + 7u + 7u) * 3u * 2u);
}

// ---- what native kernels refuse, and why ----

TEST(ScalarOps, SupportPredicateRefusesWithReasons) {
  auto why = [](const Primitive& p, std::vector<Aval> in, Params params = {}) {
    std::optional<Jaxpr> j = one_equation(p, in, params);
    EXPECT_TRUE(j.has_value());
    std::string reason;
    EXPECT_FALSE(compiler::scalar_op_supported(j->eqns[0], &reason));
    return reason;
  };
  EXPECT_EQ(why(prim("add"), same_avals(DType::Complex64, 2)), "complex64 is not supported by native kernels (add)");
  EXPECT_EQ(why(prim("exp"), same_avals(DType::Float16, 1)), "float16 is not supported by native kernels (exp)");
  EXPECT_EQ(why(prim("sin"), same_avals(DType::BFloat16, 1)), "bfloat16 is not supported by native kernels (sin)");
  EXPECT_EQ(why(prim("real"), same_avals(DType::Complex128, 1)),
            "real works on complex numbers, which native kernels do not support");
  EXPECT_EQ(why(prim("convert_element_type"), same_avals(DType::Float32, 1), {{"new_dtype", DType::Complex64}, {"weak_type", false}}),
            "complex64 is not supported by native kernels (convert_element_type)");
  EXPECT_EQ(why(prim("threefry2x32"), same_avals(DType::UInt32, 4)),
            "threefry2x32 has 2 outputs; native kernels compute one value per equation");
  EXPECT_EQ(why(prim("reduce_sum"), same_avals(DType::Float32, 1), {{"axes", std::vector<int64_t>{0}}}),
            "reduce_sum has no native implementation");
  // A bitcast to a narrower type: four bytes from each float, a 0-d one included.
  EXPECT_EQ(why(prim("bitcast_convert_type"), {Aval{{}, DType::Float32}}, {{"new_dtype", DType::UInt8}}),
            "bitcast_convert_type of f32[] giving u8[4] does not compute one element from one element");
  EXPECT_EQ(why(prim("bitcast_convert_type"), {Aval{{3}, DType::Float32}}, {{"new_dtype", DType::UInt8}}),
            "bitcast_convert_type of f32[3] giving u8[3,4] does not compute one element from one element");
}

// Every elementwise primitive is either compiled (its lowering has an elemental emitter)
// or refused by name: none is missed.
TEST(ScalarOps, EveryElementwisePrimitiveIsCovered) {
  std::set<std::string> tested;
  for (const OpRow* r : scalar_op_rows()) tested.insert(r->primitive);
  for (const char* n : {"integer_pow", "convert_element_type", "select_n", "clamp"}) tested.insert(n);
  for (const Primitive* p : all_primitives()) {
    if (!p->has(kElementwise)) continue;
    if (p->name() == "threefry2x32" || p->name() == "real" || p->name() == "imag" || p->name() == "conj") continue;
    EXPECT_TRUE(tested.count(p->name())) << p->name() << " is elementwise but has no jit_ulp row in tests/op_table.cpp";
    EXPECT_TRUE(static_cast<bool>(p->rules().lowering.elemental)) << p->name() << " has no elemental emitter";
  }
}

TEST(ScalarOps, CompileKernelRaisesForUnsupportedEquation) {
  std::optional<Jaxpr> j = one_equation(prim("exp"), same_avals(DType::Complex64, 1));
  ASSERT_TRUE(j.has_value());
  compiler::KernelOptions options;
  options.name = "scalar_ops_test.complex";
  options.disk_cache = false;
  EXPECT_JX_ERROR(compiler::compile_kernel(*j, "loop", options), "[jit]", "complex64");
}

}  // namespace
}  // namespace jx
