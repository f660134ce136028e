// Accuracy of native kernels' transcendentals (libm calls the loop vectorizer widens to
// glibc's libmvec, except exp and logistic in f32 and f64, tanh and erf in f32, and
// sin, cos, tan, log, log1p, expm1 and tanh where codegen::inline_fast_function chose them,
// which are inline polynomials, fast_math.h): max error in units in the last place over 2^18 random
// inputs spread over each function's ranges, against a float64 reference for float32 and
// a long double reference for float64, plus edge cases (0, -0, ±inf, NaN, subnormals, near
// multiples of pi, large arguments): bitwise equal to eager for libmvec functions; for the
// inline ones, NaN, infinities and zeros exactly eager's and other values within a few ULP
// of eager and within the reference bound. The measured maxima are printed and tabled in
// src/jit/codegen/scalar_ops.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numbers>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/vector_math.h"
#include "jit/codegen/fast_math.h"
#include "jit/codegen/kernel.h"
#include "math/fast_functions.h"
#include "ulp.h"
#include "jx/jaxpr.h"
#include "jx/jx.h"

namespace jx {
namespace {

constexpr int64_t kSamples = int64_t{1} << 18;

// { lambda ; a b. let c = p a b in (c,) } over n elements of dtype d.
Jaxpr one_equation(const Primitive& p, DType d, int arity, int64_t n) {
  Jaxpr j;
  Equation eqn{&p, {}, {}, {}};
  std::vector<Aval> in;
  for (int k = 0; k < arity; ++k) {
    Var v{k, Aval{{n}, d, false}};
    j.invars.push_back(v);
    eqn.inputs.emplace_back(v);
    in.push_back(v.aval);
  }
  Var out{arity, p.abstract_eval(in, {})[0]};
  eqn.outputs.push_back(out);
  j.outvars.emplace_back(out);
  j.eqns.push_back(std::move(eqn));
  return j;
}

// Runs `j` natively on contiguous buffers; returns the output's elements.
template <class T>
std::vector<T> run_native(const Jaxpr& j, const std::vector<std::vector<T>>& args, const std::string& name,
                          const std::string& dump_dir = "") {
  compiler::KernelOptions options;
  options.name = name;
  options.dump_dir = dump_dir;
  options.disk_cache = false;
  auto kernel = compiler::compile_kernel(j, "loop", options);
  std::vector<const void*> in;
  for (const auto& a : args) in.push_back(a.data());
  std::vector<T> out(args[0].size());
  void* out_ptr = out.data();
  kernel->run(in.data(), &out_ptr);
  return out;
}

// ---- references and errors ----

template <class T>
using Ref = jx::testing::UlpReference<T>;

using jx::testing::ulp_error;

struct Range {
  double lo, hi;
  bool log_scale = false;  // uniform in log|x| (lo, hi > 0), random sign if `both_signs`
  bool both_signs = false;
};

// kInlineByChoice: src/math/fast_functions.h's functions, inline where
// codegen::inline_fast_function chose them for the dtype and this CPU's ISA.
enum : int { kNoInline = 0, kInlineF32 = 1, kInlineF64 = 2, kInlineBoth = 3, kInlineByChoice = 4 };

struct MathCase {
  const char* name;
  int arity;
  std::vector<Range> f32_ranges, f64_ranges;  // each gets an equal share of the samples
  std::function<double(double, double)> ref64;
  std::function<long double(long double, long double)> ref80;
  double f32_bound, f64_bound;  // max ULP allowed (libmvec documents 4)
  // The dtypes kernels compute with an inline polynomial (fast_math.h) instead of eager's
  // libmvec variant, and how far (ULP) from eager's result those may land.
  int inline_dtypes = kNoInline;
  double eager_ulp = 0;

