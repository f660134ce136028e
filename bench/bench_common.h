// What jx_bench (eager jx) and jit_bench (jx::jit) share: the timers, the JSON line
// format bench/run.py reads, the STREAM-like bandwidth probe, and the workloads of
// ../shared/BENCHMARKS.md written once, so eager and jit run exactly the same functions
// on the same inputs (same shapes, same jx::random keys).
#pragma once

#include <immintrin.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "jx/jx.h"

namespace jx_bench {

namespace jnp = jx::numpy;
using jx::Array;
using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Best-of-`reps` wall time of f(), after one warm-up call (which, under jit, compiles).
template <class F>
double best_seconds(F&& f, int reps) {
  f();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

// The same with the calls spread over time (a pause between them): the hardware limits'
// short compute kernels (libmvec's cost, the FMA peak), whose best of back-to-back calls
// a spell of the shared machine's slowness could hold for all of them (libmvec's
// float64 sine came out 1.69 ns an element in one run, 0.56-0.60 in every other).
template <class F>
double best_seconds_spread(F&& f, int reps, std::chrono::milliseconds pause = std::chrono::milliseconds(25)) {
  f();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    std::this_thread::sleep_for(pause);
    auto t0 = Clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

// Per-call time of a very fast f(), from batches of `inner` calls.
template <class F>
double per_call_seconds(F&& f, int inner = 20000, int reps = 7) {
  return best_seconds([&] { for (int i = 0; i < inner; ++i) f(); }, reps) / inner;
}

// Best per-call time of each of `fs`, measured in alternation: a warm-up call of each,
// then `reps` rounds timing `inner` calls of each in turn, so that load from other
// processes on a shared machine falls on all of them alike (ratios stay meaningful).
// With `consecutive` > 1 each function is timed that many calls in a row per round (the
// best call kept), as the peers (bench/run.py) are timed over runs of consecutive calls:
// see bench_reduction in jit_bench.cpp for the workload that needs it.
inline std::vector<double> best_interleaved(const std::vector<std::function<void()>>& fs, int reps, int inner = 1,
                                            int consecutive = 1) {
  std::vector<double> best(fs.size(), 1e30);
  for (const auto& f : fs) f();
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < fs.size(); ++i)
      for (int c = 0; c < consecutive; ++c) {
        auto t0 = Clock::now();
        for (int k = 0; k < inner; ++k) fs[i]();
        best[i] = std::min(best[i], seconds_since(t0) / inner);
      }
  return best;
}

// Calls per timed batch so that a batch of a call costing about `elements` element-ops
// lasts a few milliseconds (small sizes are dominated by per-call overhead).
inline int inner_calls(double elements) { return std::max(1, static_cast<int>(4e6 / std::max(elements, 1.0))); }

// JSON numbers Python's json module reads back, NaN and infinities included.
inline std::string json_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Extra fields of a JSON line: Extra().num("bytes", b).str("note", "...").
struct Extra {
  std::string text;
  Extra& num(const char* key, double v) {
    text += std::string(", \"") + key + "\": " + json_number(v);
    return *this;
  }
  Extra& str(const char* key, const std::string& v) {
    text += std::string(", \"") + key + "\": \"" + v + "\"";
    return *this;
  }
};

// One result: {"section": ..., "workload": ..., "impl": ..., "seconds": ..., extras}.
inline void emit(const std::string& section, const std::string& workload, const std::string& impl, double seconds,
                 const Extra& extra = {}) {
  std::printf("{\"section\": \"%s\", \"workload\": \"%s\", \"impl\": \"%s\", \"seconds\": %s%s}\n", section.c_str(),
              workload.c_str(), impl.c_str(), json_number(seconds).c_str(), extra.text.c_str());
  std::fflush(stdout);
}

// STREAM triad a = b + s*c over n doubles per array on all jx threads: bytes/second.
inline double stream_bandwidth(bool quick) {
  const int64_t n = quick ? (int64_t{1} << 24) : (int64_t{1} << 25);  // 3 x 128/256 MiB: far beyond cache
  std::vector<double> a(n), b(n, 1.0), c(n, 2.0);
  double t = best_seconds([&] {
    jx::cpu::parallel_for(n, 1 << 16, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
    });
  }, 5);
  return 3.0 * 8.0 * n / t;
}

// The sum of x[0, count), count a multiple of 16: AVX2 vectors where the CPU has them
// (four independent 4-double sums, so the adds keep up with any cache), else eight
// scalar sums.
#pragma GCC push_options
#pragma GCC target("avx2")
inline double read_sum_avx2(const double* x, int64_t count) {
  __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t i = 0; i < count; i += 16) {
    s0 = _mm256_add_pd(s0, _mm256_loadu_pd(x + i));
    s1 = _mm256_add_pd(s1, _mm256_loadu_pd(x + i + 4));
    s2 = _mm256_add_pd(s2, _mm256_loadu_pd(x + i + 8));
    s3 = _mm256_add_pd(s3, _mm256_loadu_pd(x + i + 12));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#pragma GCC pop_options
inline double read_sum(const double* x, int64_t count) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return read_sum_avx2(x, count);
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 0; i < count; i += 8)
    for (int k = 0; k < 8; ++k) s[k] += x[i + k];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

// Seconds of the best of `passes` sums over b's doubles (a multiple of 16) on all jx
// threads.
inline double best_read_pass(const std::vector<double>& b, int passes) {
  const int64_t n = static_cast<int64_t>(b.size());
  std::vector<double> sums(256, 0.0);
  double t = best_seconds([&] {
    jx::cpu::parallel_for(n / 16, 1 << 12, [&](int64_t lo, int64_t hi) {
      sums[static_cast<size_t>(lo) % sums.size()] += read_sum(b.data() + lo * 16, (hi - lo) * 16);
    });
  }, passes);
  volatile double sink = sums[0];
  (void)sink;
  return t;
}

// Read bandwidth from memory: bytes/second of a sum over 256/512 MiB. The limit of
// read-mostly workloads (a reduction writes next to nothing), which the triad, whose
// writes also cost a read for ownership, underestimates.
inline double read_bandwidth(bool quick) {
  const int64_t n = quick ? (int64_t{1} << 25) : (int64_t{1} << 26);  // 256/512 MiB: far beyond cache
  return 8.0 * static_cast<double>(n) / best_read_pass(std::vector<double>(static_cast<size_t>(n), 1.0), 5);
}

// Read bandwidth over `bytes` read again and again (best of 8 consecutive passes): what
// a workload whose inputs fit a cache reads at in a run of consecutive calls (the fused
// sum's 192 MB of float32 fit the 300 MB L3 of the Intel Xeon in the README). The
// reductions' limit takes the faster of this and memory's.
inline double read_bandwidth_over(double bytes) {
  const int64_t n = std::max<int64_t>(int64_t{1} << 17, static_cast<int64_t>(bytes / 8) / 16 * 16);
  return 8.0 * static_cast<double>(n) / best_read_pass(std::vector<double>(static_cast<size_t>(n), 1.0), 8);
}

// The triad's bandwidth over `bytes` in all (three arrays of a third each) written and
// read again and again (best of 8 consecutive passes, on all jx threads): what a
// workload that reads and writes `bytes` in all moves them at in a run of consecutive
// calls where they fit a cache (the 300 MB L3 of the Intel Xeon in the README holds every
// workload's arrays but the 5000 x 5000 tutorial's: 60-63 GB/s there, against 32-36 from
// memory). Memoized by size.
inline double stream_bandwidth_over(double bytes) {
  static std::map<int64_t, double> memo;
  const int64_t n = std::max<int64_t>(int64_t{1} << 15, static_cast<int64_t>(bytes / 24) / 16 * 16);
  if (auto it = memo.find(n); it != memo.end()) return it->second;
  std::vector<double> a(static_cast<size_t>(n)), b(static_cast<size_t>(n), 1.0), c(static_cast<size_t>(n), 2.0);
  const double t = best_seconds([&] {
    jx::cpu::parallel_for(n, 1 << 14, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
    });
  }, 8);
  return memo[n] = 24.0 * static_cast<double>(n) / t;
}

