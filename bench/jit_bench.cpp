// jx::jit's side of the benchmark suite (bench/run.py drives it, jx_bench and the peers).
// Every workload of ../shared/BENCHMARKS.md (the functions and inputs of bench_common.h)
// through jx::jit ("jx_jit"), timed in alternation with eager jx on the same inputs
// ("jx_eager") and with the references ("blas_direct", "hand_fused"), so their ratios
// hold on a loaded machine; and each workload's limit (bench_limits.h). One JSON line per
// result; jit rows carry "rel_diff", max|jit - eager| / max|eager|, so a fast but wrong
// kernel shows.
//
//   jit_bench [--quick] [--only tutorial,selu,...]
//   jit_bench --compile-child [--with-warmup]   (jit_bench runs this itself) the on-disk cache
//                                               hits of the compile workloads in a fresh process
//
// Compile latency (section "compile") is measured in the modes the docs promise:
//   jx_jit_cold           first call of a fresh jx::jit with its own name and disk_cache=false:
//                         trace + passes + fusion + LLVM + the run (best of a few fresh ones)
//   jx_jit_retrace        a second jx::jit of the same function while the first is alive,
//                         disk_cache=false: traces and optimizes again, kernels shared in memory
//                         (best of a few)
//   jx_jit_disk_store     first call with the disk cache on (compiles and writes the cache)
//   jx_jit_disk_in_process  a second jx::jit, disk cache on: traces, kernels from disk
//   jx_jit_disk_fresh_process  the same from a new process (LLVM already started there)
//   jx_jit_disk_fresh_process_first  the sin_cos hit as the new process's first jit call
//   jx_jit_call           a cached call of the compiled function (what the run itself costs)
// JX_CACHE_DIR points at a temporary directory for the whole run, so the bench neither
// reads stale kernels from nor writes into the user's cache.
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench_common.h"
#include "bench_limits.h"

using namespace jx_bench;

