// Eager jx's side of the benchmark suite: every workload of ../shared/BENCHMARKS.md run
// eagerly (each operation its own kernel), the grad/eval ratios, and each workload's
// hardware limit (bench_limits.h; for matmul, the BLAS called directly). Prints one JSON object
// per line: {"section", "workload", "impl", "seconds": best time, ...}. bench/run.py
// drives it beside jit_bench (which times eager and jit side by side itself, so with
// jit_bench built run.py runs only this binary's dispatch and grad sections) and the peers.
//   jx_bench [--quick] [--only tutorial,selu,...]
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/blas_kernels.h"
#include "bench_common.h"
#include "bench_limits.h"

using namespace jx_bench;

namespace {

int reps = 5;
bool quick = false;
const auto key = jx::random::key(0);

void eager(const std::string& section, const std::string& workload, double seconds, const Extra& extra = {}) {
  emit(section, workload, "jx_eager", seconds, extra);
}

void bench_dispatch() {
  auto a = jx::random::uniform(key, {1}), b = jx::random::uniform(key, {1});
  eager("dispatch", "dispatch_add_1", per_call_seconds([&] { (void)(a + b); }));
  auto c = jx::random::uniform(key, {1024}), d = jx::random::uniform(key, {1024});
  eager("dispatch", "dispatch_add_1024", per_call_seconds([&] { (void)(c + d); }, 5000));
  eager("dispatch", "dispatch_lax_add_1", per_call_seconds([&] { (void)jx::lax::add(a, b); }));
  std::vector<Array> args = dispatch_args();
  eager("dispatch", "dispatch_20_args_1", per_call_seconds([&] { (void)sum_of_20(args); }, 1000));
}

// The cost of grad over evaluating the function itself (issue 3: at most ~3x).
void bench_grad() {
  auto loss = [](const Array& x) { return jnp::sum(jnp::sin(x) * x); };
  for (int64_t n : {int64_t(3), int64_t(1000000)}) {
    auto x = jx::random::uniform(key, {n});
    std::string w = "grad_sum_sin_x_x_" + std::to_string(n);
    int inner = n < 100 ? 2000 : 1;
    emit("grad", w, "jx_eval", per_call_seconds([&] { (void)loss(x); }, inner, reps + 2));
    emit("grad", w, "jx_grad", per_call_seconds([&] { (void)jx::grad(loss)(x); }, inner, reps + 2));
  }
  // A small MLP layer: loss(w) = sum(tanh(x @ w)), x 256x256.
  auto ks = jx::random::split(key);
  auto x = jx::random::normal(ks(0), {256, 256}), w0 = jx::random::normal(ks(1), {256, 256});
  auto mlp = [&](const Array& w) { return jnp::sum(jnp::tanh(jnp::matmul(x, w))); };
  emit("grad", "grad_mlp_256", "jx_eval", per_call_seconds([&] { (void)mlp(w0); }, 20, reps + 2));
  emit("grad", "grad_mlp_256", "jx_grad", per_call_seconds([&] { (void)jx::grad(mlp)(w0); }, 20, reps + 2));
}

void bench_tutorial() {
  for (auto dtype : {jx::float32, jx::float64}) {
    const int64_t n = 5000;
    auto ks = jx::random::split(key);
    auto x = jx::random::uniform(ks(0), {n, n}, dtype);
    auto y = jx::random::uniform(ks(1), {n, n}, dtype);
    auto yb = jnp::arange(n, dtype);
    std::string suffix = dtype_suffix(dtype);
    double item = jx::itemsize(dtype), nn = double(n) * n;
    eager("tutorial", "sin_cos_5000x5000" + suffix, best_seconds([&] { (void)sin_cos(x, y); }, reps));
    limit_sin_cos("sin_cos_5000x5000" + suffix, dtype, nn, nn, 1, 3 * nn * item);
    // Broadcast y: cos is needed on n values only (jit may hoist it; the limit assumes so).
    eager("tutorial", "sin_cos_bcast_5000x5000" + suffix, best_seconds([&] { (void)sin_cos(x, yb); }, reps));
    limit_sin_cos("sin_cos_bcast_5000x5000" + suffix, dtype, nn, n, n, (2 * nn + n) * item);
    // The vector math alone (one op, one kernel): what eager pays per transcendental.
    eager("tutorial", "sin_5000x5000" + suffix, best_seconds([&] { (void)jnp::sin(x); }, reps));
    limit_sin_cos("sin_5000x5000" + suffix, dtype, nn, 0, 1, 2 * nn * item);
  }
  for (int64_t n : sweep_sizes()) {
    auto ks = jx::random::split(key);
    auto x = jx::random::uniform(ks(0), {n}), y = jx::random::uniform(ks(1), {n});
    std::string w = "sin_cos_sweep_" + std::to_string(n) + "_float32";
    eager("tutorial", w, per_call_seconds([&] { (void)sin_cos(x, y); }, inner_calls(double(n)), reps));
    limit_sin_cos(w, jx::float32, double(n), double(n), 1, 3.0 * n * 4);
  }
}

void bench_selu() {
  for (int64_t n : {int64_t(1000000), int64_t(16000000)}) {
    auto x = jx::random::normal(key, {n});
    std::string w = std::string("selu_") + (n == 1000000 ? "1e6" : "1.6e7") + "_float32";
    eager("selu", w, best_seconds([&] { (void)selu(x); }, reps));
    limit_selu(w, double(n));
  }
}

void bench_reduction() {
  for (auto dtype : {jx::float32, jx::float64}) {
    auto ks = jx::random::split(key, 3);
    int64_t n = 16000000;
    auto x = jx::random::uniform(ks(0), {n}, dtype), y = jx::random::uniform(ks(1), {n}, dtype),
         z = jx::random::uniform(ks(2), {n}, dtype);
    std::string w = "sum_x_2y_z2_1.6e7" + dtype_suffix(dtype);
    eager("reduction", w, best_seconds([&] { (void)fused_sum(x, y, z).item<double>(); }, reps));
    limit_fused_sum(w, dtype, double(n));
  }
}

void bench_softmax() {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4096, 4096}, {65536, 128}, {128, 65536}}) {
    auto x = jx::random::normal(key, {rows, cols});
    std::string shape = std::to_string(rows) + "x" + std::to_string(cols) + "_float32";
    eager("softmax", "softmax_rows_" + shape, best_seconds([&] { (void)softmax_rows(x); }, reps));
    limit_softmax("softmax_rows_" + shape, double(rows), double(cols));
    eager("softmax", "logsumexp_rows_" + shape, best_seconds([&] { (void)logsumexp_rows(x); }, reps));
    limit_logsumexp("logsumexp_rows_" + shape, double(rows), double(cols));
  }
}

