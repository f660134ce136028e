// Elementwise kernels: ns per element of jx::lax ops on 4M float32 elements against a
// plain scalar loop over the same buffer, per vector instruction set, and for views
// (a broadcast scalar operand, a transposed operand). Threads: JX_NUM_THREADS.
//   build-dir/bench/elementwise_bench
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "core/array_internal.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/vector_math.h"
#include "jx/jx.h"

namespace lax = jx::lax;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kN = int64_t{1} << 22;  // 4M elements

// Best-of-reps wall time of f() in ns per element, after one warm-up call.
double ns_per_element(const std::function<void()>& f, int reps = 7) {
  f();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best * 1e9 / static_cast<double>(kN);
}

void row(const char* what, double ns) { std::printf("  %-44s %7.3f ns/element\n", what, ns); }

}  // namespace

int main() {
  std::vector<float> host(kN);
  for (int64_t i = 0; i < kN; ++i) host[i] = static_cast<float>((i % 20000) * 0.001 - 10.0);  // [-10, 10)
  jx::Array x(host);
  jx::Array half_scalar = jx::detail::scalar(0.5f);
  jx::Array y = lax::add(x, jx::detail::make_view(half_scalar, x.aval(), {0}, 0));
  std::vector<float> host_positive(kN);
  for (int64_t i = 0; i < kN; ++i) host_positive[i] = 0.5f + static_cast<float>(i % 1000) * 0.0015f;  // [0.5, 2)
  jx::Array positive(host_positive);
  std::vector<float> out(kN);
  volatile float sink = 0;

  std::printf("elementwise, %lld float32 elements, %d threads, best ISA %s\n", static_cast<long long>(kN),
              jx::cpu::num_threads(), jx::cpu::vector_isa_name(jx::cpu::best_vector_isa()));

  std::printf("plain scalar loops (one thread, libm):\n");
  row("std::sin", ns_per_element([&] {
        for (int64_t i = 0; i < kN; ++i) out[i] = std::sin(host[i]);
        sink = out[kN / 2];
      }));
  row("std::exp", ns_per_element([&] {
        for (int64_t i = 0; i < kN; ++i) out[i] = std::exp(host[i]);
        sink = out[kN / 2];
      }));
  row("a + b", ns_per_element([&] {
        const float* h = host.data();
        for (int64_t i = 0; i < kN; ++i) out[i] = h[i] + 0.5f;
        sink = out[kN / 2];
      }));

  for (auto isa : {jx::cpu::VectorIsa::Scalar, jx::cpu::VectorIsa::Avx2, jx::cpu::VectorIsa::Avx512}) {
    if (isa > jx::cpu::best_vector_isa()) continue;
    jx::cpu::set_vector_isa(isa);
    std::printf("jx::lax, %s vector math:\n", jx::cpu::vector_isa_name(isa));
    row("sin", ns_per_element([&] { lax::sin(x); }));
    row("exp", ns_per_element([&] { lax::exp(x); }));
    row("tanh", ns_per_element([&] { lax::tanh(x); }));
    row("logistic", ns_per_element([&] { lax::logistic(x); }));
    row("pow (positive base)", ns_per_element([&] { lax::pow(positive, x); }));
  }
  jx::cpu::set_vector_isa(jx::cpu::best_vector_isa());

  jx::Array half = lax::convert_element_type(x, jx::DType::Float16);
  jx::Array scalar_b = jx::detail::make_view(y, jx::Aval{x.shape(), x.dtype()}, {0}, 5);
  jx::Array square = jx::detail::make_view(x, jx::Aval{{2048, 2048}, x.dtype()}, {1, 2048}, 0);  // transposed
  std::printf("jx::lax, other kernels:\n");
  row("add", ns_per_element([&] { lax::add(x, y); }));
  row("add, scalar operand (stride 0)", ns_per_element([&] { lax::add(x, scalar_b); }));
  row("exp, transposed operand", ns_per_element([&] { lax::exp(square); }));
  row("mul, transposed operand", ns_per_element([&] { lax::mul(square, square); }));
  row("sin, float16", ns_per_element([&] { lax::sin(half); }));
  row("lt -> bool", ns_per_element([&] { lax::lt(x, y); }));
  row("convert float32 -> int32", ns_per_element([&] { lax::convert_element_type(x, jx::DType::Int32); }));
  row("max (NaN-propagating)", ns_per_element([&] { lax::max(x, y); }));
  (void)sink;
  return 0;
}
