// First-touch cost of fresh anonymous memory: maps 1 GiB (2 MiB-aligned), asks for transparent huge
// pages (argument 1) or 4 KiB pages (0), writes one byte per 4 KiB page and prints the milliseconds.
// On a VM whose balloon reports free memory to its host, run it right after another process's run and
// again at once to see the host's share (BENCHMARKS.md, eighth session).
//
//   cc -O2 bench/first-touch.c -o first-touch && ./first-touch 1 && ./first-touch 0
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

int main(int argc, char** argv) {
  const size_t n = 1ul << 30, huge = 2ul << 20;
  const int want_huge = argc > 1 ? atoi(argv[1]) : 1;
  char* m = mmap(NULL, n + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return perror("mmap"), 1;
  char* p = (char*)(((unsigned long)m + huge - 1) & ~(huge - 1));
  madvise(p, n, want_huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%s pages: %.0f ms for 1 GiB\n", want_huge ? "huge" : "4 KiB",
         (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
  return 0;
}
