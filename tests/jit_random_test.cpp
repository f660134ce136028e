// Differential testing of the whole compiler on random programs (jit_random_program.h):
// each program runs (a) eagerly, (b) jitted, (c) jitted with optimize=false (every
// equation its own kernel), and the three must agree: integers and bools exactly,
// floats within a per-dtype tolerance, NaNs at the same positions.
//
// Deterministic: program i uses seed JX_RANDOM_SEED + i (default seed 1). The number of
// programs is JX_RANDOM_PROGRAMS (default below), capped by JX_RANDOM_SECONDS of wall
// time. A failure prints the seed, the inputs' types and the program (make_jaxpr), and
// reproduces with JX_RANDOM_SEED=<seed> JX_RANDOM_PROGRAMS=1.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "jit_random_program.h"
#include "jx/jx.h"
#include "test_util.h"

namespace jx {
namespace {

namespace rp = testing::random_program;

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}
double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtod(v, nullptr) : fallback;
}

// Largest finite |x| (at least 1): random programs mix magnitudes, and a sum whose terms
// are large may cancel, so the absolute tolerance scales with the array's magnitude.
double magnitude(const Array& x) {
  double m = 1;
  for (double v : lax::convert_element_type(x, DType::Float64).to_vector<double>())
    if (std::isfinite(v)) m = std::max(m, std::abs(v));
  return m;
}

::testing::AssertionResult agree(const rp::Program& p, const std::vector<Array>& got, const std::vector<Array>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " outputs, expected " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(got[i].aval() == want[i].aval()))
      return ::testing::AssertionFailure() << "output " << i << " is " << got[i].aval().str() << ", expected "
                                           << want[i].aval().str();
    DType d = want[i].dtype();
    bool f32 = d == DType::Float32 || (d == DType::Float64 && p.values[static_cast<size_t>(p.outputs[i])].f32_lineage);
    double rtol = f32 ? 1e-5 : d == DType::Float64 ? 1e-12 : 0;
    double atol = rtol * magnitude(want[i]);
    auto r = testing::allclose(got[i], want[i], rtol, atol);
    if (!r) return ::testing::AssertionFailure() << "output " << i << ": " << r.message();
  }
  return ::testing::AssertionSuccess();
}

std::string describe(uint64_t seed, const rp::Program& p, const std::vector<Array>& inputs) {
  std::ostringstream os;
  os << "seed " << seed << " (reproduce: JX_RANDOM_SEED=" << seed << " JX_RANDOM_PROGRAMS=1)\ninputs:";
  for (const Array& x : inputs) os << " " << x.aval().str();
  os << "\nprogram:\n";
  try {
    auto f = [&p](const std::vector<Array>& xs) { return rp::run(p, xs); };
    os << make_jaxpr(f)(inputs).str();
  } catch (const std::exception& e) {
    os << "(make_jaxpr failed: " << e.what() << ")";
  }
  os << "\ninput values:\n";
  for (const Array& x : inputs) os << x << "\n";
  return os.str();
}

TEST(JitRandom, ProgramsAgreeWithEager) {
  const int64_t count = env_int("JX_RANDOM_PROGRAMS", 80);
  const double budget = env_double("JX_RANDOM_SECONDS", 15);
  const uint64_t base = static_cast<uint64_t>(env_int("JX_RANDOM_SEED", 1));
  auto t0 = std::chrono::steady_clock::now();
  int ran = 0, failures = 0;
  size_t equations = 0;
  for (int64_t i = 0; i < count; ++i) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i > 0 && elapsed > budget) break;
    const uint64_t seed = base + static_cast<uint64_t>(i);
    rp::Generator gen(seed);
    rp::Program p = gen.generate();
    std::vector<Array> inputs = gen.inputs(p);
    auto f = [&p](const std::vector<Array>& xs) { return rp::run(p, xs); };
    std::vector<Array> want;
    try {
      want = f(inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "eager evaluation failed (a generator bug): " << e.what() << "\n" << describe(seed, p, inputs);
      ++failures;
      continue;
    }
    equations += p.steps.size();
    ++ran;
    for (bool optimize : {true, false}) {
      std::string which = optimize ? "jit" : "jit(optimize=false)";
      try {
        auto jf = jit(f, JitOptions{.name = "random", .optimize = optimize, .disk_cache = false});
        std::vector<Array> got = jf(inputs);
        auto ok = agree(p, got, want);
        if (!ok) {
          ++failures;
          ADD_FAILURE() << which << " disagrees with eager: " << ok.message() << "\n"
                        << describe(seed, p, inputs) << "optimized program:\n"
                        << jf.lower(inputs).as_text();
        }
      } catch (const std::exception& e) {
        ++failures;
        ADD_FAILURE() << which << " raised: " << e.what() << "\n" << describe(seed, p, inputs);
      }
    }
    if (failures >= 10) {
      ADD_FAILURE() << "stopping after 10 failures";
      break;
    }
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("jit_random: %d programs (%zu steps) from seed %llu in %.1f s\n", ran, equations,
              static_cast<unsigned long long>(base), elapsed);
  EXPECT_GT(ran, 0);
}

// The generator itself: deterministic per seed, and programs of the requested sizes.
TEST(JitRandom, GeneratorIsDeterministic) {
  for (uint64_t seed : {3u, 77u}) {
    rp::Generator a(seed), b(seed);
    rp::Program pa = a.generate(), pb = b.generate();
    ASSERT_EQ(pa.steps.size(), pb.steps.size());
    EXPECT_GE(pa.steps.size(), 5u);
    auto ia = a.inputs(pa), ib = b.inputs(pb);
    auto f = [](const rp::Program& p) { return [&p](const std::vector<Array>& xs) { return rp::run(p, xs); }; };
    EXPECT_EQ(make_jaxpr(f(pa))(ia).str(), make_jaxpr(f(pb))(ib).str());
    for (size_t k = 0; k < ia.size(); ++k) EXPECT_ALLCLOSE(ia[k], ib[k], 0, 0);
  }
}

}  // namespace
}  // namespace jx
