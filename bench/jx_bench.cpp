// Eager jx's side of the benchmark suite, and the hardware limit (bench/run.py drives it,
// jit_bench and the peers). Prints one JSON object per line: {"section", "workload", "impl",
// "seconds": best time, ...}. Every workload of ../shared/BENCHMARKS.md runs here eagerly
// (each operation its own kernel); jit_bench runs the same functions (bench_common.h)
// through jx::jit. The limit of each workload is measured in the same run (impl "limit"):
//   T_min = max(bytes / stream_bandwidth, sum(elements * cost_per_element) / threads)
// stream_bandwidth: a STREAM triad on all threads; cost_per_element: glibc's libmvec
// AVX-512 routine (_ZGVeN16v_sinf, ...) called directly on a cache-resident buffer, every
// thread busy; for matmul, the BLAS called directly.
//   jx_bench [--quick] [--only tutorial,selu,...]
#include <cblas.h>
#include <dlfcn.h>
#include <immintrin.h>

#include <atomic>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "core/array_internal.h"

using namespace jx_bench;

namespace {

int reps = 5;
bool quick = false;
const auto key = jx::random::key(0);
double bandwidth = 0;  // bytes/second, STREAM triad

// ---- the compute term: libmvec's AVX-512 routines called directly ----

#pragma GCC push_options
#pragma GCC target("avx512f")
using VecFnF32 = __m512 (*)(__m512);
using VecFnF64 = __m512d (*)(__m512d);
void mvec_pass_f32(void* fn, const float* in, float* out, int64_t n) {
  auto f = reinterpret_cast<VecFnF32>(fn);
  for (int64_t i = 0; i < n; i += 16) _mm512_storeu_ps(out + i, f(_mm512_loadu_ps(in + i)));
}
void mvec_pass_f64(void* fn, const double* in, double* out, int64_t n) {
  auto f = reinterpret_cast<VecFnF64>(fn);
  for (int64_t i = 0; i < n; i += 8) _mm512_storeu_pd(out + i, f(_mm512_loadu_pd(in + i)));
}
// out = sin(x) + cos(y) over n (a multiple of the vector width) elements: the tutorial
// hand-fused, what a perfect jit kernel does.
void mvec_sin_cos_f32(void* s, void* c, const float* x, const float* y, float* out, int64_t n) {
  auto fs = reinterpret_cast<VecFnF32>(s), fc = reinterpret_cast<VecFnF32>(c);
  for (int64_t i = 0; i < n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_add_ps(fs(_mm512_loadu_ps(x + i)), fc(_mm512_loadu_ps(y + i))));
}
void mvec_sin_cos_f64(void* s, void* c, const double* x, const double* y, double* out, int64_t n) {
  auto fs = reinterpret_cast<VecFnF64>(s), fc = reinterpret_cast<VecFnF64>(c);
  for (int64_t i = 0; i < n; i += 8)
    _mm512_storeu_pd(out + i, _mm512_add_pd(fs(_mm512_loadu_pd(x + i)), fc(_mm512_loadu_pd(y + i))));
}
#pragma GCC pop_options

void* libmvec_symbol(const std::string& name) {
  static void* lib = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib || !__builtin_cpu_supports("avx512f")) return nullptr;
  return dlsym(lib, name.c_str());
}

// Seconds per element and thread of libmvec's AVX-512 variant of `fn` ("sin") on values
// uniform in [lo, hi), with every jx thread running it at once on its own L1-resident
// buffer; NaN when libmvec or AVX-512 is missing (the limit is then the memory term only).
double mvec_cost(const std::string& fn, jx::DType dtype, double lo, double hi) {
  static std::map<std::string, double> memo;
  const bool f32 = dtype == jx::float32;
  std::string symbol = f32 ? "_ZGVeN16v_" + fn + "f" : "_ZGVeN8v_" + fn;
  std::string memo_key = symbol + "/" + std::to_string(lo) + "/" + std::to_string(hi);
  if (auto it = memo.find(memo_key); it != memo.end()) return it->second;
  void* f = libmvec_symbol(symbol);
  double cost = std::nan("");
  if (f) {
    const int64_t n = 2048;  // 8 or 16 KiB in, the same out: L1-resident
    const int64_t passes = quick ? 1000 : 4000;
    const int threads = jx::cpu::num_threads();
    auto work = [&](int t) {
      std::vector<float> inf(n), outf(n);
      std::vector<double> ind(n), outd(n);
      for (int64_t i = 0; i < n; ++i) {
        double u = static_cast<double>((i * 7919 + t * 104729) % n) / static_cast<double>(n);
        ind[i] = lo + u * (hi - lo);
        inf[i] = static_cast<float>(ind[i]);
      }
      for (int64_t p = 0; p < passes; ++p) {
        if (f32) mvec_pass_f32(f, inf.data(), outf.data(), n);
        else mvec_pass_f64(f, ind.data(), outd.data(), n);
      }
    };
    cost = best_seconds([&] {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
      for (auto& th : pool) th.join();
    }, 3) / static_cast<double>(n * passes);
    emit("limit", "libmvec_" + fn + dtype_suffix(dtype), "limit", cost,
         Extra().num("ns_per_element_per_thread", cost * 1e9).num("lo", lo).num("hi", hi).str("symbol", symbol));
  }
  memo[memo_key] = cost;
  return cost;
}