namespace {

int reps = 5;
bool quick = false;
const auto key = jx::random::key(0);

jx::JitOptions options(const std::string& name, bool disk_cache = true) {
  jx::JitOptions o;
  o.name = name;
  o.disk_cache = disk_cache;
  return o;
}

// max|got - want| / max|want| in float64: does jit compute what eager computes?
double rel_diff(const Array& got, const Array& want) {
  Array g = got.astype(jx::float64), w = want.astype(jx::float64);
  double scale = jnp::max(jnp::abs(w)).item<double>();
  double err = jnp::max(jnp::abs(g - w)).item<double>();
  return scale > 0 ? err / scale : err;
}

void jit_row(const std::string& section, const std::string& workload, double seconds, const Extra& extra = {}) {
  emit(section, workload, "jx_jit", seconds, extra);
}

// Times eager and jit (and any references) in alternation, each in runs of `consecutive`
// calls (the best kept), as the peers are timed: a call right after another
// implementation's finds its arrays evicted by that one's temporaries (eager's softmax
// over 4096 x 4096 writes three 64 MB arrays), where consecutive calls find them in cache,
// which the limits allow for (bench_limits.h). Emits jx_eager, jx_jit (with `jit_extra`)
// and each reference under its impl name. Returns the times in that order.
std::vector<double> eager_vs_jit(const std::string& section, const std::string& workload,
                                 const std::function<void()>& eager, const std::function<void()>& jit,
                                 const Extra& jit_extra = {}, int r = -1, int inner = 1,
                                 const std::vector<std::pair<std::string, std::function<void()>>>& refs = {},
                                 int consecutive = 2) {
  std::vector<std::function<void()>> fs = {eager, jit};
  for (const auto& ref : refs) fs.push_back(ref.second);
  std::vector<double> t = best_interleaved(fs, r < 0 ? reps : r, inner, consecutive);
  emit(section, workload, "jx_eager", t[0]);
  emit(section, workload, "jx_jit", t[1], jit_extra);
  for (size_t i = 0; i < refs.size(); ++i) emit(section, workload, refs[i].first, t[2 + i]);
  return t;
}

// ---- 1. dispatch ----

// Runs this binary again with `flags` (a child mode; JX_CACHE_DIR is inherited) and
// returns what it printed, or nullopt (with a word on stderr) when it failed.
std::optional<std::string> child_output(const std::string& self, const std::string& flags) {
  const std::string cmd = "'" + self + "' " + flags;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string out;
  char line[4096];
  while (std::fgets(line, sizeof line, pipe)) out += line;
  if (pclose(pipe) != 0) {
    std::fprintf(stderr, "jit_bench: the child %s failed\n", flags.c_str());
    return std::nullopt;
  }
  return out;
}

// The seconds a first-call child printed (1e30 when it failed).
double first_call_in_child(const std::string& self) {
  const std::optional<std::string> out = child_output(self, "--first-call-child");
  double seconds = 1e30;
  if (!out || std::sscanf(out->c_str(), "%lf", &seconds) != 1) return 1e30;
  return seconds;
}

// The child: times its first jit call (an add of two 1-element arrays, no disk cache) and
// prints the seconds.
int first_call_child() {
  auto add = jx::jit([](const Array& a, const Array& b) { return a + b; }, options("bench_first_call", false));
  auto a = jx::random::uniform(key, {1}), b = jx::random::uniform(key, {1});
  auto t0 = Clock::now();
  (void)add(a, b);
  std::printf("%.9f\n", seconds_since(t0));
  return 0;
}

void bench_dispatch(const std::string& self) {
  auto add = jx::jit([](const Array& a, const Array& b) { return a + b; }, options("bench_add"));
  // Contiguous inputs (jnp::ones is a stride-0 view: see the "ones_views" row).
  auto a = jx::random::uniform(key, {1}), b = jx::random::uniform(key, {1});
  // The first jit call of a process (LLVM start-up + trace + compile + run): best of
  // `reps` fresh processes (first_call_child), as every row is a best of several; this
  // process's own first call, measured once, is kept beside it. One process alone read
  // anywhere from 6 to 22 ms on the noisy 2-core machine.
  auto t0 = Clock::now();
  (void)add(a, b);
  const double in_this_process = seconds_since(t0);
  double best_child = 1e30;
  for (int i = 0; i < reps; ++i) best_child = std::min(best_child, first_call_in_child(self));
  if (best_child < 1e30)
    jit_row("dispatch", "first_jit_call_in_process", best_child,
            Extra().num("fresh_processes", reps).num("in_bench_process", in_this_process));
  else
    jit_row("dispatch", "first_jit_call_in_process", in_this_process);
  eager_vs_jit("dispatch", "dispatch_add_1", [&] { (void)(a + b); }, [&] { (void)add(a, b); }, {}, 7, 20000);
  auto c = jx::random::uniform(key, {1024}), d = jx::random::uniform(key, {1024});
  eager_vs_jit("dispatch", "dispatch_add_1024", [&] { (void)(c + d); }, [&] { (void)add(c, d); },
               Extra().num("rel_diff", rel_diff(add(c, d), c + d)), 7, 5000);
  auto u = jx::random::uniform(key, {16384});
  eager_vs_jit("dispatch", "dispatch_add_16384", [&] { (void)(u + u); }, [&] { (void)add(u, u); }, {}, 7, 2000);
  // The same call on jnp::ones arrays (stride-0 broadcast views) and on a transpose:
  // eager and jit both read them in place (jit through kernels compiled for the layout).
  auto ones = jnp::ones({16384});
  eager_vs_jit("dispatch", "dispatch_add_16384_ones_views", [&] { (void)(ones + ones); },
               [&] { (void)add(ones, ones); }, {}, 7, 2000);
  auto t = jnp::transpose(jx::random::uniform(key, {128, 128}));
  auto tc = t + 0;
  eager_vs_jit("dispatch", "dispatch_add_128x128_transposed", [&] { (void)(t + tc); }, [&] { (void)add(t, tc); },
               Extra().num("rel_diff", rel_diff(add(t, tc), t + tc)), 7, 2000);
  // A parameter update p - 0.1 g of 1e6 floats, its result written over p when p is
  // donated (no allocation, one stream fewer), against the same jit without donation.
  auto sgd = [](const Array& p, const Array& g) { return p - 0.1f * g; };
  auto plain = jx::jit(sgd, options("bench_sgd"));
  jx::JitOptions donating = options("bench_sgd_donated");
  donating.donate_argnums = {0};
  auto donated = jx::jit(sgd, donating);
  Array g = jx::random::normal(key, {1000000});
  Array p_eager = jx::random::normal(key, {1000000}), p_plain = p_eager + 0, p_donated = p_eager + 0;
  eager_vs_jit("dispatch", "sgd_update_1e6", [&] { p_eager = sgd(p_eager, g); },
               [&] { p_donated = donated(p_donated, g); }, Extra().str("donated", "{0}"), 7, 20,
               {{"jx_jit_no_donation", [&] { p_plain = plain(p_plain, g); }}});
  // An Adam update of 1e6 floats: one kernel reads p, m, v and g and writes the three new
  // states, each over its donated buffer.
  using State = std::tuple<Array, Array, Array>;
  auto adam = [](const Array& p, const Array& m, const Array& v, const Array& g) {
    Array m1 = 0.9f * m + 0.1f * g;
    Array v1 = 0.999f * v + 0.001f * (g * g);
    return State{p - 1e-3f * m1 / (jnp::sqrt(v1) + 1e-8f), m1, v1};
  };
  auto adam_plain = jx::jit(adam, options("bench_adam"));
  jx::JitOptions adam_donating = options("bench_adam_donated");
  adam_donating.donate_argnums = {0, 1, 2};
  auto adam_donated = jx::jit(adam, adam_donating);
  auto fresh_state = [&] { return State{p_eager + 0, jnp::zeros({1000000}) + 0, jnp::zeros({1000000}) + 0}; };
  State s_eager = fresh_state(), s_plain = fresh_state(), s_donated = fresh_state();
  auto step = [&](auto& f, State& s) { s = f(std::get<0>(s), std::get<1>(s), std::get<2>(s), g); };
  eager_vs_jit("dispatch", "adam_update_1e6", [&] { step(adam, s_eager); }, [&] { step(adam_donated, s_donated); },
               Extra().str("donated", "{0, 1, 2}"), 7, 20, {{"jx_jit_no_donation", [&] { step(adam_plain, s_plain); }}});
  std::vector<Array> args = dispatch_args();
  auto sum20 = jx::jit(sum_of_20, options("bench_sum20"));
  eager_vs_jit("dispatch", "dispatch_20_args_1", [&] { (void)sum_of_20(args); }, [&] { (void)sum20(args); },
               Extra().num("rel_diff", rel_diff(sum20(args), sum_of_20(args))), 7, 2000);
}

// ---- 2. compile latency ----

// Times the first call of a fresh jx::jit(f, options) on fixed arguments; with `keep`,
// the jitted function (and so its loaded kernels) stays alive there afterwards.
using FirstCallTimer = std::function<double(const jx::JitOptions&, std::shared_ptr<void>* keep)>;
// Times a cached call of an already compiled jx::jit(f).
using CachedCallTimer = std::function<double()>;

template <class F, class... A>
std::pair<FirstCallTimer, CachedCallTimer> compile_timers(F f, A... args) {
  FirstCallTimer first = [f, args...](const jx::JitOptions& o, std::shared_ptr<void>* keep) {
    auto jf = std::make_shared<decltype(jx::jit(f, o))>(jx::jit(f, o));
    auto t0 = Clock::now();
    (void)(*jf)(args...);
    double t = seconds_since(t0);
    if (keep) *keep = jf;
    return t;
  };
  CachedCallTimer cached = [f, args...] {
    auto jf = jx::jit(f, options("bench_compile_cached_call"));
    return per_call_seconds([&] { (void)jf(args...); }, 200, 3);
  };
  return {first, cached};
}

struct CompileCase {
  std::string name;
  FirstCallTimer first;
  CachedCallTimer cached;
  std::string beside = {};  // a case whose cold compile is timed again alongside this one's
};

// Fixed small shapes (the run itself is microseconds), big enough to take the threaded path.
std::vector<CompileCase> compile_cases() {
  auto ks = jx::random::split(key, 2);
  Array x = jx::random::uniform(ks(0), {256, 256}), y = jx::random::uniform(ks(1), {256, 256});
  Array v = jx::random::normal(ks(0), {65536});
  MlpInputs mlp = mlp_inputs();
  std::vector<CompileCase> cases;
  auto add = [&](std::string name, std::pair<FirstCallTimer, CachedCallTimer> t) {
    cases.push_back({std::move(name), std::move(t.first), std::move(t.second)});
  };
  add("compile_sin_cos", compile_timers(sin_cos, x, y));
  add("compile_selu", compile_timers(selu, v));
  add("compile_chain20", compile_timers(chain20, x, y));
  // Longer chains of the same five ops (one fused kernel each): compile time per op.
  for (int ops : {200, 2000})
    add("compile_chain" + std::to_string(ops),
        compile_timers([ops](const Array& a, const Array& b) { return chain_of(a, b, ops / 5); }, x, y));
  // As wide as long: 200 and 2000 ops reading the same two inputs.
  for (int ops : {200, 2000})
    add("compile_fan_in" + std::to_string(ops),
        compile_timers([ops](const Array& a, const Array& b) { return fan_in_of(a, b, ops / 4); }, x, y));
  // The 200-op chain first called on jnp::ones (a stride-0 view, as a new user writes it):
  // only that layout's kernels are compiled, so it costs what the contiguous call costs.
  // The row-major chain's cold compile is timed again beside it, in alternation: one
  // timed minutes earlier, before the 2000-op programs, read 1.2-1.45x faster on this
  // noisy machine than the same compile timed next to this one.
  add("compile_chain200_on_ones",
      compile_timers([](const Array& a, const Array& b) { return chain_of(a, b, 40); }, jnp::ones({256, 256}), y));
  cases.back().beside = "compile_chain200";
  add("compile_mlp_value_and_grad", compile_timers(mlp_value_and_grad, mlp.params, mlp.x, mlp.y));
  return cases;
}

// Runs this binary again in compile-child mode and passes its JSON lines on.
void run_child(const std::string& self, bool with_warmup) {
  if (const auto out = child_output(self, with_warmup ? "--compile-child --with-warmup" : "--compile-child")) {
    std::fputs(out->c_str(), stdout);
    std::fflush(stdout);
  }
}

void bench_compile(const std::string& self) {
  const int cold_reps = quick ? 1 : 3;
  const std::vector<CompileCase> cases = compile_cases();
  for (const auto& c : cases) {
    std::string cold_name = c.name + "_cold_" + std::to_string(getpid());
    const CompileCase* beside = nullptr;
    for (const auto& other : cases)
      if (!c.beside.empty() && other.name == c.beside) beside = &other;
    double cold = 1e30, beside_cold = 1e30;
    // A pair timed beside each other alternates more times: their ratio is the target.
    const int reps_here = beside ? cold_reps + 2 : cold_reps;
    for (int i = 0; i < reps_here; ++i) {
      cold = std::min(cold, c.first(options(cold_name + "_" + std::to_string(i), false), nullptr));
      if (beside)
        beside_cold = std::min(beside_cold, beside->first(options(cold_name + "_beside_" + std::to_string(i), false),
                                                          nullptr));
    }
    emit("compile", c.name, "jx_jit_cold", cold, beside ? Extra().num("beside_cold", beside_cold) : Extra());
    // A second jx::jit of the same function while the first is alive: traces and
    // optimizes again; identical kernels are shared in memory (no LLVM).
    std::shared_ptr<void> first;
    c.first(options(cold_name + "_warm", false), &first);
    double retrace = 1e30;  // best of a few, as the cold compile
    for (int i = 0; i < cold_reps; ++i)
      retrace = std::min(retrace, c.first(options(cold_name + "_warm", false), nullptr));
    emit("compile", c.name, "jx_jit_retrace", retrace);
    first.reset();
    emit("compile", c.name, "jx_jit_disk_store", c.first(options(c.name + "_disk", true), nullptr));
    emit("compile", c.name, "jx_jit_disk_in_process", c.first(options(c.name + "_disk", true), nullptr));
    emit("compile", c.name, "jx_jit_call", c.cached());
  }
  run_child(self, true);
  run_child(self, false);
}

// The child: disk-cache hits in a fresh process. With warm-up, an unrelated function is
// compiled first (LLVM's start-up, reported on its own); without, only sin_cos is timed,
// as the process's first jit call.
int compile_child(bool with_warmup) {
  auto cases = compile_cases();
  if (!with_warmup) {
    emit("compile", cases[0].name, "jx_jit_disk_fresh_process_first",
         cases[0].first(options(cases[0].name + "_disk"), nullptr));
    return 0;
  }
  auto warm = jx::jit([](const Array& x) { return x * 3.0f; }, options("bench_child_warmup", false));
  Array one = jnp::ones({4});
  auto t0 = Clock::now();
  (void)warm(one);
  emit("compile", "first_jit_compile_in_fresh_process", "jx_jit_cold", seconds_since(t0));
  for (auto& c : cases)
    emit("compile", c.name, "jx_jit_disk_fresh_process", c.first(options(c.name + "_disk"), nullptr));
  return 0;
}

// ---- 3. the tutorial workload ----

void bench_tutorial() {
  auto f = jx::jit(sin_cos, options("bench_sin_cos"));
  for (auto dtype : {jx::float32, jx::float64}) {
    const int64_t n = 5000;
    const double nn = double(n) * n, item = jx::itemsize(dtype);
    auto ks = jx::random::split(key);
    auto x = jx::random::uniform(ks(0), {n, n}, dtype);
    auto y = jx::random::uniform(ks(1), {n, n}, dtype);
    auto yb = jnp::arange(n, dtype);
    std::string suffix = dtype_suffix(dtype);
    // The hand-fused C++ loop into a fresh output each call (as jit must return one) and
    // into one kept buffer: their gap is the cost of a fresh output array.
    Array kept = jx::detail::alloc_array(x.aval());
    std::vector<std::pair<std::string, std::function<void()>>> refs;
    if (hand_fused_sin_cos(x, y, kept))
      refs = {{"hand_fused", [&] {
                 Array out = jx::detail::alloc_array(x.aval());
                 hand_fused_sin_cos(x, y, out);
               }},
              {"hand_fused_prealloc", [&] { hand_fused_sin_cos(x, y, kept); }}};
    eager_vs_jit("tutorial", "sin_cos_5000x5000" + suffix, [&] { (void)sin_cos(x, y); }, [&] { (void)f(x, y); },
                 Extra().num("rel_diff", rel_diff(f(x, y), sin_cos(x, y))), -1, 1, refs);
    limit_sin_cos("sin_cos_5000x5000" + suffix, dtype, nn, nn, 1, 3 * nn * item);
    kept = Array();
    eager_vs_jit("tutorial", "sin_cos_bcast_5000x5000" + suffix, [&] { (void)sin_cos(x, yb); },
                 [&] { (void)f(x, yb); }, Extra().num("rel_diff", rel_diff(f(x, yb), sin_cos(x, yb))));
    limit_sin_cos("sin_cos_bcast_5000x5000" + suffix, dtype, nn, double(n), double(n), (2 * nn + n) * item);
    // Eager's one vector-math op alone (one kernel): what eager pays per transcendental.
    emit("tutorial", "sin_5000x5000" + suffix, "jx_eager", best_seconds([&] { (void)jnp::sin(x); }, reps));
    limit_sin_cos("sin_5000x5000" + suffix, dtype, nn, 0, 1, 2 * nn * item);
  }
  for (int64_t n : sweep_sizes()) {
    auto ks = jx::random::split(key);
    auto x = jx::random::uniform(ks(0), {n}), y = jx::random::uniform(ks(1), {n});
    std::string w = "sin_cos_sweep_" + std::to_string(n) + "_float32";
    eager_vs_jit("tutorial", w, [&] { (void)sin_cos(x, y); }, [&] { (void)f(x, y); },
                 Extra().num("rel_diff", rel_diff(f(x, y), sin_cos(x, y))), -1, inner_calls(double(n)));
    limit_sin_cos(w, jx::float32, double(n), double(n), 1, 3.0 * n * 4);
  }
}

// ---- 4. SELU ----

void bench_selu() {
  auto f = jx::jit(selu, options("bench_selu"));
  for (int64_t n : {int64_t(1000000), int64_t(16000000)}) {
    auto x = jx::random::normal(key, {n});
    std::string w = std::string("selu_") + (n == 1000000 ? "1e6" : "1.6e7") + "_float32";
    eager_vs_jit("selu", w, [&] { (void)selu(x); }, [&] { (void)f(x); }, Extra().num("rel_diff", rel_diff(f(x), selu(x))));
    limit_selu(w, double(n));
  }
}

// ---- 5. fused reduction, and its accuracy ----

// sum(x + 2y + z^2) in long double from the float64 values: the accuracy reference.
double reference_sum(const Array& x, const Array& y, const Array& z) {
  std::vector<double> xs = x.to_vector<double>(), ys = y.to_vector<double>(), zs = z.to_vector<double>();
  long double s = 0;
  for (size_t i = 0; i < xs.size(); ++i) s += xs[i] + 2 * ys[i] + zs[i] * zs[i];
  return static_cast<double>(s);
}

void bench_reduction() {
  auto f = jx::jit(fused_sum, options("bench_fused_sum"));
  for (auto dtype : {jx::float32, jx::float64}) {
    auto ks = jx::random::split(key, 3);
    int64_t n = 16000000;
    auto x = jx::random::uniform(ks(0), {n}, dtype), y = jx::random::uniform(ks(1), {n}, dtype),
         z = jx::random::uniform(ks(2), {n}, dtype);
    std::string w = "sum_x_2y_z2_1.6e7" + dtype_suffix(dtype);
    double ref = reference_sum(x, y, z);
    double jit_value = f(x, y, z).item<double>(), eager_value = fused_sum(x, y, z).item<double>();
    // Timed over runs of 8 consecutive calls, as the peers are timed: the float32 inputs'
    // 192 MB fit this machine's 300 MB of L3, whose replacement takes several passes to
    // hold them again after eager's temporaries went through it (the jitted sum right
    // after an eager one: 4.7-8.0, 4.6-6.2, 4.3-5.5 ms over its first three calls, 2.8 from
    // about the eighth on). Interleaved one call at a time, jx's jit read from memory
    // where the peers, timed in their own runs, read from cache.
    eager_vs_jit("reduction", w, [&] { (void)fused_sum(x, y, z).item<double>(); },
                 [&] { (void)f(x, y, z).item<double>(); },
                 Extra()
                     .num("rel_err_jit", std::abs(jit_value - ref) / std::abs(ref))
                     .num("rel_err_eager", std::abs(eager_value - ref) / std::abs(ref))
                     .num("rel_diff", std::abs(jit_value - eager_value) / std::abs(eager_value)),
                 -1, 1, {}, 8);
    limit_fused_sum(w, dtype, double(n));
  }
}

// ---- 6. softmax / logsumexp ----

void bench_softmax() {
  // Each implementation in runs of 1 + reps consecutive calls, as run.py times the peers
  // (a warm-up call, then reps): the jitted cross-entropy gradient over 160000 x 10 right
  // after eager's, whose temporaries went through the cache and the allocator's free
  // blocks, took 1100, 1046, 933 and 898 us over its first four calls.
  const int consecutive = 1 + reps;
  auto sm = jx::jit(softmax_rows, options("bench_softmax"));
  auto lse = jx::jit(logsumexp_rows, options("bench_logsumexp"));
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4096, 4096}, {65536, 128}, {128, 65536}}) {
    auto x = jx::random::normal(key, {rows, cols});
    std::string shape = std::to_string(rows) + "x" + std::to_string(cols) + "_float32";
    eager_vs_jit("softmax", "softmax_rows_" + shape, [&] { (void)softmax_rows(x); }, [&] { (void)sm(x); },
                 Extra().num("rel_diff", rel_diff(sm(x), softmax_rows(x))), -1, 1, {}, consecutive);
    limit_softmax("softmax_rows_" + shape, double(rows), double(cols));
    eager_vs_jit("softmax", "logsumexp_rows_" + shape, [&] { (void)logsumexp_rows(x); }, [&] { (void)lse(x); },
                 Extra().num("rel_diff", rel_diff(lse(x), logsumexp_rows(x))), -1, 1, {}, consecutive);
    limit_logsumexp("logsumexp_rows_" + shape, double(rows), double(cols));
  }
  auto xent = jx::jit(cross_entropy, options("bench_cross_entropy"));
  auto xent_grad = jx::jit(jx::grad(cross_entropy), options("bench_cross_entropy_grad"));
  auto eager_grad = jx::grad(cross_entropy);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{160000, 10}, {16000, 100}}) {
    auto ks = jx::random::split(key, 2);
    auto x = jx::random::normal(ks(0), {rows, cols});
    auto labels = jx::random::randint(ks(1), {rows}, 0, cols);
    std::string shape = std::to_string(rows) + "x" + std::to_string(cols) + "_float32";
    eager_vs_jit("softmax", "cross_entropy_" + shape, [&] { (void)cross_entropy(x, labels); },
                 [&] { (void)xent(x, labels); },
                 Extra().num("rel_diff", rel_diff(xent(x, labels), cross_entropy(x, labels))), -1, 1, {},
                 consecutive);
    limit_cross_entropy("cross_entropy_" + shape, double(rows), double(cols), false);
    eager_vs_jit("softmax", "cross_entropy_grad_" + shape, [&] { (void)eager_grad(x, labels); },
                 [&] { (void)xent_grad(x, labels); },
                 Extra().num("rel_diff", rel_diff(xent_grad(x, labels), eager_grad(x, labels))), -1, 1, {},
                 consecutive);
    limit_cross_entropy("cross_entropy_grad_" + shape, double(rows), double(cols), true);
  }
}

