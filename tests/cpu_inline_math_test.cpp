// Eager runs the inline functions of src/math/fast_functions.h wherever jit kernels do
// (backend/cpu/inline_math.h: one table for both), so the two agree bit for bit: for every
// function, dtype and vector ISA this CPU runs whose table entry is inline, eager's
// result equals a jit kernel's, compiled for that ISA, at every element, over ordinary
// inputs, a partial last vector, and rare inputs (beyond the trigonometric reduction's
// range, infinities, NaN, log's domain edges) at every lane, which both hand to libmvec's
// variant of the ISA. The kernels themselves are checked against the C++ twin and a
// float64 / long double reference in jit_fast_functions_test.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/inline_math.h"
#include "backend/cpu/vector_math.h"
#include "jit/codegen/fast_math.h"
#include "jx/jx.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;
using math::FastFunction;

Array apply(FastFunction f, const Array& x) {
  switch (f) {
    case FastFunction::Sin: return jnp::sin(x);
    case FastFunction::Cos: return jnp::cos(x);
    case FastFunction::Tan: return jnp::tan(x);
    case FastFunction::Log: return jnp::log(x);
    case FastFunction::Log1p: return jnp::log1p(x);
    case FastFunction::Expm1: return jnp::expm1(x);
    case FastFunction::Tanh: return jnp::tanh(x);
  }
  return x;
}

// Ordinary inputs over the function's range, then each rare input at every one of the
// first 16 positions of its own copy (so at every lane of an AVX-512 float vector).
template <class T>
std::vector<T> inputs(FastFunction f) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  std::mt19937 rng(7);
  const bool positive = f == FastFunction::Log;
  std::uniform_real_distribution<double> u(positive ? 1e-3 : -50, 50);
  std::vector<T> rare = {inf, -inf, nan, T(0), T(-0.0), T(1e30), T(-3e20), std::numeric_limits<T>::denorm_min()};
  if (f == FastFunction::Log || f == FastFunction::Log1p) rare.insert(rare.end(), {T(-1), T(-2), T(-0.5)});
  if (f == FastFunction::Expm1) rare.insert(rare.end(), {T(95), T(800), T(-100)});
  std::vector<T> x;
  for (int i = 0; i < 77; ++i) x.push_back(static_cast<T>(u(rng)));  // 77: a partial last vector
  for (T r : rare)
    for (int lane = 0; lane < 16; ++lane) {
      std::vector<T> block(16);
      for (T& v : block) v = static_cast<T>(u(rng));
      block[static_cast<size_t>(lane)] = r;
      x.insert(x.end(), block.begin(), block.end());
    }
  return x;
}

template <class T>
void check(FastFunction f) {
  const DType dtype = dtype_of<T>;
  const std::vector<T> x = inputs<T>(f);
  Array ax(x);
  const std::string name = std::string("inline_math_") + math::fast_function_name(f);
  auto jf = jit([f](const Array& a) { return apply(f, a); }, {.name = name, .disk_cache = false});
  const std::vector<T> kernel = jf(ax).template to_vector<T>();
  const std::vector<T> op = apply(f, ax).template to_vector<T>();
  ASSERT_EQ(kernel.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(std::bit_cast<typename math::FloatTraits<T>::Bits>(op[i]),
              std::bit_cast<typename math::FloatTraits<T>::Bits>(kernel[i]))
        << math::fast_function_name(f) << " " << dtype_name(dtype) << " at x = " << x[i] << " (element " << i
        << "): eager " << op[i] << ", kernel " << kernel[i];
  }
}

TEST(InlineMath, EagerComputesWhatKernelsComputeBitForBitOnEveryIsa) {
  const cpu::VectorIsa before = cpu::vector_isa();
  int inline_entries = 0;
  for (auto isa : {cpu::VectorIsa::Avx2, cpu::VectorIsa::Avx512}) {
    if (isa > cpu::best_vector_isa()) continue;
    cpu::set_vector_isa(isa);  // eager's ISA and the one kernels compile for
    for (FastFunction f : math::kFastFunctions)
      for (DType d : {DType::Float32, DType::Float64}) {
        if (!cpu::runs_inline(f, d, isa)) continue;
        ++inline_entries;
        SCOPED_TRACE(std::string(math::fast_function_name(f)) + " " + std::string(dtype_name(d)) + " " +
                     cpu::vector_isa_name(isa));
        if (d == DType::Float32) check<float>(f);
        else check<double>(f);
      }
  }
  cpu::set_vector_isa(before);
  if (inline_entries == 0) GTEST_SKIP() << "this CPU runs no inline function (no AVX2)";
}

TEST(InlineMath, KernelsAndEagerReadOneTable) {
  for (auto isa : {cpu::VectorIsa::Scalar, cpu::VectorIsa::Avx2, cpu::VectorIsa::Avx512})
    for (FastFunction f : math::kFastFunctions)
      for (DType d : {DType::Float32, DType::Float64})
        EXPECT_EQ(compiler::codegen::inline_fast_function(f, d, isa), cpu::runs_inline(f, d, isa));
  // The scalar ISA is eager's exact libm path; float32 log1p keeps libmvec's variant
  // (random.normal's samples, through erf_inv).
  for (FastFunction f : math::kFastFunctions) EXPECT_FALSE(cpu::runs_inline(f, DType::Float32, cpu::VectorIsa::Scalar));
  EXPECT_FALSE(cpu::runs_inline(FastFunction::Log1p, DType::Float32, cpu::VectorIsa::Avx2));
  EXPECT_FALSE(cpu::runs_inline(FastFunction::Log1p, DType::Float32, cpu::VectorIsa::Avx512));
}

TEST(InlineMath, NoInlineCodeForTheScalarIsa) {
  float x = 1, y = 0;
  try {
    cpu::inline_unary(FastFunction::Sin, cpu::VectorIsa::Scalar, &x, &y, 1);
    FAIL() << "expected an InternalError";
  } catch (const InternalError& e) {
    EXPECT_STREQ(e.what(), "[inline_unary] internal error: no inline code for scalar");
  }
}

}  // namespace
}  // namespace jx
