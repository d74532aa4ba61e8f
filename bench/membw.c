// Memory read bandwidth with N threads (the floor for decode speed: weights are read once per token).
// Built and run by bench/vs-llamacpp.sh:  cc -O3 -march=native -fopenmp membw.c -o membw && ./membw 2
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  size_t bytes = (size_t)1 << 30;  // 1 GiB, far larger than any cache
  size_t n = bytes / sizeof(long long);
  long long* a = aligned_alloc(64, bytes);
  memset(a, 1, bytes);
  omp_set_num_threads(threads);
  double best = 0;
  long long sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now();
    long long s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
    for (size_t i = 0; i < n; i += 8) s += a[i] + a[i + 1] + a[i + 2] + a[i + 3] + a[i + 4] + a[i + 5] + a[i + 6] + a[i + 7];
    double gbs = bytes / (now() - t0) / 1e9;
    sink += s;
    if (gbs > best) best = gbs;
  }
  printf("%.2f\n", best);
  return sink == 42;
}