// ---- 7. matmul and the dense GELU layer, against the BLAS called directly ----

void bench_matmul() {
  auto mm = jx::jit([](const Array& a, const Array& b) { return jnp::matmul(a, b); }, options("bench_matmul"));
  auto layer = jx::jit(gelu_matmul, options("bench_gelu_matmul"));
  for (auto dtype : {jx::float32, jx::float64}) {
    for (int64_t n : matmul_sizes(quick)) {
      auto ks = jx::random::split(key, 3);
      auto a = jx::random::normal(ks(0), {n, n}, dtype), b = jx::random::normal(ks(1), {n, n}, dtype);
      auto bias = jx::random::normal(ks(2), {n}, dtype);
      int r = n >= 4096 ? 2 : (n <= 256 ? 3 * reps : reps);  // small GEMMs are noisy under load
      // Runs of 3 consecutive calls (the best kept), as the peers are timed, up to n = 1024:
      // one call each in turn timed every implementation in the wake of the one before
      // (oneDNN's OpenMP workers spin for about 1 ms after eager's float32 product: the
      // jitted gelu(A @ B + b) at n = 256 took 106 us right after it, 86-90 us in a run of
      // its own calls).
      const int consecutive = n >= 4096 ? 1 : 3;
      std::string w = std::to_string(n) + dtype_suffix(dtype);
      DirectGemm gemm(a, b);
      std::vector<std::pair<std::string, std::function<void()>>> direct = {{"blas_direct", [&] { gemm.openblas(); }}};
      if (gemm.has_onednn()) direct.push_back({"onednn_direct", [&] { gemm.onednn(); }});
      auto t = eager_vs_jit("matmul", "matmul_" + w, [&] { (void)jnp::matmul(a, b); }, [&] { (void)mm(a, b); },
                            Extra().num("rel_diff", rel_diff(mm(a, b), jnp::matmul(a, b))), r, 1, direct, consecutive);
      eager_vs_jit("matmul", "gelu_matmul_" + w, [&] { (void)gelu_matmul(a, b, bias); },
                   [&] { (void)layer(a, b, bias); },
                   Extra().num("rel_diff", rel_diff(layer(a, b, bias), gelu_matmul(a, b, bias))), r, 1, direct,
                   consecutive);
      limit_matmul(w, dtype, double(n), *std::min_element(t.begin() + 2, t.end()));  // the faster library
    }
  }
}