  bool is_inline(DType d) const {
    if ((inline_dtypes & (d == DType::Float32 ? kInlineF32 : kInlineF64)) != 0) return true;
    if ((inline_dtypes & kInlineByChoice) != 0)
      for (math::FastFunction f : math::kFastFunctions)
        if (std::string_view(name) == math::fast_function_name(f))
          return compiler::codegen::inline_fast_function(f, d, cpu::vector_isa());
    return false;
  }
};

double pick(const Range& r, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  double v = r.log_scale ? std::exp(std::log(r.lo) + u(rng) * (std::log(r.hi) - std::log(r.lo)))
                         : r.lo + u(rng) * (r.hi - r.lo);
  if (r.both_signs && (rng() & 1)) v = -v;
  return v;
}

// Inputs near multiples of pi / 2 (where sin, cos and tan need careful argument reduction).
std::vector<double> near_pi_multiples() {
  std::vector<double> v;
  for (int k = -40; k <= 40; ++k)
    for (double eps : {0.0, 1e-7, -1e-7, 1e-12}) v.push_back(k * std::numbers::pi / 2 + eps);
  for (double big : {1e5, 1e6, 12345.678, 1e15, 1e22, 3.4e38}) v.push_back(big);
  return v;
}

std::vector<double> edge_inputs(bool f32) {
  const double denorm = f32 ? std::numeric_limits<float>::denorm_min() : std::numeric_limits<double>::denorm_min();
  const double tiny = f32 ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
  const double big = f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = {0.0, -0.0, inf, -inf, std::nan(""), denorm, -denorm, tiny, -tiny, 3 * denorm,
                           big, -big, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-8, -1e-8, 100.0, -100.0, 1000.0, -1000.0};
  for (double x : near_pi_multiples()) v.push_back(x);
  return v;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<MathCase>& cases() {
  using LD = long double;
  static const std::vector<MathCase> table = {
      {"exp", 1, {{-87, 88}, {-1, 1}}, {{-708, 709}, {-1, 1}}, [](double x, double) { return std::exp(x); },
       // Inline (fast_math.h): 1 ULP documented (measured 0.87 / 0.95), eager's libmvec 2.6.
       [](LD x, LD) { return expl(x); }, 1, 1, kInlineBoth, 4},
      {"exp2", 1, {{-126, 127}, {-1, 1}}, {{-1022, 1023}, {-1, 1}}, [](double x, double) { return std::exp2(x); },
       [](LD x, LD) { return exp2l(x); }, 4, 4},
      {"expm1", 1, {{-20, 88}, {-1e-3, 1e-3}}, {{-40, 709}, {-1e-3, 1e-3}},
       // From here to tan: inline where chosen (src/math/fast_functions.h, at most 3.4 ULP),
       // else libmvec; within 5 ULP of eager's libmvec result (tan 8).
       [](double x, double) { return std::expm1(x); }, [](LD x, LD) { return expm1l(x); }, 4, 4, kInlineByChoice, 5},
      {"log", 1, {{1e-37, 1e37, true}, {0.5, 2}}, {{1e-300, 1e300, true}, {0.5, 2}},
       [](double x, double) { return std::log(x); }, [](LD x, LD) { return logl(x); }, 4, 4, kInlineByChoice, 5},
      {"log1p", 1, {{-0.999, 10}, {1e-6, 1e-2, true, true}, {10, 1e37, true}},
       {{-0.999, 10}, {1e-9, 1e-2, true, true}, {10, 1e300, true}}, [](double x, double) { return std::log1p(x); },
       [](LD x, LD) { return log1pl(x); }, 4, 4, kInlineByChoice, 5},
      {"sin", 1, {{-10, 10}, {-1e4, 1e4}, {1e4, 1e7, true, true}}, {{-10, 10}, {-1e4, 1e4}, {1e4, 1e15, true, true}},
       [](double x, double) { return std::sin(x); }, [](LD x, LD) { return sinl(x); }, 4, 4, kInlineByChoice, 5},
      {"cos", 1, {{-10, 10}, {-1e4, 1e4}, {1e4, 1e7, true, true}}, {{-10, 10}, {-1e4, 1e4}, {1e4, 1e15, true, true}},
       [](double x, double) { return std::cos(x); }, [](LD x, LD) { return cosl(x); }, 4, 4, kInlineByChoice, 5},
      {"tan", 1, {{-10, 10}, {-1e4, 1e4}, {1e4, 1e7, true, true}}, {{-10, 10}, {-1e4, 1e4}, {1e4, 1e15, true, true}},
       [](double x, double) { return std::tan(x); }, [](LD x, LD) { return tanl(x); }, 4, 4, kInlineByChoice, 8},
      {"asin", 1, {{-1, 1}}, {{-1, 1}}, [](double x, double) { return std::asin(x); },
       [](LD x, LD) { return asinl(x); }, 4, 4},
      {"acos", 1, {{-1, 1}}, {{-1, 1}}, [](double x, double) { return std::acos(x); },
       [](LD x, LD) { return acosl(x); }, 4, 4},
      {"atan", 1, {{-10, 10}, {1e-6, 1e30, true, true}}, {{-10, 10}, {1e-9, 1e300, true, true}},
       [](double x, double) { return std::atan(x); }, [](LD x, LD) { return atanl(x); }, 4, 4},
      {"sinh", 1, {{-88, 88}, {-1, 1}}, {{-709, 709}, {-1, 1}}, [](double x, double) { return std::sinh(x); },
       [](LD x, LD) { return sinhl(x); }, 4, 4},
      {"cosh", 1, {{-88, 88}, {-1, 1}}, {{-709, 709}, {-1, 1}}, [](double x, double) { return std::cosh(x); },
       [](LD x, LD) { return coshl(x); }, 4, 4},
      {"tanh", 1, {{-10, 10}, {-1e-3, 1e-3}}, {{-20, 20}, {-1e-3, 1e-3}},
       // float32 inline (an odd rational, src/math/odd_rational.h): 5.26 ULP at worst over
       // every float32, asserted 5.5; eager's float32 is libmvec's (1.35), so the two may
       // differ by both errors. float64 inline where chosen (src/math/fast_functions.h's
       // expm1 form), else libmvec.
       [](double x, double) { return std::tanh(x); }, [](LD x, LD) { return tanhl(x); }, 5.5, 4,
       kInlineF32 | kInlineByChoice, 7},
      {"asinh", 1, {{-10, 10}, {1e-6, 1e30, true, true}}, {{-10, 10}, {1e-9, 1e300, true, true}},
       [](double x, double) { return std::asinh(x); }, [](LD x, LD) { return asinhl(x); }, 4, 4},
      {"acosh", 1, {{1, 10}, {10, 1e30, true}}, {{1, 10}, {10, 1e300, true}},
       [](double x, double) { return std::acosh(x); }, [](LD x, LD) { return acoshl(x); }, 4, 4},
      {"atanh", 1, {{-1, 1}, {1e-6, 1e-2, true, true}}, {{-1, 1}, {1e-9, 1e-2, true, true}},
       [](double x, double) { return std::atanh(x); }, [](LD x, LD) { return atanhl(x); }, 4, 4},
      {"erf", 1, {{-5, 5}, {1e-6, 1, true, true}}, {{-6, 6}, {1e-9, 1, true, true}},
       // float32 inline (an odd rational, src/math/odd_rational.h, which eager runs too):
       // 6.35 ULP at worst over every float32, asserted 6.5; float64 libmvec.
       [](double x, double) { return std::erf(x); }, [](LD x, LD) { return erfl(x); }, 6.5, 4, kInlineF32, 4},
      {"erfc", 1, {{-5, 10}}, {{-6, 27}}, [](double x, double) { return std::erfc(x); },
       [](LD x, LD) { return erfcl(x); }, 4, 4},
      {"cbrt", 1, {{1e-30, 1e30, true, true}}, {{1e-300, 1e300, true, true}},
       [](double x, double) { return std::cbrt(x); }, [](LD x, LD) { return cbrtl(x); }, 4, 4},
      // 1 / (1 + exp(-x)) with the inline exp: exp's error plus two roundings.
      {"logistic", 1, {{-80, 80}, {-5, 5}}, {{-700, 700}, {-5, 5}},
       [](double x, double) { return 1 / (1 + std::exp(-x)); }, [](LD x, LD) { return 1 / (1 + expl(-x)); }, 4,
       4, kInlineBoth, 6},
      {"pow", 2, {{0.1, 10}, {-30, 30}}, {{0.1, 10}, {-300, 300}}, [](double x, double y) { return std::pow(x, y); },
       [](LD x, LD y) { return powl(x, y); }, 4, 4},
      {"atan2", 2, {{-10, 10}, {-10, 10}}, {{-10, 10}, {-10, 10}}, [](double x, double y) { return std::atan2(x, y); },
       [](LD x, LD y) { return atan2l(x, y); }, 4, 4},
  };
  return table;
}

struct Measured {
  double max_ulp = 0;
  double worst_input = 0;
};

// Random inputs over the ranges (a binary function takes its operands from ranges 0 and 1).
template <class T>
std::vector<std::vector<T>> random_inputs(const MathCase& c, const std::vector<Range>& ranges) {
  std::mt19937_64 rng(12345);
  std::vector<std::vector<T>> args(static_cast<size_t>(c.arity), std::vector<T>(kSamples));
  for (int64_t i = 0; i < kSamples; ++i) {
    if (c.arity == 1) {
      args[0][i] = static_cast<T>(pick(ranges[static_cast<size_t>(i) % ranges.size()], rng));
    } else {
      args[0][i] = static_cast<T>(pick(ranges[0], rng));
      args[1][i] = static_cast<T>(pick(ranges[1], rng));
    }
  }
  return args;
}

template <class T>
Measured measure(const MathCase& c) {
  const bool f32 = std::is_same_v<T, float>;
  const DType d = f32 ? DType::Float32 : DType::Float64;
  auto args = random_inputs<T>(c, f32 ? c.f32_ranges : c.f64_ranges);
  Jaxpr j = one_equation(*find_primitive(c.name), d, c.arity, kSamples);
  std::vector<T> out = run_native<T>(j, args, detail::cat("vector_math_test.", c.name, f32 ? "_f32" : "_f64"));
  Measured m;
  for (int64_t i = 0; i < kSamples; ++i) {
    const T x = args[0][i];
    const T y = c.arity == 2 ? args[1][i] : T(0);
    double err;
    if constexpr (std::is_same_v<T, float>) err = ulp_error<float>(out[i], c.ref64(x, y));
    else err = ulp_error<double>(out[i], c.ref80(x, y));
    if (err > m.max_ulp) {
      m.max_ulp = err;
      m.worst_input = x;
    }
  }
  return m;
}

// Distance in units in the last place between two non-NaN values of T (-0 == +0).
template <class T>
double ulp_distance(T a, T b) {
  using I = std::conditional_t<std::is_same_v<T, float>, int32_t, int64_t>;
  auto ordered = [](T x) {
    I i;
    std::memcpy(&i, &x, sizeof(T));
    return i < 0 ? std::numeric_limits<I>::min() - i : i;
  };
  // long double holds every int64 exactly (a double would round float64 bit patterns).
  return static_cast<double>(std::fabs(static_cast<long double>(ordered(a)) - static_cast<long double>(ordered(b))));
}

// Special inputs (NaN, infinities, zeros with their signs, subnormals, near multiples of
// pi, huge arguments) give exactly eager's results for libmvec functions. For inline ones
// NaN, infinities and zeros (sign included) are still exactly eager's, other results
// within c.eager_ulp of eager's and within the bound of the reference.
template <class T>
void check_edges_against_eager(const MathCase& c) {
  const bool f32 = std::is_same_v<T, float>;
  const DType d = f32 ? DType::Float32 : DType::Float64;
  std::vector<double> e = edge_inputs(f32);
  std::vector<std::vector<T>> args(static_cast<size_t>(c.arity));
  for (double a : e)
    for (size_t k = 0; k < (c.arity == 2 ? e.size() : 1); ++k) {
      args[0].push_back(static_cast<T>(a));
      if (c.arity == 2) args[1].push_back(static_cast<T>(e[k]));
    }
  const int64_t n = static_cast<int64_t>(args[0].size());
  Jaxpr j = one_equation(*find_primitive(c.name), d, c.arity, n);
  std::vector<T> native = run_native<T>(j, args, detail::cat("vector_math_test.edges_", c.name));
  std::vector<Array> eager_args;
  for (const auto& a : args) eager_args.emplace_back(a, Shape{n});
  std::vector<T> eager = eval_jaxpr(j, {}, eager_args)[0].template to_vector<T>();
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T a = native[i], b = eager[i];
    // Kernels run eager's own vector variant on every element (remainders too): the same bits.
    bool ok = (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
    const bool special = std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b) || a == 0 || b == 0;
    if (c.is_inline(d) && !special) {
      const T y = c.arity == 2 ? args[1][i] : T(0);
      double ref_err;
      if constexpr (std::is_same_v<T, float>) ref_err = ulp_error<float>(a, c.ref64(args[0][i], y));
      else ref_err = ulp_error<double>(a, c.ref80(args[0][i], y));
      ok = ulp_distance<T>(a, b) <= c.eager_ulp && ref_err <= (f32 ? c.f32_bound : c.f64_bound);
    }
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << c.name << " " << dtype_name(d) << " at x=" << args[0][i]
                    << (c.arity == 2 ? detail::cat(" y=", args[1][i]) : std::string()) << ": native " << a << " eager " << b;
  }
}

class VectorMath : public ::testing::TestWithParam<size_t> {};

TEST_P(VectorMath, MaxUlpErrorWithinBoundAndEdgesMatchEager) {
  const MathCase& c = cases()[GetParam()];
  Measured m32 = measure<float>(c), m64 = measure<double>(c);
  // The table in scalar_ops.cpp comes from these lines.
  std::printf("[ulp] %-9s f32 %6.2f (x=%g)  f64 %6.2f (x=%g)  isa %s\n", c.name, m32.max_ulp, m32.worst_input, m64.max_ulp,
              m64.worst_input, cpu::vector_isa_name(cpu::vector_isa()));
  EXPECT_LE(m32.max_ulp, c.f32_bound) << c.name << " float32, worst at x=" << m32.worst_input;
  EXPECT_LE(m64.max_ulp, c.f64_bound) << c.name << " float64, worst at x=" << m64.worst_input;
  check_edges_against_eager<float>(c);
  check_edges_against_eager<double>(c);
}

INSTANTIATE_TEST_SUITE_P(Libmvec, VectorMath, ::testing::Range(size_t{0}, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return std::string(cases()[info.param].name); });

// The functions called from the optimized IR `ir`, LLVM intrinsics (llvm.fma...) left out.
std::vector<std::string> called_functions(const std::string& ir) {
  static const std::regex call(R"(\bcall\b[^@\n]*@([A-Za-z0-9_.$]+))");
  std::vector<std::string> names;
  for (std::sregex_iterator it(ir.begin(), ir.end(), call), end; it != end; ++it)
    if ((*it)[1].str().rfind("llvm.", 0) != 0) names.push_back((*it)[1].str());
  return names;
}

// The loops really call libmvec: the optimized IR of every function's kernel names a
// vector variant whenever eager would use one too (JX_VECTOR_ISA=scalar turns both off).
// The inline functions (fast_math.h) instead run on vector types (the vectorizer widened
// the polynomial itself) and call nothing (intrinsics such as llvm.fma aside) but, for
// those of fast_functions.h, their rare path: jx_vm_*_rare and libmvec's variant.
TEST(VectorMathTable, EveryFunctionLoopCallsLibmvec) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "jx_vector_math_test_dump";
  std::filesystem::create_directories(dir);
  for (const MathCase& c : cases())
    for (DType d : {DType::Float32, DType::Float64}) {
      Jaxpr j = one_equation(*find_primitive(c.name), d, c.arity, 4096);
      const std::string name = detail::cat("vector_math_test.ir_", c.name, "_", dtype_name(d));
      compiler::KernelOptions options;
      options.name = name;
      options.dump_dir = dir.string();
      options.disk_cache = false;
      (void)compiler::compile_kernel(j, "loop", options);
      std::ifstream in(dir / (name + ".ll"));
      ASSERT_TRUE(in.good()) << "no IR dump " << (dir / (name + ".ll"));
      std::stringstream ir;
      ir << in.rdbuf();
      const bool has_vector_call = ir.str().find("@_ZGV") != std::string::npos;
      const std::vector<std::string> calls = called_functions(ir.str());
      if (c.is_inline(d)) {
        const std::string fn = c.name;
        const bool rare_path = c.inline_dtypes == kInlineByChoice;
        for (const std::string& callee : calls)
          EXPECT_TRUE(rare_path && callee.find(fn) != std::string::npos &&
                      (callee.rfind("jx_vm_" + fn + "_", 0) == 0 || callee.rfind("_ZGV", 0) == 0))
              << "the inline " << dtype_name(d) << " " << c.name << " loop calls " << callee;
        if (!rare_path) {
          EXPECT_FALSE(has_vector_call) << c.name << " " << dtype_name(d);
        }
        const std::string vector_type = d == DType::Float32 ? " x float>" : " x double>";
        EXPECT_NE(ir.str().find(vector_type), std::string::npos)
            << "the inline " << dtype_name(d) << " " << c.name << " loop was not vectorized:\n" << ir.str().substr(0, 3000);
        continue;
      }
      // Vectorized or not, a libmvec-backed function is a call (which also shows that
      // called_functions sees calls where there are some).
      EXPECT_FALSE(calls.empty()) << c.name << " " << dtype_name(d);
      if (cpu::vector_isa() == cpu::VectorIsa::Scalar)
        EXPECT_FALSE(has_vector_call) << c.name << " " << dtype_name(d);
      else
        EXPECT_TRUE(has_vector_call) << "the " << dtype_name(d) << " " << c.name
                                     << " loop was not vectorized through libmvec:\n" << ir.str().substr(0, 3000);
    }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace jx
