#include "backend/cpu/onednn.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

#include "backend/cpu/thread_pool.h"

namespace jx::cpu {
namespace {

// oneDNN's and OpenMP's functions are declared here (onednn.h), so jx builds without
// their headers.
using OmpSetNumThreads = void(int);

struct OneDnn {
  DnnlSgemm* sgemm = nullptr;
  OmpSetNumThreads* set_threads = nullptr;
};

const OneDnn& onednn() {
  static const OneDnn lib = [] {
    OneDnn l;
    // OpenMP's spin, for libgomp to read when it loads with libdnnl (see onednn.h); the
    // environment is left as it was.
    const bool set_spin = !std::getenv("GOMP_SPINCOUNT") && !std::getenv("OMP_WAIT_POLICY") &&
                          !dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (set_spin) setenv("GOMP_SPINCOUNT", "30000", 1);
    void* dnnl = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (set_spin) unsetenv("GOMP_SPINCOUNT");
    if (!dnnl) return l;
    l.sgemm = reinterpret_cast<DnnlSgemm*>(dlsym(dnnl, "dnnl_sgemm"));
    if (void* gomp = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD))
      l.set_threads = reinterpret_cast<OmpSetNumThreads*>(dlsym(gomp, "omp_set_num_threads"));
    return l;
  }();
  return lib;
}

char transpose_flag(Op op) { return op == Op::None ? 'N' : 'T'; }

}  // namespace

DnnlSgemm* onednn_sgemm_function() { return onednn().sgemm; }

bool onednn_takes(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kMaxDim = 512, kMinWork = int64_t{1} << 15, kMaxWork = int64_t{1} << 26;
  if (std::max({m, n, k}) > kMaxDim || std::min({m, n, k}) < 1) return false;
  const int64_t work = m * n * k;  // at most 2^27: each factor is at most kMaxDim
  if (work < kMinWork || work > kMaxWork) return false;
  if (in_parallel_chunk()) return false;
  return onednn_sgemm_function() != nullptr;
}

bool onednn_sgemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                  int64_t ldb, float* c, int64_t ldc) {
  if (op_a == Op::ConjTranspose || op_b == Op::ConjTranspose || !onednn_takes(m, n, k)) return false;
  const OneDnn& lib = onednn();
  // OpenMP's team size is per calling thread: jx's thread count, set once per thread.
  thread_local int team = 0;
  if (lib.set_threads && team != num_threads()) {
    team = num_threads();
    lib.set_threads(team);
  }
  return lib.sgemm(transpose_flag(op_a), transpose_flag(op_b), m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc) == 0;
}

}  // namespace jx::cpu
