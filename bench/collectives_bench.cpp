// Workload 12 of ../shared/BENCHMARKS.md: the collectives, measured side by side in one run.
//
// In one process (JX_NUM_CPU_DEVICES devices):
//   allreduce bandwidth from 4 KB to 256 MB per device through the shared-memory
//   transport, against the memory limit measured in the same run: an all-reduce of S
//   bytes over N devices reads N*S and writes N*S bytes at least, at the STREAM triad's
//   bandwidth; also through pmap(psum) (a jitted program: adds the per-call cost);
//   the latency of every collective on 4 KB;
//   the step of the data-parallel example, scaled up to be compute-bound, on 1 and on N
//   devices (run with JX_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1, so a device is a core).
// Under mpirun (one device per process): jx's MPI transport against MPI_Allreduce called
// directly on the same buffers, from 4 KB to 256 MB, and the latency of every collective.
//
//   bench/collectives.sh        (runs both; prints one table each)
#include <cblas.h>
#include <mpi.h>

#include <barrier>
#include <cstring>
#include <thread>

#include "bench_common.h"
#include "distributed/hierarchical.h"
#include "distributed/shared_memory.h"

namespace {

using namespace jx_bench;
using jx::detail::CollectiveSignature;
using jx::detail::Communicator;
using jx::detail::ReduceOp;

std::vector<size_t> sizes(bool quick) {
  std::vector<size_t> s;
  for (size_t b = size_t{4} << 10; b <= (size_t{256} << 20); b *= quick ? 16 : 4) s.push_back(b);
  return s;
}
int reps_for(size_t bytes) { return static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / bytes, 3, 2000)); }

std::string human(size_t bytes) {
  char buf[32];
  if (bytes >= (size_t{1} << 20)) std::snprintf(buf, sizeof buf, "%zu MB", bytes >> 20);
  else std::snprintf(buf, sizeof buf, "%zu KB", bytes >> 10);
  return buf;
}

CollectiveSignature sig(const char* op, size_t count) {
  return CollectiveSignature{.collective = op, .axis = "bench", .dtype = jx::DType::Float32,
                             .shape = {static_cast<int64_t>(count)}};
}

// One collective call by every local member (one thread each), `reps` times; the best
// per-call time of a few batches, every member starting a batch together.
using MemberCall = std::function<void(Communicator&, int member)>;
double time_members(std::vector<std::unique_ptr<Communicator>>& members, const MemberCall& call, int reps,
                    bool across_processes) {
  const size_t n = members.size();
  double best = 1e30;
  for (int batch = 0; batch < 4; ++batch) {  // the first batch warms up
    std::barrier sync(static_cast<std::ptrdiff_t>(n));
    double elapsed = 0;
    std::vector<std::thread> threads;
    for (size_t i = 0; i < n; ++i)
      threads.emplace_back([&, i] {
        sync.arrive_and_wait();
        if (i == 0 && across_processes) MPI_Barrier(MPI_COMM_WORLD);
        sync.arrive_and_wait();
        const auto t0 = Clock::now();
        for (int r = 0; r < reps; ++r) call(*members[i], static_cast<int>(i));
        sync.arrive_and_wait();
        if (i == 0) elapsed = seconds_since(t0);
      });
    for (auto& t : threads) t.join();
    if (across_processes) MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (batch > 0) best = std::min(best, elapsed / reps);
  }
  return best;
}

struct Buffers {
  std::vector<std::vector<float>> in, out;
  Buffers(size_t members, size_t count, size_t out_factor) {
    for (size_t m = 0; m < members; ++m) {
      in.emplace_back(count, 1.0f + static_cast<float>(m));
      out.emplace_back(count * out_factor, 0.0f);
    }
  }
};

// Every collective on `bytes` per member: seconds per call.
std::vector<std::pair<std::string, double>> latencies(std::vector<std::unique_ptr<Communicator>>& members, int size,
                                                      size_t bytes, bool across) {
  const size_t count = bytes / 4;
  Buffers b(members.size(), count, static_cast<size_t>(size));
  std::vector<std::pair<int, int>> ring;
  for (int k = 0; k < size; ++k) ring.push_back({k, (k + 1) % size});
  const int reps = 2000;
  auto t = [&](const MemberCall& c) { return time_members(members, c, reps, across); };
  return {
      {"psum", t([&](Communicator& c, int i) { c.all_reduce(sig("psum", count), ReduceOp::kSum, b.in[i].data(), b.out[i].data(), count); })},
      {"all_gather", t([&](Communicator& c, int i) { c.all_gather(sig("all_gather", count), b.in[i].data(), b.out[i].data(), bytes); })},
      {"psum_scatter", t([&](Communicator& c, int i) {
         c.reduce_scatter(sig("psum_scatter", count), ReduceOp::kSum, b.in[i].data(), b.out[i].data(), count / size);
       })},
      {"all_to_all", t([&](Communicator& c, int i) {
         c.all_to_all(sig("all_to_all", count), b.in[i].data(), b.out[i].data(), bytes / size);
       })},
      {"ppermute", t([&](Communicator& c, int i) { c.permute(sig("ppermute", count), ring, b.in[i].data(), b.out[i].data(), bytes); })},
  };
}

