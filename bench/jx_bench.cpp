// jx's side of the benchmark suite (bench/run.py drives it and the peers). Prints one JSON
// object per line: {"workload": ..., "impl": ..., "seconds": best time, ...}.
// The hardware limit is measured here, in the same run: a STREAM-like triad for memory
// bandwidth and the BLAS called directly for matmul.
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cpu/thread_pool.h"
#include "jx/jx.h"

namespace jnp = jx::numpy;
using Clock = std::chrono::steady_clock;

namespace {

// Best-of-`reps` wall time of f(), after one warm-up call.
template <class F>
double best_seconds(F&& f, int reps) {
  f();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// Per-call time of a very fast f(), from batches of `inner` calls.
template <class F>
double per_call_seconds(F&& f, int inner = 20000, int reps = 7) {
  return best_seconds([&] { for (int i = 0; i < inner; ++i) f(); }, reps) / inner;
}

void emit(const std::string& workload, const std::string& impl, double seconds, double bytes = 0,
          double flops = 0) {
  std::printf("{\"workload\": \"%s\", \"impl\": \"%s\", \"seconds\": %.9g, \"bytes\": %.6g, \"flops\": %.6g}\n",
              workload.c_str(), impl.c_str(), seconds, bytes, flops);
  std::fflush(stdout);
}

// STREAM triad a = b + s*c over n doubles per array on all threads: bytes/second.
double stream_bandwidth() {
  const int64_t n = 1 << 25;  // 3 x 256 MiB: far beyond cache
  std::vector<double> a(n), b(n, 1.0), c(n, 2.0);
  double t = best_seconds([&] {
    jx::cpu::parallel_for(n, 1 << 16, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
    });
  }, 5);
  return 3.0 * 8.0 * n / t;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  int reps = quick ? 2 : 5;
  double bw = stream_bandwidth();
  emit("stream_triad", "limit", 1.0 / bw, 1.0);
  std::printf("{\"threads\": %d, \"stream_GBps\": %.2f}\n", jx::cpu::num_threads(), bw / 1e9);

  // 1. dispatch
  {
    auto a = jnp::ones({1}), b = jnp::ones({1});
    emit("dispatch_add_1", "jx_eager", per_call_seconds([&] { (void)(a + b); }));
    auto c = jnp::ones({1024}), d = jnp::ones({1024});
    emit("dispatch_add_1024", "jx_eager", per_call_seconds([&] { (void)(c + d); }, 5000));
    emit("dispatch_lax_add_1", "jx_eager", per_call_seconds([&] { (void)jx::lax::add(a, b); }));
  }

  auto key = jx::random::key(0);
  // 2. the cost of grad over evaluating the function itself (issue: at most ~3x)
  {
    auto loss = [](const jx::Array& x) { return jnp::sum(jnp::sin(x) * x); };
    for (int64_t n : {int64_t(3), int64_t(1000000)}) {
      auto x = jx::random::uniform(key, {n});
      std::string w = "grad_sum_sin_x_x_" + std::to_string(n);
      int inner = n < 100 ? 2000 : 1;
      emit(w, "jx_eval", per_call_seconds([&] { (void)loss(x); }, inner, reps + 2));
      emit(w, "jx_grad", per_call_seconds([&] { (void)jx::grad(loss)(x); }, inner, reps + 2));
    }
    // A small MLP layer: loss(w) = sum(tanh(x @ w)), x 256x256.
    auto ks = jx::random::split(key);
    auto x = jx::random::normal(ks(0), {256, 256}), w0 = jx::random::normal(ks(1), {256, 256});
    auto mlp = [&](const jx::Array& w) { return jnp::sum(jnp::tanh(jnp::matmul(x, w))); };
    emit("grad_mlp_256", "jx_eval", per_call_seconds([&] { (void)mlp(w0); }, 20, reps + 2));
    emit("grad_mlp_256", "jx_grad", per_call_seconds([&] { (void)jx::grad(mlp)(w0); }, 20, reps + 2));
  }
  // 3. the tutorial workload
  for (auto dtype : {jx::float32, jx::float64}) {
    const int64_t n = 5000;
    auto ks = jx::random::split(key);
    auto x = jx::random::uniform(ks(0), {n, n}, dtype);
    auto y = jx::random::uniform(ks(1), {n, n}, dtype);
    auto yb = jnp::arange(n, dtype);
    std::string suffix = std::string("_") + std::string(jx::dtype_name(dtype));
    double bytes = 3.0 * n * n * jx::itemsize(dtype);
    emit("sin_cos_5000x5000" + suffix, "jx_eager",
         best_seconds([&] { (void)(jnp::sin(x) + jnp::cos(y)); }, reps), bytes);
    emit("sin_cos_bcast_5000x5000" + suffix, "jx_eager",
         best_seconds([&] { (void)(jnp::sin(x) + jnp::cos(yb)); }, reps), 2.0 * n * n * jx::itemsize(dtype));
    // The limit's compute term: the vector math alone, per element.
    emit("sin_5000x5000" + suffix, "jx_eager", best_seconds([&] { (void)jnp::sin(x); }, reps),
         2.0 * n * n * jx::itemsize(dtype));
  }
  // 4. SELU
  {
    auto x = jx::random::normal(key, {16000000});
    double l = 1.0507009873554805, al = 1.6732632423543772;
    emit("selu_1.6e7_float32", "jx_eager",
         best_seconds([&] { (void)(l * jnp::where(x > 0, x, al * jnp::exp(x) - al)); }, reps), 2.0 * 4 * 16e6);
  }
  // 5. fused reduction
  for (auto dtype : {jx::float32, jx::float64}) {
    auto ks = jx::random::split(key, 3);
    int64_t n = 16000000;
    auto x = jx::random::uniform(ks(0), {n}, dtype), y = jx::random::uniform(ks(1), {n}, dtype),
         z = jx::random::uniform(ks(2), {n}, dtype);
    emit(std::string("sum_x_2y_z2_1.6e7_") + std::string(jx::dtype_name(dtype)), "jx_eager",
         best_seconds([&] { (void)jnp::sum(x + 2 * y + z * z).item<double>(); }, reps),
         3.0 * n * jx::itemsize(dtype));
  }
  // 6. logsumexp over rows
  {
    auto x = jx::random::normal(key, {4096, 4096});
    emit("logsumexp_rows_4096x4096_float32", "jx_eager",
         best_seconds([&] { (void)jnp::logsumexp(x, 1); }, reps), 4.0 * 4096 * 4096);
  }
  // 7. matmul against the BLAS called directly
  for (int n : {256, 1024}) {
    auto ks = jx::random::split(key);
    auto a = jx::random::normal(ks(0), {n, n}), b = jx::random::normal(ks(1), {n, n});
    double flops = 2.0 * n * n * n;
    std::string w = "matmul_" + std::to_string(n) + "_float32";
    emit(w, "jx_eager", best_seconds([&] { (void)jnp::matmul(a, b); }, reps), 0, flops);
    std::vector<float> A = a.to_vector<float>(), B = b.to_vector<float>(), C(size_t(n) * n);
    emit(w, "blas_direct", best_seconds([&] {
           cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f,
                       C.data(), n);
         }, reps), 0, flops);
  }
  return 0;
}
