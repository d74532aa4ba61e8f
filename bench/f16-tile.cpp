// The F16 prefill tile's loop alone (packed_float_avx512.cpp: 4 rows x 6 tokens, 24 FMA accumulators,
// per 16-element step 4 vcvtph2ps of the weights and 6 loads of f32 activations), on one 16-row group of
// the copy's layout (each step holds the 16 rows' 16 elements one after another) and 6 tokens' rows, all
// in L1: the ceiling the kernel's inner loop can reach on this core, without cache misses or calls.
//   g++ -std=c++20 -O3 -march=native bench/f16-tile.cpp -o f16-tile && ./f16-tile [N=896]
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

float g_sink;

__attribute__((noinline)) void run(const uint16_t* w, const float* x, int64_t n, int64_t reps) {
  __m512 acc[4][6];
  _Pragma("GCC unroll 8") for (int r = 0; r < 4; ++r) _Pragma("GCC unroll 8") for (int t = 0; t < 6; ++t)
    acc[r][t] = _mm512_setzero_ps();
  for (int64_t k = 0; k < reps; ++k)
    for (int q = 0; q < 4; ++q)  // the group's four passes of 4 rows
      for (int64_t i = 0; i < n; i += 16) {
        __m512 wv[4];
        _Pragma("GCC unroll 8") for (int r = 0; r < 4; ++r) wv[r] =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i * 16 + (q * 4 + r) * 16)));
        _Pragma("GCC unroll 8") for (int t = 0; t < 6; ++t) {
          __m512 xv = _mm512_loadu_ps(x + t * n + i);
          __asm__("" : "+v"(xv));  // one load per token, as in the kernel (not folded into each FMA)
          _Pragma("GCC unroll 8") for (int r = 0; r < 4; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
        }
      }
  __m512 s = _mm512_setzero_ps();
  for (auto& row : acc) for (auto& a : row) s = _mm512_add_ps(s, a);
  g_sink = _mm512_reduce_add_ps(s);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 896;
  if (n <= 0 || n % 16 != 0 || n > 4096) {
    std::fprintf(stderr, "usage: f16-tile [N: a multiple of 16 up to 4096]\n");
    return 2;
  }
  std::vector<uint16_t> w(16 * n, 0x3c00);  // 1.0
  std::vector<float> x(6 * n, 1e-3f);
  const int64_t reps = 200000 * 64 / n;
  run(w.data(), x.data(), n, reps / 100);
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    run(w.data(), x.data(), n, reps);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double macs = static_cast<double>(reps) * 16 * n * 6;
    std::printf("N=%lld: %.1f GMAC/s (%.2f G FMA/s)\n", static_cast<long long>(n), macs / s * 1e-9, macs / 16 / s * 1e-9);
  }
  return g_sink == 42.0f;
}