// The limit of a workload: `bytes` that must cross memory once, and the transcendental
// calls (elements x seconds per element per thread) it cannot avoid.
void limit(const std::string& section, const std::string& workload, double bytes,
           const std::vector<std::pair<double, double>>& calls = {}) {
  double compute = 0;
  for (auto [elements, cost] : calls)
    if (!std::isnan(cost)) compute += elements * cost;
  compute /= jx::cpu::num_threads();
  double memory = bytes / bandwidth;
  emit(section, workload, "limit", std::max(memory, compute),
       Extra().num("bytes", bytes).num("memory_s", memory).num("compute_s", compute));
}

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

// The tutorial hand-fused in C++ (libmvec AVX-512 on all threads, split in one chunk per
// thread as jit splits it): into a fresh output array each call, as jit and eager must return one
// ("hand_fused"), and into one preallocated buffer ("hand_fused_prealloc"). Their gap is
// what allocating and first-touching the output costs; jit's gap to "hand_fused" is the
// kernel's own inefficiency.
void hand_fused_tutorial(const std::string& workload, const Array& x, const Array& y) {
  const bool f32 = x.dtype() == jx::float32;
  void* s = libmvec_symbol(f32 ? "_ZGVeN16v_sinf" : "_ZGVeN8v_sin");
  void* c = libmvec_symbol(f32 ? "_ZGVeN16v_cosf" : "_ZGVeN8v_cos");
  const int64_t blocks = x.size() / 16;  // x is contiguous; 5000 x 5000 is a multiple of 16
  if (!s || !c || x.size() % 16 != 0) return;
  auto run = [&](Array& out) {
    jx::cpu::parallel_for(blocks, 1024, [&](int64_t lo, int64_t hi) {
      int64_t b = lo * 16, n = (hi - lo) * 16;
      if (f32)
        mvec_sin_cos_f32(s, c, jx::detail::data<float>(x) + b, jx::detail::data<float>(y) + b,
                         jx::detail::mutable_data<float>(out) + b, n);
      else
        mvec_sin_cos_f64(s, c, jx::detail::data<double>(x) + b, jx::detail::data<double>(y) + b,
                         jx::detail::mutable_data<double>(out) + b, n);
    });
  };
  Array kept = jx::detail::alloc_array(x.aval());
  emit("tutorial", workload, "hand_fused", best_seconds([&] {
         Array out = jx::detail::alloc_array(x.aval());
         run(out);
       }, reps));
  emit("tutorial", workload, "hand_fused_prealloc", best_seconds([&] { run(kept); }, reps));
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
    double sin_cost = mvec_cost("sin", dtype, 0, 1), cos_cost = mvec_cost("cos", dtype, 0, 1);
    eager("tutorial", "sin_cos_5000x5000" + suffix, best_seconds([&] { (void)sin_cos(x, y); }, reps));
    limit("tutorial", "sin_cos_5000x5000" + suffix, 3 * nn * item, {{nn, sin_cost}, {nn, cos_cost}});
    hand_fused_tutorial("sin_cos_5000x5000" + suffix, x, y);
    // Broadcast y: cos is needed on n values only (jit may hoist it; the limit assumes so).
    eager("tutorial", "sin_cos_bcast_5000x5000" + suffix, best_seconds([&] { (void)sin_cos(x, yb); }, reps));
    limit("tutorial", "sin_cos_bcast_5000x5000" + suffix, (2 * nn + n) * item,
          {{nn, sin_cost}, {double(n), mvec_cost("cos", dtype, 0, double(n))}});
    // The vector math alone (one op, one kernel): what eager pays per transcendental.
    eager("tutorial", "sin_5000x5000" + suffix, best_seconds([&] { (void)jnp::sin(x); }, reps));
    limit("tutorial", "sin_5000x5000" + suffix, 2 * nn * item, {{nn, sin_cost}});
  }
  for (int64_t n : sweep_sizes()) {
    auto ks = jx::random::split(key);
    auto x = jx::random::uniform(ks(0), {n}), y = jx::random::uniform(ks(1), {n});
    std::string w = "sin_cos_sweep_" + std::to_string(n) + "_float32";
    eager("tutorial", w, per_call_seconds([&] { (void)sin_cos(x, y); }, inner_calls(double(n)), reps));
    limit("tutorial", w, 3.0 * n * 4,
          {{double(n), mvec_cost("sin", jx::float32, 0, 1)}, {double(n), mvec_cost("cos", jx::float32, 0, 1)}});
  }
}