// ---- 8. many small kernels ----

void bench_small_kernels() {
  auto ks = jx::random::split(key);
  auto q0 = jx::random::normal(ks(0), {3, 1024}), p0 = jx::random::normal(ks(1), {3, 1024});
  auto step = jx::jit(leapfrog_step, options("bench_leapfrog_step"));
  auto step10 = jx::jit(leapfrog_10_steps, options("bench_leapfrog_10"));
  std::pair<Array, Array> se, s1, s10;
  auto eager = [&] {
    se = {q0, p0};
    for (int i = 0; i < 1000; ++i) se = leapfrog_step(se.first, se.second);
  };
  // One step per call, 1000 calls; and ten steps unrolled into one program, 100 calls.
  auto jit1 = [&] {
    s1 = {q0, p0};
    for (int i = 0; i < 1000; ++i) s1 = step(s1.first, s1.second);
  };
  auto jit10 = [&] {
    s10 = {q0, p0};
    for (int i = 0; i < 100; ++i) s10 = step10(s10.first, s10.second);
  };
  // The 1000 steps as one lax::fori_loop (static bounds: a scan) in one jit: the body is
  // compiled once and the loop runs inside the compiled program.
  auto fori = jx::jit(
      [](const Array& q, const Array& p) {
        return jx::lax::fori_loop(
            0, 1000, [](const Array&, const std::pair<Array, Array>& s) { return leapfrog_step(s.first, s.second); },
            std::pair<Array, Array>{q, p});
      },
      options("bench_leapfrog_fori"));
  std::pair<Array, Array> sf;
  auto jit_fori = [&] { sf = fori(q0, p0); };
  auto t = best_interleaved({eager, jit1, jit10, jit_fori}, reps);
  emit("small_kernels", "leapfrog_1000_steps", "jx_eager", t[0]);
  jit_row("small_kernels", "leapfrog_1000_steps", t[1], Extra().num("rel_diff", rel_diff(s1.first, se.first)));
  emit("small_kernels", "leapfrog_1000_unroll10", "jx_eager", t[0]);
  jit_row("small_kernels", "leapfrog_1000_unroll10", t[2], Extra().num("rel_diff", rel_diff(s10.first, se.first)));
  emit("small_kernels", "leapfrog_1000_fori_loop", "jx_eager", t[0]);
  jit_row("small_kernels", "leapfrog_1000_fori_loop", t[3], Extra().num("rel_diff", rel_diff(sf.first, se.first)));

  // Loop overhead: a while_loop whose body only counts, 10^5 iterations in one jit.
  auto count = jx::jit(
      [](const Array& n) {
        return jx::lax::while_loop([&](const Array& i) { return i < n; }, [](const Array& i) { return i + 1; },
                                   jnp::zeros({}, jx::int32));
      },
      options("bench_while_count"));
  const Array trips = jnp::full({}, 100000, jx::int32);
  auto tw = best_interleaved({[&] { (void)count(trips); }}, reps);
  emit("small_kernels", "while_trivial_100k", "jx_jit", tw[0],
       Extra().num("ns_per_iteration", tw[0] / 100000 * 1e9));

  // A small RNN cell, h' = tanh(h W + x U + b) (hidden 64, input 16), scanned over 10^4
  // steps; forward (the last state), and the gradient of sum(h_T^2) in W, U, b.
  {
    Array kr = jx::random::split(ks(1), 5);
    Array w = 0.1 * jx::random::normal(kr(0), {64, 64}), u = 0.1 * jx::random::normal(kr(1), {16, 64});
    Array b = 0.1 * jx::random::normal(kr(2), {64}), h0 = jnp::zeros({64});
    Array xs = jx::random::normal(kr(3), {10000, 16});
    auto rnn = [](const Array& w, const Array& u, const Array& b, const Array& h0, const Array& xs) {
      auto cell = [&](const Array& h, const Array& x) {
        Array next = jnp::tanh(jnp::matmul(h, w) + jnp::matmul(x, u) + b);
        return std::pair<Array, jx::None>(next, jx::none);
      };
      return jnp::sum(jnp::square(jx::lax::scan(cell, h0, xs).first));
    };
    auto fwd = jx::jit(rnn, options("bench_rnn_scan"));
    auto grad = jx::jit(jx::grad(rnn, jx::argnums<0, 1, 2>), options("bench_rnn_scan_grad"));
    Array eager_value = rnn(w, u, b, h0, xs), value = fwd(w, u, b, h0, xs);
    auto tr = best_interleaved({[&] { (void)fwd(w, u, b, h0, xs); }, [&] { (void)grad(w, u, b, h0, xs); }}, reps);
    jit_row("small_kernels", "rnn_scan_10k", tr[0], Extra().num("rel_diff", rel_diff(value, eager_value)));
    jit_row("small_kernels", "rnn_scan_10k_grad", tr[1], Extra().num("grad_over_forward", tr[1] / tr[0]));
  }

  MlpInputs in = mlp_inputs();
  auto vg = jx::jit(mlp_value_and_grad, options("bench_mlp_value_and_grad"));
  auto [value, grads] = vg(in.params, in.x, in.y);
  auto [eager_value, eager_grads] = mlp_value_and_grad(in.params, in.x, in.y);
  double diff = rel_diff(value, eager_value);
  for (size_t i = 0; i < grads.size(); ++i) diff = std::max(diff, rel_diff(grads[i], eager_grads[i]));
  eager_vs_jit("small_kernels", "mlp_value_and_grad_b64", [&] { (void)mlp_value_and_grad(in.params, in.x, in.y); },
               [&] { (void)vg(in.params, in.x, in.y); }, Extra().num("rel_diff", diff), reps, 20);
}

