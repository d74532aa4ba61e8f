// Which 512-bit instructions share the execution pipes of vpdpbusd: a loop of 12 independent vpdpbusd
// alone, then with 4 independent instructions of one other kind each round, in inline assembly so that
// the compiler adds nothing. Where the rate of vpdpbusd falls by a quarter (12 of 16 issue slots), the
// other instruction takes the same pipes; where it stays level, it runs beside them. This is what bounds
// the packed integer kernels (packed_avx512.cpp): per row group, token and 32-element block, 8 vpdpbusd
// against one multiply and one multiply-add of the scales. With `ymm`, the same for AVX-VNNI's
// VEX-encoded vpdpbusd on 256-bit registers (the AVX2 + AVX-VNNI kernels, packed_avx2.h: 8 rows per
// vector, the same 8 vpdpbusd, multiply and multiply-add per row half, token and block).
//
//   cc -O2 -mavx512f bench/isa-mix.c -o isa-mix && ./isa-mix [zmm|ymm]
#include <stdio.h>
#include <string.h>
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
#define ZERO "vpxord %%zmm30, %%zmm30, %%zmm30\n vpxord %%zmm31, %%zmm31, %%zmm31\n vpxord %%zmm20, %%zmm20, %%zmm20\n"
// AVX-VNNI: VEX reaches ymm0-15 only, so the 8 accumulators are ymm0-7, the sources ymm13-15, and the
// extra instructions write ymm8-10 and ymm12.
#define VDP(r) "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%ymm" #r "\n"
#define VDP8 VDP(0) VDP(1) VDP(2) VDP(3) VDP(4) VDP(5) VDP(6) VDP(7)
#define VFOUR(op) op "%%ymm8\n" op "%%ymm9\n" op "%%ymm10\n" op "%%ymm12\n"
#define VZERO "vpxor %%ymm13, %%ymm13, %%ymm13\n vpxor %%ymm14, %%ymm14, %%ymm14\n vpxor %%ymm15, %%ymm15, %%ymm15\n"

// Times kRounds rounds of the COUNT vpdpbusd in DPS plus EXTRA and prints the vpdpbusd rate.
#define MEASURE_WITH(NAME, INIT, DPS, COUNT, EXTRA)                                                       \
  do {                                                                                                    \
    long n = kRounds;                                                                                     \
    const double t = now();                                                                               \
    __asm__ volatile(INIT                                                                                 \
                     "1:\n" DPS EXTRA "dec %0\n jnz 1b\n"                                                 \
                     : "+r"(n)                                                                            \
                     :                                                                                    \
                     : "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", \
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm20", "xmm30", "xmm31");  \
    printf("%-26s %5.2f G vpdpbusd/s\n", NAME, kRounds * (double)(COUNT) / (now() - t) / 1e9);            \
  } while (0)
#define MEASURE(NAME, EXTRA) MEASURE_WITH(NAME, ZERO, DP12, 12, EXTRA)
// 8 vpdpbusd (ymm) a round plus EXTRA: 2 others add a quarter of the issue slots where they share the pipes.
#define VMEASURE(NAME, EXTRA) MEASURE_WITH(NAME, VZERO, VDP8, 8, EXTRA)

static void ymm(void) {
  for (int pass = 0; pass < 2; ++pass) {
    VMEASURE("ymm vpdpbusd alone", "");
    VMEASURE("+ 2 vfmadd231ps", "vfmadd231ps %%ymm13, %%ymm13, %%ymm8\n vfmadd231ps %%ymm13, %%ymm13, %%ymm9\n");
    VMEASURE("+ 2 vmulps", "vmulps %%ymm13, %%ymm13, %%ymm8\n vmulps %%ymm13, %%ymm13, %%ymm9\n");
    VMEASURE("+ 2 vcvtdq2ps", "vcvtdq2ps %%ymm13, %%ymm8\n vcvtdq2ps %%ymm13, %%ymm9\n");
    VMEASURE("+ 4 vpand", VFOUR("vpand %%ymm13, %%ymm13, "));
    VMEASURE("+ 4 vpsrlw", VFOUR("vpsrlw $4, %%ymm13, "));
  }
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "ymm") == 0) {
    ymm();
    return 0;
  }
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