void bench_selu() {
  for (int64_t n : {int64_t(1000000), int64_t(16000000)}) {
    auto x = jx::random::normal(key, {n});
    std::string w = std::string("selu_") + (n == 1000000 ? "1e6" : "1.6e7") + "_float32";
    eager("selu", w, best_seconds([&] { (void)selu(x); }, reps));
    limit("selu", w, 2.0 * 4 * n, {{double(n), mvec_cost("exp", jx::float32, -4, 4)}});
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
    limit("reduction", w, 3.0 * n * jx::itemsize(dtype));
  }
}

void bench_softmax() {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4096, 4096}, {65536, 128}, {128, 65536}}) {
    auto x = jx::random::normal(key, {rows, cols});
    std::string shape = std::to_string(rows) + "x" + std::to_string(cols) + "_float32";
    double n = double(rows) * cols, exp_cost = mvec_cost("exp", jx::float32, -8, 0);
    eager("softmax", "softmax_rows_" + shape, best_seconds([&] { (void)softmax_rows(x); }, reps));
    limit("softmax", "softmax_rows_" + shape, 2 * 4 * n, {{n, exp_cost}});
    eager("softmax", "logsumexp_rows_" + shape, best_seconds([&] { (void)logsumexp_rows(x); }, reps));
    limit("softmax", "logsumexp_rows_" + shape, 4 * (n + rows),
          {{n, exp_cost}, {double(rows), mvec_cost("log", jx::float32, 1, double(cols))}});
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
      double blas;
      int ni = static_cast<int>(n);
      if (dtype == jx::float32) {
        std::vector<float> A = a.to_vector<float>(), B = b.to_vector<float>(), C(size_t(n) * n);
        blas = best_seconds([&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, A.data(), ni, B.data(), ni, 0.0f,
                      C.data(), ni);
        }, r);
      } else {
        std::vector<double> A = a.to_vector<double>(), B = b.to_vector<double>(), C(size_t(n) * n);
        blas = best_seconds([&] {
          cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0, A.data(), ni, B.data(), ni, 0.0,
                      C.data(), ni);
        }, r);
      }
      // The limit: the BLAS called directly; for the GELU layer, plus its epilogue's tanh
      // (which cannot overlap the GEMM on the same cores).
      emit("matmul", "matmul_" + w, "blas_direct", blas, flops);
      emit("matmul", "matmul_" + w, "limit", blas, flops);
      emit("matmul", "gelu_matmul_" + w, "blas_direct", blas, flops);
      double nn = double(n) * n;
      emit("matmul", "gelu_matmul_" + w, "limit",
           blas + nn * std::max(0.0, mvec_cost("tanh", dtype, -3, 3)) / jx::cpu::num_threads(), flops);
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
    double lo = c.lo, hi = c.hi;
    if (c.log_uniform) lo = 0.5, hi = 2;  // libmvec's logf cost does not depend on the exponent
    limit("vecmath", w, 2.0 * 4 * kVecMathN, {{double(kVecMathN), mvec_cost(c.name, jx::float32, lo, hi)}});
  }
}

}  // namespace

int main(int argc, char** argv) {
  BenchArgs args = parse_bench_args(argc, argv);
  quick = args.quick;
  reps = quick ? 2 : 5;
  bandwidth = stream_bandwidth(quick);
  emit("limit", "stream_triad", "limit", 1.0 / bandwidth, Extra().num("bytes", 1.0));
  std::printf("{\"threads\": %d, \"stream_GBps\": %.2f}\n", jx::cpu::num_threads(), bandwidth / 1e9);
  const std::pair<const char*, void (*)()> sections[] = {
      {"dispatch", bench_dispatch}, {"grad", bench_grad},           {"tutorial", bench_tutorial},
      {"selu", bench_selu},         {"reduction", bench_reduction}, {"softmax", bench_softmax},
      {"matmul", bench_matmul},     {"small_kernels", bench_small_kernels}, {"vecmath", bench_vecmath}};
  for (auto [name, body] : sections)
    if (args.runs(name)) body();
  return 0;
}