// ---- 9. vector math: speed, and accuracy in ULP against float64 ----

// The error of a float32 result in units of the last place of the float64 reference
// rounded to float32; NaN/inf must match exactly (else infinite error).
double ulp_error(float got, double ref) {
  if (std::isnan(ref)) return std::isnan(got) ? 0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  float ref32 = static_cast<float>(ref);
  if (std::isinf(ref32) || std::isinf(got)) return got == ref32 ? 0 : INFINITY;
  int e = ref == 0 ? -1000 : std::ilogb(ref);
  double ulp = e < -126 ? std::ldexp(1.0, -149) : std::ldexp(1.0, e - 23);
  return std::abs(static_cast<double>(got) - ref) / ulp;
}

double reference(const std::string& fn, double x) {
  if (fn == "exp") return std::exp(x);
  if (fn == "log") return std::log(x);
  if (fn == "sin") return std::sin(x);
  if (fn == "cos") return std::cos(x);
  if (fn == "tan") return std::tan(x);
  if (fn == "log1p") return std::log1p(x);
  if (fn == "expm1") return std::expm1(x);
  if (fn == "tanh") return std::tanh(x);
  return std::erf(x);
}

// Edge cases placed at the start of the inputs: zeros, infinities, NaN, subnormals, the
// largest floats, exp's overflow/underflow edges, and values near multiples of pi/2.
void add_edge_cases(std::vector<float>& v) {
  std::vector<float> edges = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 1e-40f, -1e-40f, FLT_MIN,
                              -FLT_MIN, FLT_MAX, -FLT_MAX, 88.72f, 88.73f, -87.3f, -103.9f, -104.0f, 1e-8f, 1e4f};
  for (int k = 1; k <= 200; ++k) edges.push_back(static_cast<float>(k * M_PI / 2));
  for (int k = 1; k <= 40; ++k) edges.push_back(static_cast<float>(k * 1000 * M_PI));
  for (size_t i = 0; i < edges.size() && i < v.size(); ++i) v[i] = edges[i];
}