// Command line shared by both binaries: --quick, --only a,b (section names).
struct BenchArgs {
  bool quick = false;
  std::string only;  // comma-separated sections; empty: all
  bool runs(const std::string& section) const {
    return only.empty() || ("," + only + ",").find("," + section + ",") != std::string::npos;
  }
};
inline BenchArgs parse_bench_args(int argc, char** argv) {
  BenchArgs a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--quick") a.quick = true;
    if (s == "--only" && i + 1 < argc) a.only = argv[++i];
  }
  return a;
}

inline std::string dtype_suffix(jx::DType dtype) { return "_" + std::string(jx::dtype_name(dtype)); }

// ---- the workloads (each a plain function of arrays: eager calls it, jit traces it) ----

// 3. the tutorial workload.
inline Array sin_cos(const Array& x, const Array& y) { return jnp::sin(x) + jnp::cos(y); }

// 4. SELU.
inline Array selu(const Array& x) {
  const double l = 1.0507009873554805, a = 1.6732632423543772;
  return l * jnp::where(x > 0, x, a * jnp::exp(x) - a);
}

// 5. elementwise into a full reduction.
inline Array fused_sum(const Array& x, const Array& y, const Array& z) { return jnp::sum(x + 2 * y + z * z); }

// 6. row softmax (max-shifted) and logsumexp over rows.
inline Array softmax_rows(const Array& x) {
  Array e = jnp::exp(x - jnp::max(x, 1, true));
  return e / jnp::sum(e, 1, true);
}
inline Array logsumexp_rows(const Array& x) { return jnp::logsumexp(x, 1); }
// Softmax cross-entropy of integer labels, as a new user writes it (jax.nn.log_softmax's
// formulation, the max held out of the gradient), and its gradient in the logits.
inline Array cross_entropy(const Array& logits, const Array& labels) {
  Array shifted = logits - jx::stop_gradient(jnp::max(logits, 1, true));
  Array log_probs = shifted - jnp::log(jnp::sum(jnp::exp(shifted), 1, true));
  return -jnp::mean(jnp::take_along_axis(log_probs, jnp::expand_dims(labels, 1), 1));
}

