// The one reader of jx's environment variables (config.h). The settings live behind one
// mutex; the environment is parsed on first use, and a parse that fails leaves them
// unloaded, so every later read raises the same error instead of running on defaults.
#include "jx/config.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "core/config_internal.h"
#include "core/eager_hook.h"
#include "backend/cpu/vector_math.h"
#include "jx/error.h"

namespace jx {
namespace {

struct State {
  std::mutex mu;
  std::optional<Config> config;
  bool threads_fixed = false;
  bool devices_fixed = false;
  detail::EagerHook jit_every_op_hook = nullptr;
  detail::NanCheck nan_check = nullptr;
};
// What Primitive::eval calls: the registered check while debug_nans is on.
std::atomic<detail::NanCheck> g_active_nan_check{nullptr};
// Never destroyed: arrays (and so the allocator reading the block cache size) may die
// after main returns.
State& state() {
  static auto* s = new State;
  return *s;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool parse_bool(const char* name, const char* text) {
  const std::string v = lower(text);
  if (v == "1" || v == "true" || v == "on" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "off" || v == "no") return false;
  detail::fail("config", name, "='", text, "' is not a boolean (1/0, true/false, on/off, yes/no)");
}

int64_t parse_count(const char* name, const char* text, int64_t min, int64_t max) {
  int64_t v = 0;
  const std::string_view s(text);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < min || v > max)
    detail::fail("config", name, "='", text, "' is not an integer in [", min, ", ", max, "]");
  return v;
}

// A positive number of seconds, at most a year (JX_COLLECTIVE_TIMEOUT_S=0.5).
double parse_seconds(const char* name, const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v > 0) || v > 3.2e7)
    detail::fail("config", name, "='", text, "' is not a number of seconds in (0, 3.2e7]");
  return v;
}

constexpr int kMaxThreads = 4096;
constexpr int kMaxCpuDevices = 4096;
constexpr int64_t kMaxBlockCacheMb = int64_t{1} << 40;

std::optional<cpu::VectorIsa> parse_isa(std::string_view name) {
  if (name == "auto") return cpu::best_vector_isa();
  if (name == "scalar") return cpu::VectorIsa::Scalar;
  if (name == "avx2") return cpu::VectorIsa::Avx2;
  if (name == "avx512") return cpu::VectorIsa::Avx512;
  return std::nullopt;
}

Config from_environment() {
  Config c;
#ifndef NDEBUG
  c.verify_passes = true;
#endif
  if (const char* v = env("JX_NUM_THREADS")) c.num_threads = static_cast<int>(parse_count("JX_NUM_THREADS", v, 0, kMaxThreads));
  if (const char* v = env("JX_NUM_CPU_DEVICES"))
    c.num_cpu_devices = static_cast<int>(parse_count("JX_NUM_CPU_DEVICES", v, 1, kMaxCpuDevices));
  if (const char* v = env("JX_CACHE_DIR")) c.cache_dir = v;
  else if (const char* xdg = env("XDG_CACHE_HOME")) c.cache_dir = std::string(xdg) + "/jx";
  else if (const char* home = env("HOME")) c.cache_dir = std::string(home) + "/.cache/jx";
  if (const char* v = env("JX_DISABLE_DISK_CACHE")) c.disk_cache = !parse_bool("JX_DISABLE_DISK_CACHE", v);
  if (const char* v = env("JX_LOG_COMPILES")) c.log_compiles = parse_bool("JX_LOG_COMPILES", v);
  if (const char* v = env("JX_DUMP")) c.dump_dir = v;
  if (const char* v = env("JX_VERIFY_PASSES")) c.verify_passes = parse_bool("JX_VERIFY_PASSES", v);
  if (const char* v = env("JX_VECTOR_ISA")) {
    c.vector_isa = lower(v);
    if (!parse_isa(c.vector_isa))
      detail::fail("config", "JX_VECTOR_ISA='", v, "' is not one of auto, scalar, avx2, avx512");
  }
  if (const char* v = env("JX_BLOCK_CACHE_MB")) c.block_cache_mb = parse_count("JX_BLOCK_CACHE_MB", v, 0, kMaxBlockCacheMb);
  if (const char* v = env("JX_JIT_EVERY_OP")) c.jit_every_op = parse_bool("JX_JIT_EVERY_OP", v);
  if (const char* v = env("JX_DEBUG_NANS")) c.debug_nans = parse_bool("JX_DEBUG_NANS", v);
  if (const char* v = env("JX_COLLECTIVE_TIMEOUT_S")) c.collective_timeout_s = parse_seconds("JX_COLLECTIVE_TIMEOUT_S", v);
  return c;
}

// The loaded settings (caller holds s.mu). Installs the every-op hook the environment
// asks for, the one side effect of loading.
Config& loaded(State& s) {
  if (!s.config) {
    s.config = from_environment();
    detail::set_eager_hook(s.config->jit_every_op ? s.jit_every_op_hook : nullptr);
    g_active_nan_check.store(s.config->debug_nans ? s.nan_check : nullptr);
  }
  return *s.config;
}

int hardware_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