void bench_vecmath() {
  for (const auto& c : vecmath_cases()) {
    std::vector<float> host = vecmath_inputs(c);
    Array x_timed(host);
    add_edge_cases(host);
    Array x_edges(host);
    auto f = jx::jit(c.eager, options(std::string("bench_vecmath_") + c.name));
    std::string w = std::string("vecmath_") + c.name + "_4M_float32";
    std::vector<float> got = f(x_edges).to_vector<float>(), eager = c.eager(x_edges).to_vector<float>();
    double ulp_jit = 0, ulp_eager = 0;
    for (size_t i = 0; i < host.size(); ++i) {
      double ref = reference(c.name, host[i]);
      ulp_jit = std::max(ulp_jit, ulp_error(got[i], ref));
      ulp_eager = std::max(ulp_eager, ulp_error(eager[i], ref));
    }
    eager_vs_jit("vecmath", w, [&] { (void)c.eager(x_timed); }, [&] { (void)f(x_timed); },
                 Extra().num("max_ulp_jit", ulp_jit).num("max_ulp_eager", ulp_eager));
    limit_vecmath(w, c);
  }
}

// ---- 10. sort: a runtime call under jit too (the same kernel, Highway's vqsort) ----

void bench_sort() {
  auto sort = jx::jit([](const Array& a) { return jnp::sort(a, -1); }, options("bench_sort"));
  auto argsort = jx::jit([](const Array& a) { return jnp::argsort(a); }, options("bench_argsort"));
  auto x = jx::random::normal(key, {1000000});
  auto rows = jnp::reshape(x, {1000, 1000});
  eager_vs_jit("sort", "sort_1e6_float32", [&] { (void)jnp::sort(x); }, [&] { (void)sort(x); });
  eager_vs_jit("sort", "argsort_1e6_float32", [&] { (void)jnp::argsort(x); }, [&] { (void)argsort(x); });
  eager_vs_jit("sort", "sort_rows_1000x1000_float32", [&] { (void)jnp::sort(rows, -1); }, [&] { (void)sort(rows); });
}