// 7. a dense layer with GELU (tanh form, jax.nn.gelu's default) as the matmul epilogue.
inline Array gelu_matmul(const Array& a, const Array& b, const Array& bias) {
  Array z = jnp::matmul(a, b) + bias;
  return 0.5 * z * (1.0 + jnp::tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
}

// 8a. one leapfrog step of 1024 particles in 3-d (rows x, y, z) in an anharmonic trap:
// a(q) = -q (1 + |q|^2). Returns (q, p) after dt.
inline Array leapfrog_force(const Array& q) { return -q * (1.0 + jnp::sum(q * q, 0, true)); }
inline std::pair<Array, Array> leapfrog_step(const Array& q, const Array& p) {
  const double dt = 0.01;
  Array p_half = p + (0.5 * dt) * leapfrog_force(q);
  Array q_next = q + dt * p_half;
  return {q_next, p_half + (0.5 * dt) * leapfrog_force(q_next)};
}
// Ten steps traced as one program (unrolled by the C++ loop).
inline std::pair<Array, Array> leapfrog_10_steps(const Array& q, const Array& p) {
  std::pair<Array, Array> s{q, p};
  for (int i = 0; i < 10; ++i) s = leapfrog_step(s.first, s.second);
  return s;
}

// 8b. a 2-layer MLP (128 -> 256 tanh -> 10), mean squared error; params {w1, b1, w2, b2}.
inline Array mlp_loss(const std::vector<Array>& params, const Array& x, const Array& y) {
  Array h = jnp::tanh(jnp::matmul(x, params[0]) + params[1]);
  Array out = jnp::matmul(h, params[2]) + params[3];
  return jnp::mean(jnp::square(out - y));
}
inline std::pair<Array, std::vector<Array>> mlp_value_and_grad(const std::vector<Array>& params, const Array& x,
                                                               const Array& y) {
  return jx::value_and_grad(mlp_loss)(params, x, y);
}
struct MlpInputs {
  std::vector<Array> params;
  Array x, y;
};
inline MlpInputs mlp_inputs(int64_t batch = 64) {
  auto ks = jx::random::split(jx::random::key(7), 6);
  // Biases random, not jnp::zeros: a zeros array is a stride-0 view, which jit would copy
  // on every call (the dispatch section measures that separately).
  return {{0.1 * jx::random::normal(ks(0), {128, 256}), 0.01 * jx::random::normal(ks(4), {256}),
           0.1 * jx::random::normal(ks(1), {256, 10}), 0.01 * jx::random::normal(ks(5), {10})},
          jx::random::normal(ks(2), {batch, 128}),
          jx::random::normal(ks(3), {batch, 10})};
}

// 2. a 20-operation elementwise chain (mixing arithmetic and transcendentals).
// `rounds` rounds of five elementwise ops (compile time against program size).
inline Array chain_of(const Array& x, const Array& y, int rounds) {
  Array t = x;
  for (int i = 0; i < rounds; ++i) {
    t = t * y;
    t = t + 0.5;
    t = jnp::sin(t);
    t = t - x;
    t = jnp::tanh(t);
  }
  return t;
}
inline Array chain20(const Array& x, const Array& y) { return chain_of(x, y, 4); }

// `rounds` rounds of four elementwise ops that all read x and y, summed: two values with
// `rounds` readers each (the fusion pass's sibling merges and cycle checks against
// program size, where a chain has one reader per value).
inline Array fan_in_of(const Array& x, const Array& y, int rounds) {
  Array t = jnp::zeros_like(x);
  for (int i = 0; i < rounds; ++i) t = t + jnp::tanh(x * (1.0f + 0.001f * static_cast<float>(i)) - y);
  return t;
}

// 1. a call with 20 array arguments (contiguous, 1 element each).
inline std::vector<Array> dispatch_args() {
  std::vector<Array> args;
  for (int i = 0; i < 20; ++i) args.push_back(jx::random::uniform(jx::random::key(100 + i), {1}));
  return args;
}
inline Array sum_of_20(const std::vector<Array>& a) {
  Array s = a[0];
  for (size_t i = 1; i < a.size(); ++i) s = s + a[i];
  return s;
}

// 9. the vector-math functions and their input domains [lo, hi) (log: log-uniform).
struct VecMathCase {
  const char* name;
  Array (*eager)(const Array&);
  double lo, hi;
  bool log_uniform;
};
inline const std::vector<VecMathCase>& vecmath_cases() {
  static const std::vector<VecMathCase> cases = {
      {"exp", [](const Array& x) { return jnp::exp(x); }, -87.0, 88.0, false},
      {"log", [](const Array& x) { return jnp::log(x); }, 1e-30, 1e30, true},
      {"sin", [](const Array& x) { return jnp::sin(x); }, -100.0, 100.0, false},
      {"cos", [](const Array& x) { return jnp::cos(x); }, -100.0, 100.0, false},
      {"tan", [](const Array& x) { return jnp::tan(x); }, -1.5, 1.5, false},
      {"log1p", [](const Array& x) { return jnp::log1p(x); }, -0.9, 10.0, false},
      {"expm1", [](const Array& x) { return jnp::expm1(x); }, -5.0, 5.0, false},
      {"tanh", [](const Array& x) { return jnp::tanh(x); }, -10.0, 10.0, false},
      {"erf", [](const Array& x) { return jx::lax::erf(x); }, -5.0, 5.0, false},
  };
  return cases;
}
inline constexpr int64_t kVecMathN = int64_t{1} << 22;  // 4M float32
// The inputs of a vector-math case: deterministic, uniform in [lo, hi) (or log-uniform).
inline std::vector<float> vecmath_inputs(const VecMathCase& c, int64_t n = kVecMathN) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (auto& e : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = static_cast<double>(s >> 11) * 0x1.0p-53;
    e = c.log_uniform ? static_cast<float>(std::exp(std::log(c.lo) + u * (std::log(c.hi) - std::log(c.lo))))
                      : static_cast<float>(c.lo + u * (c.hi - c.lo));
  }
  return v;
}

// Sizes of the tutorial's size sweep: 1000 * 4^k elements, 1e3 .. 1.6e7.
inline std::vector<int64_t> sweep_sizes() {
  std::vector<int64_t> s;
  for (int64_t n = 1000; n <= 16384000; n *= 4) s.push_back(n);
  return s;
}

// Matmul sizes: 4096 only in full runs (minutes of eager + jit + BLAS on 2 cores).
inline std::vector<int64_t> matmul_sizes(bool quick) {
  if (quick) return {256, 1024};
  return {256, 1024, 4096};
}

}  // namespace jx_bench
