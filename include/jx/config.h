// jx::Config: every process-wide setting in one place. The JX_* environment variables
// are read once, when jx first needs a setting; after that only the setters below change
// them. Pipelines (jit's passes, codegen, dumps, the disk cache) copy what they need into
// their options when a program compiles, so a setter affects the next compile, and
// nothing reads the environment (or a global) while it emits code.
//
//   variable                 field             default
//   JX_NUM_THREADS           num_threads       0: the hardware's thread count
//   JX_NUM_CPU_DEVICES       num_cpu_devices   1
//   JX_CACHE_DIR             cache_dir         $XDG_CACHE_HOME/jx, else $HOME/.cache/jx
//   JX_DISABLE_DISK_CACHE    disk_cache        on (the variable set to 1 turns it off)
//   JX_LOG_COMPILES          log_compiles      off
//   JX_DUMP                  dump_dir          "" (no dumps)
//   JX_VERIFY_PASSES         verify_passes     on in debug builds, off in release
//   JX_VECTOR_ISA            vector_isa        "auto" (the best the CPU has)
//   JX_BLOCK_CACHE_MB        block_cache_mb    1024
//   JX_JIT_EVERY_OP          jit_every_op      off (a test hook)
//   JX_DEBUG_NANS            debug_nans        off
//   JX_COLLECTIVE_TIMEOUT_S  collective_timeout_s  300
//
// Booleans accept 1/0, true/false, on/off, yes/no. A malformed value (JX_NUM_THREADS=-2,
// JX_VECTOR_ISA=sse9) raises jx::Error naming the variable and the value from the first
// jx call that reads the configuration, and again from every later one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace jx {

struct Config {
  // Threads of the CPU thread pool (0: the hardware's). Fixed once the pool has started.
  int num_threads = 0;
  // CPU devices this process exposes (JAX's jax_num_cpu_devices). Fixed once devices
  // have been listed or an array allocated.
  int num_cpu_devices = 1;
  // Directory of the on-disk cache of compiled kernels ("" when no default exists).
  std::string cache_dir;
  // Whether jit reuses and stores object code in cache_dir.
  bool disk_cache = true;
  // One line on stderr per compiled program: its name, argument types, time and kernels.
  bool log_compiles = false;
  // When non-empty, each compiled program writes its passes, fusion decisions and
  // kernels' LLVM IR and assembly under <dump_dir>/<name>.<n>/.
  std::string dump_dir;
  // Type-check the program after every pass that changed it, naming the pass that broke it.
  bool verify_passes = false;
  // Vector instruction set of the math functions, eager and jit. The setter and
  // JX_VECTOR_ISA take "auto", "scalar", "avx2" or "avx512"; a request beyond the CPU
  // runs the best it has. get() reports the one in use ("scalar", "avx2", "avx512").
  std::string vector_isa = "auto";
  // Megabytes of freed large blocks (4 MiB and more) kept for reuse; 0 turns it off.
  int64_t block_cache_mb = 1024;
  // Every eager operation runs as a compiled one-equation program (the compiler's
  // differential test against the eager suites).
  bool jit_every_op = false;
  // An eager operation whose float result holds a NaN its operands did not raises
  // naming it; a jitted call returning a NaN re-runs its program eagerly, equation by
  // equation, and raises naming the first one that produced it (jx/debug.h).
  bool debug_nans = false;
  // Seconds a collective (psum, all_gather, ...) waits for every member of its axis before
  // raising jx::Error naming the collective, the axis and the members that did not arrive.
  double collective_timeout_s = 300;
};

namespace config {

// A snapshot of the current settings (reads the environment on first use).
Config get();

// Setters: each validates its value and raises jx::Error("[config] set_<name>: ...")
// naming the value it refused. Thread-safe; a setting that is fixed once in use
// (num_threads, num_cpu_devices) raises when changed after that point.
void set_num_threads(int n);
void set_num_cpu_devices(int n);
void set_cache_dir(std::string dir);  // non-empty
void set_disk_cache(bool on);
void set_log_compiles(bool on);
void set_dump_dir(std::string dir);  // "" turns dumps off
void set_verify_passes(bool on);
void set_vector_isa(std::string_view isa);  // auto | scalar | avx2 | avx512
void set_block_cache_mb(int64_t mb);        // >= 0
void set_jit_every_op(bool on);
void set_debug_nans(bool on);
void set_collective_timeout_s(double seconds);  // > 0

}  // namespace config
}  // namespace jx
