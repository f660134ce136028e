#include "backend/cpu/blas_threads.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace jx::cpu {
namespace {

// OpenBLAS's entry points, looked up by name so jx builds against any BLAS.
template <class F>
F* openblas_function(const char* name) {
  return reinterpret_cast<F*>(dlsym(RTLD_DEFAULT, name));
}

bool pthreads_openblas() {
  auto* parallel = openblas_function<int()>("openblas_get_parallel");
  return parallel && parallel() == 1;  // 0 sequential, 1 pthreads, 2 OpenMP
}

// OpenBLAS's blas_thread_shutdown_ when the constructor below changed the spin (so the
// workers must restart), else null.
int (*g_restart_workers)() = nullptr;

// Runs when libjx loads, after OpenBLAS's own constructor (a library's dependencies are
// initialized first) and before any thread of jx's exists.
[[gnu::constructor]] void shorten_blas_spin() {
  if (std::getenv("OPENBLAS_THREAD_TIMEOUT") || std::getenv("GOTO_THREAD_TIMEOUT") || !pthreads_openblas()) return;
  auto* read_env = openblas_function<void()>("openblas_read_env");
  auto* shutdown = openblas_function<int()>("blas_thread_shutdown_");
  if (!read_env || !shutdown) return;
  // Set for OpenBLAS's reading only: the process's environment is left as it was.
  const std::string exponent = std::to_string(kBlasSpinExponent);
  setenv("OPENBLAS_THREAD_TIMEOUT", exponent.c_str(), 1);
  read_env();
  unsetenv("OPENBLAS_THREAD_TIMEOUT");
  g_restart_workers = shutdown;
}

}  // namespace

void settle_blas_threads() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The workers running now took the spin when they started: they stop (and are
    // joined) here, and the next BLAS call starts new ones that take the new spin.
    if (g_restart_workers) g_restart_workers();
  });
}

int blas_spin_exponent() {
  if (!pthreads_openblas()) return 0;
  auto* timeout = openblas_function<int()>("openblas_thread_timeout");
  const int set = timeout ? timeout() : 0;
  return set > 0 ? set : 28;  // 0: not set, OpenBLAS's default 2^28
}

}  // namespace jx::cpu
