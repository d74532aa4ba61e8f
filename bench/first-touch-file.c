// First-touch cost of a file mapping: maps FILE read-only and shared (as GgufFile does), reads one byte
// per 4 KiB page, and prints the milliseconds and how much of it the kernel mapped 2 MiB at a time
// (FilePmdMapped). The page cache's folios decide it: a file written in 4 MiB pieces (core/
// large_writes.h) or read from disk maps in 2 MiB pieces; one written in small pieces (cp, stdio's
// default buffer) maps page by page. Run it twice: the first mapping after a write can be slower.
//
//   cc -O2 bench/first-touch-file.c -o first-touch-file && ./first-touch-file model.gguf
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  if (argc < 2) return fprintf(stderr, "usage: first-touch-file FILE\n"), 2;
  const int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return perror(argv[1]), 1;
  const size_t n = (size_t)st.st_size;
  const char* p = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return perror("mmap"), 1;
  const double t0 = now_ms();
  volatile long sum = 0;
  for (size_t i = 0; i < n; i += 4096) sum += p[i];
  const double t1 = now_ms();
  long pmd_kb = -1;
  char line[256];
  FILE* f = fopen("/proc/self/smaps_rollup", "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "FilePmdMapped:", 14) == 0) sscanf(line + 14, "%ld", &pmd_kb);
  if (f) fclose(f);
  printf("%s: %.1f ms to touch %.0f MB, %.0f MB of it mapped 2 MiB at a time\n", argv[1], t1 - t0, n / 1e6,
         pmd_kb / 1024.0 * 1.048576);
  return 0;
}