// Until the configuration is loaded, eager operations pass through here first, so the
// environment's JX_JIT_EVERY_OP is honoured from the very first operation.
std::vector<Array> load_then_dispatch(const Primitive& p, std::span<const Array> in, const Params& params) {
  bool every_op;
  detail::EagerHook hook;
  {
    State& s = state();
    std::lock_guard lock(s.mu);
    every_op = loaded(s).jit_every_op;
    hook = s.jit_every_op_hook;
  }
  return every_op && hook ? hook(p, in, params) : p.eval(in, params);
}

template <class F>
void update(F&& f) {
  State& s = state();
  std::lock_guard lock(s.mu);
  f(s, loaded(s));
}

}  // namespace

namespace detail {

Config stored_config() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return loaded(s);
}

int fix_num_threads() {
  State& s = state();
  std::lock_guard lock(s.mu);
  Config& c = loaded(s);
  if (c.num_threads == 0) c.num_threads = hardware_threads();
  s.threads_fixed = true;
  return c.num_threads;
}

int fix_num_cpu_devices() {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.devices_fixed = true;
  return loaded(s).num_cpu_devices;
}

void set_jit_every_op_hook(EagerHook hook) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.jit_every_op_hook = hook;
  if (!s.config) set_eager_hook(&load_then_dispatch);
  else set_eager_hook(s.config->jit_every_op ? hook : nullptr);
}

void register_nan_check(NanCheck check) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.nan_check = check;
  if (s.config) g_active_nan_check.store(s.config->debug_nans ? check : nullptr);
}

NanCheck active_nan_check() { return g_active_nan_check.load(std::memory_order_acquire); }

}  // namespace detail

namespace config {

Config get() {
  Config c = detail::stored_config();
  // The ISA in use, which cpu::set_vector_isa (tests, benchmarks) may also have changed.
  c.vector_isa = cpu::vector_isa_name(cpu::vector_isa());
  return c;
}

void set_num_threads(int n) {
  update([n](State& s, Config& c) {
    if (n < 0 || n > kMaxThreads)
      detail::fail("config", "set_num_threads(", n, "): the thread count must be in [0, ", kMaxThreads,
                   "] (0: the hardware's)");
    const int resolved = n == 0 ? hardware_threads() : n;
    if (s.threads_fixed && resolved != c.num_threads)
      detail::fail("config", "set_num_threads(", n, "): the thread pool already runs ", c.num_threads,
                   " threads; set the count before the first parallel kernel (or with JX_NUM_THREADS)");
    c.num_threads = s.threads_fixed ? resolved : n;
  });
}

void set_num_cpu_devices(int n) {
  update([n](State& s, Config& c) {
    if (n < 1 || n > kMaxCpuDevices)
      detail::fail("config", "set_num_cpu_devices(", n, "): the device count must be in [1, ", kMaxCpuDevices, "]");
    if (s.devices_fixed && n != c.num_cpu_devices)
      detail::fail("config", "set_num_cpu_devices(", n, "): the CPU devices already exist (", c.num_cpu_devices,
                   " of them); set the count before the first use of devices or arrays (or with "
                   "JX_NUM_CPU_DEVICES)");
    c.num_cpu_devices = n;
  });
}

void set_cache_dir(std::string dir) {
  if (dir.empty()) detail::fail("config", "set_cache_dir(\"\"): the directory must not be empty (set_disk_cache(false) turns the cache off)");
  update([&](State&, Config& c) { c.cache_dir = std::move(dir); });
}

void set_disk_cache(bool on) {
  update([on](State&, Config& c) { c.disk_cache = on; });
}

void set_log_compiles(bool on) {
  update([on](State&, Config& c) { c.log_compiles = on; });
}

void set_dump_dir(std::string dir) {
  update([&](State&, Config& c) { c.dump_dir = std::move(dir); });
}

void set_verify_passes(bool on) {
  update([on](State&, Config& c) { c.verify_passes = on; });
}

void set_vector_isa(std::string_view isa) {
  const std::string name = lower(isa);
  const std::optional<cpu::VectorIsa> parsed = parse_isa(name);
  if (!parsed) detail::fail("config", "set_vector_isa('", isa, "'): not one of auto, scalar, avx2, avx512");
  update([&](State&, Config& c) { c.vector_isa = name; });
  cpu::set_vector_isa(*parsed);
}

void set_block_cache_mb(int64_t mb) {
  if (mb < 0 || mb > kMaxBlockCacheMb)
    detail::fail("config", "set_block_cache_mb(", mb, "): the size must be in [0, ", kMaxBlockCacheMb, "] MB");
  update([mb](State&, Config& c) { c.block_cache_mb = mb; });
  detail::set_block_cache_limit(mb << 20);
}

void set_jit_every_op(bool on) {
  update([on](State& s, Config& c) {
    if (on && !s.jit_every_op_hook) detail::fail("config", "set_jit_every_op(true): jit is not linked into this program");
    c.jit_every_op = on;
    detail::set_eager_hook(on ? s.jit_every_op_hook : nullptr);
  });
}

void set_debug_nans(bool on) {
  update([on](State& s, Config& c) {
    c.debug_nans = on;
    g_active_nan_check.store(on ? s.nan_check : nullptr);
  });
}

void set_collective_timeout_s(double seconds) {
  if (!(seconds > 0) || seconds > 3.2e7)
    detail::fail("config", "set_collective_timeout_s(", seconds, "): the timeout must be in (0, 3.2e7] seconds");
  update([seconds](State&, Config& c) { c.collective_timeout_s = seconds; });
}

}  // namespace config
}  // namespace jx
