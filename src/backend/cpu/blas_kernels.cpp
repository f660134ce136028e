#include "backend/cpu/blas_kernels.h"

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace jx::cpu {
namespace {

// OpenBLAS's kernel sets that use AVX2 or wider (its corename strings); any other is a
// pre-AVX2 set, which OpenBLAS also falls back to for a CPU it does not know.
constexpr std::array kAvx2KernelSets = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", "Excavator"};

bool uses_avx2(const std::string& kernels) {
  for (const char* k : kAvx2KernelSets)
    if (strcasecmp(kernels.c_str(), k) == 0) return true;
  return false;
}

template <class F>
F* openblas_function(const char* name) {
  return reinterpret_cast<F*>(dlsym(RTLD_DEFAULT, name));
}

// The names, copied from OpenBLAS's; plain arrays, constant-initialized, since the
// constructor below may run before this file's dynamic initializers.
using KernelsName = std::array<char, 32>;
KernelsName g_chosen_by_openblas{}, g_running{};

// OpenBLAS's name of the set it runs, or "" when the BLAS is not OpenBLAS.
KernelsName running_kernels() {
  KernelsName out{};
  auto* corename = openblas_function<char*()>("openblas_get_corename");
  if (const char* name = corename ? corename() : nullptr) std::strncpy(out.data(), name, out.size() - 1);
  return out;
}

// Runs when libjx loads, after OpenBLAS's own constructor (a library's dependencies are
// initialized first). OpenBLAS keeps its kernel set behind one pointer, which
// gotoblas_dynamic_quit clears and gotoblas_dynamic_init sets again from
// OPENBLAS_CORETYPE (else from the CPU's model), initializing the set's blocking
// parameters; its workers read the pointer only inside a call, and none runs in a
// process that is still loading its libraries. (A host program that calls the BLAS on one
// thread while another opens libjx with dlopen would race with the swap.)
[[gnu::constructor]] void choose_blas_kernels() {
  g_chosen_by_openblas = g_running = running_kernels();
  if (!g_running[0] || std::getenv("OPENBLAS_CORETYPE")) return;
  const std::string instead = blas_kernels_instead_of(g_running.data(), cpu_features());
  auto* quit = openblas_function<void()>("gotoblas_dynamic_quit");
  auto* init = openblas_function<void()>("gotoblas_dynamic_init");
  if (instead.empty() || !quit || !init) return;
  // Set for OpenBLAS's reading only: the process's environment is left as it was.
  setenv("OPENBLAS_CORETYPE", instead.c_str(), 1);
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");
  g_running = running_kernels();
  if (!uses_avx2(g_running.data())) {  // a build without that set: OpenBLAS's own choice again
    quit();
    init();
    g_running = running_kernels();
  }
}

}  // namespace

CpuFeatures cpu_features() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
  f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
  return f;
}

std::string blas_kernels_instead_of(const std::string& chosen, const CpuFeatures& cpu) {
  if (uses_avx2(chosen)) return "";
  if (cpu.avx512 && cpu.avx512_bf16) return "Cooperlake";
  if (cpu.avx512) return "SkylakeX";
  if (cpu.avx2_fma) return "Haswell";
  return "";
}

BlasKernels blas_kernels() {
  return {g_chosen_by_openblas.data(), g_running.data()};
}

}  // namespace jx::cpu
