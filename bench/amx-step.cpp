// One step of the 32-element AMX prefill kernel (src/backend/cpu/packed_amx.cpp), taken apart: per
// 16 tokens x 16 rows x 32 elements, the tile work (zero, activation and weight tile loads, tdpbssd,
// store of the 1 KB result tile) and the AVX-512 scaling of the stored int32 results (convert,
// multiply by the row and token scales, FMA), alone and together. Everything stays in L1, so the
// numbers are the core's, not the memory's. Prints TSC ticks per step.
//
//   g++ -O2 -std=c++20 -march=sapphirerapids bench/amx-step.cpp -o /tmp/amx-step && /tmp/amx-step
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12 in _mm512_reduce_add_ps
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 32, 32, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 8, 8};
};
constexpr int kBlocks = 48;
alignas(64) int8_t act[16 * kBlocks * 32];
alignas(64) int8_t wts[kBlocks * 512];
alignas(64) float dx[kBlocks * 16];
alignas(64) uint16_t dw[kBlocks * 16];
alignas(64) int32_t res[2][256];
alignas(64) int32_t fixed_res[256];
volatile float sink;  // keeps the accumulators live

// Tile parts (bit mask): 1 zero, 2 activation load, 4 weight load, 8 tdpbssd, 16 result store.
// Vector: 0 none, 1 convert + multiply + FMA (the kernel's), 2 convert + FMA (no multiply), on the
// results of the previous block (Dep) or on fixed data (independent of the tiles).
#define REP16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define DECL(m) __m512 a##m = _mm512_setzero_ps();
#define SCALE(m)                                                                                            \
  a##m = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * m)),                                 \
                         Vec == 1 ? _mm512_mul_ps(w, _mm512_set1_ps(d[m])) : w, a##m);
#define SUM(m) s += _mm512_reduce_add_ps(a##m);
#define TILES(T, A, B, b)                                      \
  if (Parts & 1) _tile_zero(T);                                \
  if (Parts & 2) _tile_loadd(A, act + (b) * 32, kBlocks * 32); \
  if (Parts & 4) _tile_loadd(B, wts + (b) * 512, 64);          \
  if (Parts & 8) _tile_dpbssd(T, A, B);                        \
  if (Parts & 16) _tile_stored(T, res[T], 64);

template <int Parts, int Vec, bool Dep>
__attribute__((noinline)) void run(int reps) {
  REP16(DECL)
  for (int r = 0; r < reps; ++r) {
    for (int b = 0; b < kBlocks; b += 2) {
      const int32_t* fixed = fixed_res;
      asm volatile("" : "+r"(fixed));
      const __m512 w = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(dw + 16 * b)));
      TILES(0, 2, 4, b)
      if constexpr (Vec != 0) {
        const int32_t* c = Dep ? res[1] : fixed;
        const float* d = dx + 16 * b;
        REP16(SCALE)
      }
      TILES(1, 3, 5, b + 1)
      if constexpr (Vec != 0) {
        const int32_t* c = Dep ? res[0] : fixed;
        const float* d = dx + 16 * b + 16;
        REP16(SCALE)
      }
    }
  }
  float s = 0;
  REP16(SUM)
  sink = s;
}

template <int Parts, int Vec, bool Dep = false>
void bench(const char* name) {
  run<Parts, Vec, Dep>(10);
  const int reps = 20000;
  const uint64_t t0 = __rdtsc();
  run<Parts, Vec, Dep>(reps);
  const uint64_t t1 = __rdtsc();
  std::printf("%-52s %6.1f\n", name, double(t1 - t0) / (double(reps) * kBlocks));
}

}  // namespace

int main() {
  if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) {
    std::fprintf(stderr, "no AMX tile permission (ARCH_REQ_XCOMP_PERM)\n");
    return 1;
  }
  for (auto& v : act) v = static_cast<int8_t>(std::rand());
  for (auto& v : wts) v = static_cast<int8_t>(std::rand());
  for (auto& v : dx) v = 1e-3f;
  for (auto& v : dw) v = 0x3c00;
  static const TileConfig cfg;
  _tile_loadconfig(&cfg);
  std::printf("%-52s %6s\n", "TSC ticks per 16x16x32 step", "");
  for (int round = 0; round < 2; ++round) {
    bench<31, 0>("tiles: zero, 2 loads, tdpbssd, store");
    bench<6, 0>("tiles: the 2 loads alone");
    bench<8, 0>("tiles: tdpbssd alone");
    bench<16, 0>("tiles: store alone");
    bench<0, 1>("vector: convert, multiply, FMA");
    bench<0, 2>("vector: convert, FMA (no multiply)");
    bench<31, 1>("tiles + vector, independent data");
    bench<31, 1, true>("tiles + vector on the previous block (the kernel)");
    bench<31, 2, true>("tiles + vector without the multiply");
    bench<8, 1>("tdpbssd + vector, independent");
    bench<6, 1>("tile loads + vector, independent");
    bench<16, 1>("store + vector, independent");
  }
  _tile_release();
}