// Matmul and the dense GELU layer, beside the BLAS called directly (the limit).
void bench_matmul() {
  for (auto dtype : {jx::float32, jx::float64}) {
    for (int64_t n : matmul_sizes(quick)) {
      auto ks = jx::random::split(key, 3);
      auto a = jx::random::normal(ks(0), {n, n}, dtype), b = jx::random::normal(ks(1), {n, n}, dtype);
      auto bias = jx::random::normal(ks(2), {n}, dtype);
      int r = n >= 4096 ? 2 : reps;
      std::string w = std::to_string(n) + dtype_suffix(dtype);
      Extra flops = Extra().num("flops", 2.0 * n * n * n);
      eager("matmul", "matmul_" + w, best_seconds([&] { (void)jnp::matmul(a, b); }, r), flops);
      eager("matmul", "gelu_matmul_" + w, best_seconds([&] { (void)gelu_matmul(a, b, bias); }, r), flops);
      DirectGemm gemm(a, b);
      double blas = best_seconds([&] { gemm.openblas(); }, r);
      emit("matmul", "matmul_" + w, "blas_direct", blas, flops);
      emit("matmul", "gelu_matmul_" + w, "blas_direct", blas, flops);
      if (gemm.has_onednn()) {
        const double onednn = best_seconds([&] { gemm.onednn(); }, r);
        emit("matmul", "matmul_" + w, "onednn_direct", onednn, flops);
        emit("matmul", "gelu_matmul_" + w, "onednn_direct", onednn, flops);
        blas = std::min(blas, onednn);
      }
      limit_matmul(w, dtype, double(n), blas);  // the faster library
    }
  }
}

