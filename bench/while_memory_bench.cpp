// Memory of reverse mode through lax::while_loop against its trip count N: the default
// checkpointing (ceil(sqrt N) saved carries), two levels (ceil(N^(1/3))), and saving every
// step (checkpoints = N). For each it reports the residual bytes the pullback holds (the
// constants of vjp's linear program: what the forward pass saved), the peak resident set
// of a process that runs one eager grad (its growth over the start), and that grad's time.
//
//   while_memory_bench            # every N in {100, 1000, 10000} and schedule, one process each
//   while_memory_bench N MODE     # one run: MODE sqrt | levels2 | every
//
// One JSON line per run. The carry is an int32 counter and an f32[2048] (8 KiB); the body
// x <- x + 1e-4 * sin(x) runs all N steps (its derivative stays of order 1, so the
// checksum, which every schedule must agree on, means something).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "jx/jx.h"
#include "transforms/linearize.h"

namespace {

namespace jnp = jx::numpy;
using jx::Array;
using Carry = std::tuple<Array, Array>;

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

jx::lax::WhileOptions options_for(int64_t n, const std::string& mode) {
  if (mode == "every") return {.max_steps = n, .checkpoints = n};
  if (mode == "levels2") return {.max_steps = n, .checkpoint_levels = 2};
  return {.max_steps = n};
}

int run_one(int64_t n, const std::string& mode) {
  const long rss0 = peak_rss_kib();
  const jx::lax::WhileOptions options = options_for(n, mode);
  const Array x = jnp::linspace(-3.0, 3.0, 2048);
  auto loop = [&](const Array& x0) {
    return std::get<1>(jx::lax::while_loop([&](const Carry& c) { return std::get<0>(c) < static_cast<int>(n); },
                                           [](const Carry& c) {
                                             auto [i, v] = c;
                                             return Carry{i + 1, v + jnp::sin(v) * 1e-4f};
                                           },
                                           Carry{Array(0), x0}, options));
  };
  // The residuals: what vjp's pullback keeps between the forward and the backward pass.
  jx::detail::Linearized lin = jx::detail::linearize_flat(
      [&](std::span<const Array> in) { return std::vector<Array>{loop(in[0])}; }, std::vector<Array>{x}, "vjp");
  int64_t residual_bytes = 0;
  for (const Array& c : lin.linear->jaxpr.consts) residual_bytes += c.nbytes();
  lin = {};
  // One eager grad: forward, recomputation and backward; its peak memory and time.
  const auto t0 = std::chrono::steady_clock::now();
  Array g = jx::grad([&](const Array& y) { return jnp::sum(loop(y)); })(x);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "{\"bench\": \"while_memory\", \"max_steps\": %lld, \"schedule\": \"%s\", \"residual_bytes\": %lld, "
      "\"peak_rss_growth_kib\": %ld, \"grad_seconds\": %.4f, \"grad_checksum\": %.6g}\n",
      static_cast<long long>(n), mode.c_str(), static_cast<long long>(residual_bytes), peak_rss_kib() - rss0, seconds,
      jnp::sum(g).item<double>());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3) return run_one(std::atoll(argv[1]), argv[2]);
  // A fresh process per run, so each peak resident set is its own.
  for (const char* n : {"100", "1000", "10000"})
    for (const char* mode : {"sqrt", "levels2", "every"}) {
      std::fflush(stdout);
      const std::string cmd = std::string("'") + argv[0] + "' " + n + " " + mode;
      if (std::system(cmd.c_str()) != 0) {
        std::fprintf(stderr, "while_memory_bench: '%s' failed\n", cmd.c_str());
        return 1;
      }
    }
  return 0;
}
