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

static void fma_f32(void) {
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
#define INIT(i) __m512 acc##i = _mm512_set1_ps(1.0f + i);
  TEN(INIT)
#undef INIT
  const double t = now();
  for (long k = 0; k < kIters; ++k) {
#define STEP(i) acc##i = _mm512_fmadd_ps(acc##i, x, y);
    TEN(STEP) TEN(KEEP)
#undef STEP
  }
  report("vfmadd231ps", now() - t, 16, _mm512_reduce_add_ps(acc0) + _mm512_reduce_add_ps(acc9));
}

static void dp_bf16(void) {
  const __m512bh p = (__m512bh)_mm512_set1_epi16(0x3f80), q = (__m512bh)_mm512_set1_epi16(0x3380);
#define INIT(i) __m512 acc##i = _mm512_setzero_ps();
  TEN(INIT)
#undef INIT
  const double t = now();
  for (long k = 0; k < kIters; ++k) {
#define STEP(i) acc##i = _mm512_dpbf16_ps(acc##i, p, q);
    TEN(STEP) TEN(KEEP)
#undef STEP
  }
  report("vdpbf16ps", now() - t, 32, _mm512_reduce_add_ps(acc0) + _mm512_reduce_add_ps(acc9));
}

static void dp_int(int bytes) {
  const __m512i u = _mm512_set1_epi8(1), v = _mm512_set1_epi8(1);
#define INIT(i) __m512i acc##i = _mm512_setzero_si512();
  TEN(INIT)
#undef INIT
  const double t = now();
  if (bytes == 2) {
    for (long k = 0; k < kIters; ++k) {
#define STEP(i) acc##i = _mm512_dpwssd_epi32(acc##i, u, v);
      TEN(STEP) TEN(KEEP)
#undef STEP
    }
  } else {
    for (long k = 0; k < kIters; ++k) {
#define STEP(i) acc##i = _mm512_dpbusd_epi32(acc##i, u, v);
      TEN(STEP) TEN(KEEP)
#undef STEP
    }
  }
  report(bytes == 2 ? "vpdpwssd" : "vpdpbusd", now() - t, bytes == 2 ? 32 : 64,
         _mm512_reduce_add_epi32(acc0) + _mm512_reduce_add_epi32(acc9));
}

int main(void) {
  fma_f32();
  dp_bf16();
  dp_int(2);
  dp_int(1);
  return 0;
}
