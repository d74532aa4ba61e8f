// Per-core throughput of the 512-bit multiply-add instructions a matmul kernel can be built on, with
// ten independent register-resident accumulators (no loads, no stores), so the number is the issue rate
// alone: the ceiling any kernel on that instruction can reach. Prints G instructions/s and multiply-adds/s
// for vfmadd231ps (f32, 16 per instruction), vdpbf16ps (bf16 pairs, 32), vpdpwssd (int16 pairs, 32) and
// vpdpbusd (u8 x s8 quads, 64). Needs AVX-512 F, BF16 and VNNI.
//
//   cc -O2 -march=native bench/isa-peak.c -o isa-peak && ./isa-peak
//
// Keep the accumulators in named variables: an array of them (even fully unrolled) was kept in memory by
// GCC 12 and measured the store-to-load latency instead (a third of the FMA rate).
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define TEN(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)
#define KEEP(i) __asm__ volatile("" : "+v"(acc##i));  // the compiler may neither fold nor spill a chain

static const long kIters = 300000000;

static void report(const char* name, double seconds, int macs_per_instr, double sink) {
  const double instr = kIters * 10.0 / seconds / 1e9;
  printf("%-10s %5.2f G instr/s  %6.1f G multiply-adds/s  (%g)\n", name, instr, instr * macs_per_instr, sink);
}

// Times kIters rounds of STEP on ten chains acc0..acc9 of TYPE, each started by INIT, and reports them;
// SINK reduces two chains so the work is kept.
#define MEASURE(NAME, MACS, TYPE, INIT, STEP, SINK)                           \
  do {                                                                        \
    TYPE acc0 = INIT, acc1 = INIT, acc2 = INIT, acc3 = INIT, acc4 = INIT;     \
    TYPE acc5 = INIT, acc6 = INIT, acc7 = INIT, acc8 = INIT, acc9 = INIT;     \
    const double t = now();                                                   \
    for (long k = 0; k < kIters; ++k) {                                       \
      TEN(STEP) TEN(KEEP)                                                     \
    }                                                                         \
    report(NAME, now() - t, MACS, (double)(SINK(acc0) + SINK(acc9)));         \
  } while (0)

int main(void) {
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  const __m512bh p = (__m512bh)_mm512_set1_epi16(0x3f80), q = (__m512bh)_mm512_set1_epi16(0x3380);
  const __m512i u = _mm512_set1_epi8(1), v = _mm512_set1_epi8(1);
#define FMA(i) acc##i = _mm512_fmadd_ps(acc##i, x, y);
#define BF16(i) acc##i = _mm512_dpbf16_ps(acc##i, p, q);
#define WSSD(i) acc##i = _mm512_dpwssd_epi32(acc##i, u, v);
#define BUSD(i) acc##i = _mm512_dpbusd_epi32(acc##i, u, v);
  MEASURE("vfmadd231ps", 16, __m512, _mm512_set1_ps(1.0f), FMA, _mm512_reduce_add_ps);
  MEASURE("vdpbf16ps", 32, __m512, _mm512_setzero_ps(), BF16, _mm512_reduce_add_ps);
  MEASURE("vpdpwssd", 32, __m512i, _mm512_setzero_si512(), WSSD, _mm512_reduce_add_epi32);
  MEASURE("vpdpbusd", 64, __m512i, _mm512_setzero_si512(), BUSD, _mm512_reduce_add_epi32);
  return 0;
}