void bench_small_kernels() {
  auto ks = jx::random::split(key);
  auto q0 = jx::random::normal(ks(0), {3, 1024}), p0 = jx::random::normal(ks(1), {3, 1024});
  eager("small_kernels", "leapfrog_1000_steps", best_seconds([&] {
          std::pair<Array, Array> s{q0, p0};
          for (int i = 0; i < 1000; ++i) s = leapfrog_step(s.first, s.second);
        }, reps));
  MlpInputs in = mlp_inputs();
  eager("small_kernels", "mlp_value_and_grad_b64",
        per_call_seconds([&] { (void)mlp_value_and_grad(in.params, in.x, in.y); }, 20, reps));
}

void bench_vecmath() {
  for (const auto& c : vecmath_cases()) {
    Array x(vecmath_inputs(c));
    std::string w = std::string("vecmath_") + c.name + "_4M_float32";
    eager("vecmath", w, best_seconds([&] { (void)c.eager(x); }, reps));
    limit_vecmath(w, c);
  }
}

// Sort and argsort of 10^6 float32 (one line), and 1000 lines of 1000.
void bench_sort() {
  auto x = jx::random::normal(key, {1000000});
  auto rows = jnp::reshape(x, {1000, 1000});
  eager("sort", "sort_1e6_float32", best_seconds([&] { (void)jnp::sort(x); }, reps));
  eager("sort", "argsort_1e6_float32", best_seconds([&] { (void)jnp::argsort(x); }, reps));
  eager("sort", "sort_rows_1000x1000_float32", best_seconds([&] { (void)jnp::sort(rows, -1); }, reps));
}

}  // namespace

int main(int argc, char** argv) {
  BenchArgs args = parse_bench_args(argc, argv);
  quick = args.quick;
  reps = quick ? 2 : 5;
  double bandwidth = measure_bandwidth(quick);
  // OpenBLAS's kernel set (OPENBLAS_CORETYPE's, OpenBLAS's choice from the CPU, or jx's
  // where OpenBLAS did not know the CPU: blas_kernels.h): the matmul rows depend on it
  // more than on anything jx does.
  const jx::cpu::BlasKernels blas = jx::cpu::blas_kernels();
  std::printf("{\"threads\": %d, \"stream_GBps\": %.2f, \"read_GBps\": %.2f, \"blas_kernels\": \"%s\", "
              "\"blas_kernels_openblas_chose\": \"%s\"}\n",
              jx::cpu::num_threads(), bandwidth / 1e9, g_read_bandwidth / 1e9,
              blas.running.empty() ? "not OpenBLAS" : blas.running.c_str(), blas.chosen_by_openblas.c_str());
  const std::pair<const char*, void (*)()> sections[] = {
      {"dispatch", bench_dispatch}, {"grad", bench_grad},           {"tutorial", bench_tutorial},
      {"selu", bench_selu},         {"reduction", bench_reduction}, {"softmax", bench_softmax},
      {"matmul", bench_matmul},     {"small_kernels", bench_small_kernels}, {"vecmath", bench_vecmath},
      {"sort", bench_sort}};
  for (auto [name, body] : sections)
    if (args.runs(name)) body();
  return 0;
}
