// Which 512-bit instructions share the execution pipes of vpdpbusd: a loop of 12 independent vpdpbusd
// alone, then with 4 independent instructions of one other kind each round, in inline assembly so that
// the compiler adds nothing. Where the rate of vpdpbusd falls by a quarter (12 of 16 issue slots), the
// other instruction takes the same pipes; where it stays level, it runs beside them. This is what bounds
// the packed integer kernels (packed_avx512.cpp): per row group, token and 32-element block, 8 vpdpbusd
// against one multiply and one multiply-add of the scales.
//
//   cc -O2 -mavx512f bench/isa-mix.c -o isa-mix && ./isa-mix
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const long kRounds = 20000000;

#define DP(r) "vpdpbusd %%zmm30, %%zmm31, %%zmm" #r "\n"
#define DP12 DP(0) DP(1) DP(2) DP(3) DP(4) DP(5) DP(6) DP(7) DP(8) DP(9) DP(10) DP(11)
#define FOUR(op) op "%%zmm12\n" op "%%zmm13\n" op "%%zmm14\n" op "%%zmm15\n"

// Times kRounds rounds of 12 vpdpbusd plus EXTRA and prints the vpdpbusd rate.
#define MEASURE(NAME, EXTRA)                                                                              \
  do {                                                                                                    \
    long n = kRounds;                                                                                     \
    const double t = now();                                                                               \
    __asm__ volatile("vpxord %%zmm30, %%zmm30, %%zmm30\n vpxord %%zmm31, %%zmm31, %%zmm31\n"             \
                     "vpxord %%zmm20, %%zmm20, %%zmm20\n"                                                 \
                     "1:\n" DP12 EXTRA "dec %0\n jnz 1b\n"                                                \
                     : "+r"(n)                                                                            \
                     :                                                                                    \
                     : "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", \
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm20", "xmm30", "xmm31");  \
    printf("%-26s %5.2f G vpdpbusd/s\n", NAME, kRounds * 12.0 / (now() - t) / 1e9);                      \
  } while (0)

int main(void) {
  for (int pass = 0; pass < 2; ++pass) {
    MEASURE("vpdpbusd alone", "");
    MEASURE("+ 4 vfmadd231ps", FOUR("vfmadd231ps %%zmm20, %%zmm20, "));
    MEASURE("+ 4 vmulps", FOUR("vmulps %%zmm20, %%zmm20, "));
    MEASURE("+ 4 vaddps", FOUR("vaddps %%zmm20, %%zmm20, "));
    MEASURE("+ 4 vcvtdq2ps", FOUR("vcvtdq2ps %%zmm20, "));
    MEASURE("+ 4 vcvtph2ps", FOUR("vcvtph2ps %%ymm20, "));
    MEASURE("+ 4 vpandd", FOUR("vpandd %%zmm20, %%zmm20, "));
    MEASURE("+ 4 vpsrlw", FOUR("vpsrlw $4, %%zmm20, "));
    MEASURE("+ 4 vpbroadcastd (memory)", FOUR("vpbroadcastd (%%rsp), "));
  }
  return 0;
}
