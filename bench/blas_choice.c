/* Times cblas_sgemm and cblas_dgemm (C = A B, square n x n) for the BLAS it is linked
 * against; bench/blas_choice.sh builds it once per library and prints them side by side.
 * Output: one line per size, "n sgemm_gflops dgemm_gflops" (best of several runs). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best time over `runs` calls after one warm-up call. */
static double best_sgemm(int n, int runs, const float* a, const float* b, float* c) {
  double best = 1e30;
  for (int r = 0; r <= runs; ++r) {
    double t0 = now_s();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    double t = now_s() - t0;
    if (r > 0 && t < best) best = t;
  }
  return best;
}

static double best_dgemm(int n, int runs, const double* a, const double* b, double* c) {
  double best = 1e30;
  for (int r = 0; r <= runs; ++r) {
    double t0 = now_s();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
    double t = now_s() - t0;
    if (r > 0 && t < best) best = t;
  }
  return best;
}

int main(void) {
  const int sizes[] = {256, 1024, 2048};
  for (int s = 0; s < 3; ++s) {
    int n = sizes[s];
    size_t nn = (size_t)n * (size_t)n;
    float* fa = malloc(nn * sizeof(float));
    float* fb = malloc(nn * sizeof(float));
    float* fc = malloc(nn * sizeof(float));
    double* da = malloc(nn * sizeof(double));
    double* db = malloc(nn * sizeof(double));
    double* dc = malloc(nn * sizeof(double));
    if (!fa || !fb || !fc || !da || !db || !dc) return 1;
    for (size_t i = 0; i < nn; ++i) {
      fa[i] = (float)((i * 7 % 13) - 6) / 8.0f;
      fb[i] = (float)((i * 5 % 11) - 5) / 8.0f;
      da[i] = fa[i];
      db[i] = fb[i];
    }
    int runs = n <= 256 ? 20 : (n <= 1024 ? 5 : 3);
    double flops = 2.0 * (double)n * (double)n * (double)n;
    double ts = best_sgemm(n, runs, fa, fb, fc);
    double td = best_dgemm(n, runs, da, db, dc);
    printf("%d %.1f %.1f\n", n, flops / ts * 1e-9, flops / td * 1e-9);
    free(fa); free(fb); free(fc); free(da); free(db); free(dc);
  }
  return 0;
}