// ---- in one process ----

void in_process(bool quick) {
  const int n = jx::local_device_count();
  const double bw = stream_bandwidth(quick);
  std::printf("\nallreduce (psum, f32) over %d in-process devices; memory limit: 2*N*S bytes at the STREAM triad's %.1f GB/s\n",
              n, bw / 1e9);
  std::printf("%10s %12s %12s %10s %12s %10s\n", "per device", "transport", "GB/s", "limit/t", "pmap(psum)", "limit/t");
  std::vector<std::string> names;
  for (int k = 0; k < n; ++k) names.push_back("cpu:" + std::to_string(k));
  auto group = jx::detail::SharedMemoryGroup::create(names, 300);
  std::vector<std::unique_ptr<Communicator>> members;
  for (int k = 0; k < n; ++k) members.push_back(group->member(k));
  auto psum = jx::jit(jx::pmap([](const Array& x) { return jx::lax::psum(x, "i"); }, {.axis_name = "i"}));
  double large_fraction = 1e30;
  for (size_t bytes : sizes(quick)) {
    const size_t count = bytes / 4;
    Buffers b(members.size(), count, 1);
    const int reps = reps_for(bytes);
    const double t = time_members(members, [&](Communicator& c, int i) {
      c.all_reduce(sig("psum", count), ReduceOp::kSum, b.in[i].data(), b.out[i].data(), count);
    }, reps, false);
    Array x = jx::random::normal(jx::random::key(1), {n, static_cast<int64_t>(count)});  // materialized, not a view
    const double tp = best_seconds([&] { psum(x).block_until_ready(); }, std::min(reps, 50));
    const double limit = 2.0 * n * bytes / bw;
    std::printf("%10s %10.2fus %12.2f %10.2f %10.2fus %10.2f\n", human(bytes).c_str(), t * 1e6, 2.0 * n * bytes / t / 1e9,
                limit / t, tp * 1e6, limit / tp);
    if (bytes >= (size_t{16} << 20)) large_fraction = std::min(large_fraction, limit / t);
  }
  std::printf("  target: >= 0.80 of the memory limit from 16 MB up: %s (worst %.2f)\n",
              large_fraction >= 0.8 ? "met" : "MISSED", large_fraction);
  std::printf("\nlatency of each collective on 4 KB per device, %d in-process devices (transport)\n", n);
  for (auto [name, t] : latencies(members, n, 4096, false)) std::printf("  %-14s %8.2f us\n", name.c_str(), t * 1e6);
}

// The data-parallel example's step, large enough to be compute-bound: the MLP's gradient
// on a batch split over `devices`, averaged with pmean. Returns a call of one step.
std::function<void()> data_parallel_step(int devices, bool quick) {
  const int64_t batch = quick ? 1024 : 4096, features = 256, hidden = 1024;
  Array keys = jx::random::split(jx::random::key(0), 4);
  Array w1 = jx::random::normal(keys(0), {features, hidden}) * 0.05f, w2 = jx::random::normal(keys(1), {hidden, 1}) * 0.05f;
  Array x = jx::random::normal(keys(2), {devices, batch / devices, features});
  Array y = jx::random::normal(keys(3), {devices, batch / devices, 1});
  auto loss = [](const Array& w1, const Array& w2, const Array& x, const Array& y) {
    return jnp::mean(jnp::square(jnp::matmul(jnp::tanh(jnp::matmul(x, w1)), w2) - y));
  };
  std::vector<jx::Device> devs = jx::local_devices();
  devs.resize(static_cast<size_t>(devices));
  auto step = jx::pmap(
      [loss](const Array& w1, const Array& w2, const Array& x, const Array& y) {
        auto [g1, g2] = jx::grad(loss, jx::argnums<0, 1>)(w1, w2, x, y);
        return std::make_pair(jx::lax::pmean(g1, "batch"), jx::lax::pmean(g2, "batch"));
      },
      {.axis_name = "batch", .in_axes = {jx::not_mapped, jx::not_mapped, 0, 0}, .devices = devs});
  return [=] {
    auto [g1, g2] = step(w1, w2, x, y);
    g1.block_until_ready();
    g2.block_until_ready();
  };
}