BenchArgs args;

// A section that fails (jit still being written) is reported and the others still run.
void section(const char* name, const std::function<void()>& body) {
  if (!args.runs(name)) return;
  try {
    body();
  } catch (const std::exception& e) {
    std::string what = e.what();
    for (auto& ch : what)
      if (ch == '"' || ch == '\\' || ch == '\n') ch = ' ';
    emit(name, std::string("error_") + name, "jx_jit", NAN, Extra().str("error", what.substr(0, 300)));
  }
}

}  // namespace

int main(int argc, char** argv) {
  args = parse_bench_args(argc, argv);
  quick = args.quick;
  bool child = false, with_warmup = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--first-call-child") == 0) return first_call_child();
    if (std::strcmp(argv[i], "--compile-child") == 0) child = true;
    if (std::strcmp(argv[i], "--with-warmup") == 0) with_warmup = true;
  }
  reps = quick ? 2 : 5;
  if (child) return compile_child(with_warmup);

  // A private on-disk cache for this run (children inherit it).
  std::string cache_template = (std::filesystem::temp_directory_path() / "jx_bench_cache_XXXXXX").string();
  std::vector<char> cache_dir(cache_template.begin(), cache_template.end());
  cache_dir.push_back('\0');
  if (!mkdtemp(cache_dir.data())) {
    std::perror("jit_bench: mkdtemp");
    return 1;
  }
  jx::config::set_cache_dir(cache_dir.data());
  jx::config::set_disk_cache(true);
  // The compile children read their configuration from the environment at startup.
  setenv("JX_CACHE_DIR", cache_dir.data(), 1);
  unsetenv("JX_DISABLE_DISK_CACHE");
  double bandwidth = measure_bandwidth(quick);
  std::printf("{\"threads\": %d, \"stream_GBps\": %.2f, \"read_GBps\": %.2f, \"jit_cache_dir\": \"%s\"}\n", jx::cpu::num_threads(),
              bandwidth / 1e9, g_read_bandwidth / 1e9, cache_dir.data());

  // This binary's own path, for the children (argv[0] may be relative to a PATH entry).
  std::error_code self_ec;
  std::string self = std::filesystem::read_symlink("/proc/self/exe", self_ec).string();
  if (self.empty()) self = argv[0];
  section("dispatch", [&] { bench_dispatch(self); });
  section("compile", [&] { bench_compile(self); });
  section("tutorial", bench_tutorial);
  section("selu", bench_selu);
  section("reduction", bench_reduction);
  section("softmax", bench_softmax);
  section("matmul", bench_matmul);
  section("small_kernels", bench_small_kernels);
  section("vecmath", bench_vecmath);
  section("sort", bench_sort);

  std::error_code ec;
  std::filesystem::remove_all(cache_dir.data(), ec);
  return 0;
}