// The hardware's own scaling on the step's dominant work: the BLAS sgemm of the first
// layer (one device's share of the batch), called directly on 1 thread and on n threads
// at once (OPENBLAS_NUM_THREADS=1: each call on its caller's thread). On virtual machines
// whose cores share a physical core this is well below n.
double hardware_speedup(int n, int64_t rows, bool quick) {
  const int64_t k = 256, cols = 1024;
  std::vector<std::vector<float>> a(static_cast<size_t>(n), std::vector<float>(static_cast<size_t>(rows * k), 0.5f)),
      b(static_cast<size_t>(n), std::vector<float>(static_cast<size_t>(k * cols), 0.25f)),
      c(static_cast<size_t>(n), std::vector<float>(static_cast<size_t>(rows * cols)));
  auto gemm = [&](size_t i) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows), static_cast<int>(cols),
                static_cast<int>(k), 1.0f, a[i].data(), static_cast<int>(k), b[i].data(), static_cast<int>(cols), 0.0f,
                c[i].data(), static_cast<int>(cols));
  };
  const int reps = quick ? 10 : 30;
  auto on_threads = [&](int t) {
    return [&, t] {
      std::vector<std::thread> threads;
      for (int i = 0; i < t; ++i)
        threads.emplace_back([&, i] {
          for (int r = 0; r < reps; ++r) gemm(static_cast<size_t>(i));
        });
      for (auto& th : threads) th.join();
    };
  };
  const std::vector<double> t = best_interleaved({on_threads(1), on_threads(n)}, quick ? 3 : 5);
  return n * t[0] / t[1];  // n times the work in t[1]
}

void scaling(bool quick) {
  const int n = jx::local_device_count();
  std::printf("\ndata-parallel step (MLP 256-1024-1, batch %d, grad + pmean), %d thread(s) per device\n",
              quick ? 1024 : 4096, jx::cpu::num_threads());
  std::vector<std::function<void()>> steps;
  for (int d = 1; d <= n; ++d) steps.push_back(data_parallel_step(d, quick));
  // Measured in alternation, so the machine's load falls on every device count alike.
  const std::vector<double> t = best_interleaved(steps, quick ? 3 : 7);
  std::printf("  1 device:  %8.2f ms\n", t[0] * 1e3);
  const int64_t batch = quick ? 1024 : 4096;
  for (int d = 2; d <= n; ++d) {
    const double hw = hardware_speedup(d, batch / d, quick);
    std::printf("  %d devices: %8.2f ms   speed-up %.2fx%s; the hardware's on the same sgemm: %.2fx (jx/hardware %.2f)\n",
                d, t[d - 1] * 1e3, t[0] / t[d - 1],
                d == 2 ? (t[0] / t[1] >= 1.8 ? " (target >= 1.8x: met)" : " (target >= 1.8x: MISSED)") : "", hw,
                t[0] / t[d - 1] / hw);
  }
}

// ---- across processes ----

void across_processes(bool quick) {
  const int p = jx::process_count(), me = jx::process_index();
  if (jx::local_device_count() != 1) {
    if (me == 0) std::printf("run across processes with one device each (JX_NUM_CPU_DEVICES=1)\n");
    return;
  }
  std::vector<std::string> names;
  std::vector<int> process;
  for (int k = 0; k < p; ++k) {
    names.push_back("cpu:" + std::to_string(k) + " (process " + std::to_string(k) + ")");
    process.push_back(k);
  }
  auto line = jx::detail::CrossProcessGroup::create(names, process, 1 << 21, 300);
  std::vector<std::unique_ptr<Communicator>> members;
  members.push_back(line->member(me));
  if (me == 0) {
    std::printf("\nallreduce (psum, f32) over %d MPI processes, one device each: jx's MPI transport vs MPI_Allreduce\n", p);
    std::printf("%10s %12s %12s %12s %10s\n", "per rank", "jx", "MPI_Allreduce", "jx GB/s", "mpi/jx");
  }
  double worst_large = 1e30;
  for (size_t bytes : sizes(quick)) {
    const size_t count = bytes / 4;
    Buffers b(1, count, 1);
    const int reps = reps_for(bytes);
    const double tj = time_members(members, [&](Communicator& c, int) {
      c.all_reduce(sig("psum", count), ReduceOp::kSum, b.in[0].data(), b.out[0].data(), count);
    }, reps, true);
    const double tm = time_members(members, [&](Communicator&, int) {
      MPI_Allreduce(b.in[0].data(), b.out[0].data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }, reps, true);
    if (me == 0)
      std::printf("%10s %10.2fus %10.2fus %12.2f %10.2f\n", human(bytes).c_str(), tj * 1e6, tm * 1e6,
                  static_cast<double>(bytes) / tj / 1e9, tm / tj);
    if (bytes >= (size_t{1} << 20)) worst_large = std::min(worst_large, tm / tj);
  }
  if (me == 0) {
    std::printf("  target: >= 0.90 of MPI_Allreduce from 1 MB up: %s (worst %.2f)\n",
                worst_large >= 0.9 ? "met" : "MISSED", worst_large);
    std::printf("\nlatency of each collective on 4 KB per rank, %d MPI processes\n", p);
  }
  for (auto [name, t] : latencies(members, p, 4096, true))
    if (me == 0) std::printf("  %-14s %8.2f us\n", name.c_str(), t * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const BenchArgs args = parse_bench_args(argc, argv);
  jx::distributed::initialize();
  if (jx::process_count() > 1) {
    across_processes(args.quick);
  } else {
    if (args.runs("allreduce")) in_process(args.quick);
    if (args.runs("scaling")) scaling(args.quick);
  }
  return 0;
}
