// AVX-512 kernels for the float weight types (F16, BF16) on ggml's rows in place and on PackedStore's
// copy (packed.h: per 16-row group, each step of float_copy_step(t) elements of its 16 rows one after
// another, the last step and the last group's missing rows zero, so that a group is one stream).
//
// F16 multiplies f32 activations holding the f16-rounded values (what ggml-cpu multiplies with) by
// the widened weights with FMAs; BF16 multiplies bf16 activations (ggml's vec_dot_type for BF16) by the
// weights as they are with vdpbf16ps (pairs of products, exact in f32, added into f32 lanes): 32 of a
// row's elements per instruction against an FMA's 16.
// NOTE: BF16 had taken the unpacked kernel (vdpbf16ps on one row x 4 tokens, each product reloading
// its row and tokens from L2): Qwen2.5-0.5B BF16 pp512 on a 2-vCPU Zen 5 was 219 / 368 t/s at 1 / 2
// threads against llama.cpp's 262 / 454 (llama-bench, same file, 2026-12-05).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <utility>

#include "backend/cpu/packed.h"

namespace ignis::cpu {
namespace {

#define IGNIS_UNROLL _Pragma("GCC unroll 8")

constexpr int64_t kR = kPackRows;

// A float type's step: its elements per 512-bit vector, their loads (masked to the first elements of
// a step) and the multiply-add into f32 lanes.
struct F16Elems {
  static constexpr int64_t kStep = kF16CopyStep;
  using Mask = __mmask16;
  using W = __m512;
  using X = __m512;
  static Mask mask(int64_t r) { return r >= 16 ? Mask(0xffff) : static_cast<Mask>((1u << r) - 1); }
  static W w(const uint16_t* p, Mask m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
  static X x(const uint8_t* row, int64_t i, Mask m) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
  }
  static __m512 madd(__m512 acc, W w, X x) { return _mm512_fmadd_ps(w, x, acc); }
};
struct Bf16Elems {
  static constexpr int64_t kStep = kBf16CopyStep;
  using Mask = __mmask32;
  using W = __m512bh;
  using X = __m512bh;
  static Mask mask(int64_t r) { return r >= 32 ? Mask(0xffffffffu) : static_cast<Mask>((1u << r) - 1); }
  static W w(const uint16_t* p, Mask m) { return (__m512bh)_mm512_maskz_loadu_epi16(m, p); }
  static X x(const uint8_t* row, int64_t i, Mask m) {
    return (__m512bh)_mm512_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + i);
  }
  static __m512 madd(__m512 acc, W w, X x) { return _mm512_dpbf16_ps(acc, w, x); }
};

// Row r's elements from i (a multiple of the step) for the rows starting at w: rows n apart, or the copy's.
template <class E, bool IL>
inline const uint16_t* elems_at(const uint16_t* w, int64_t n, int r, int64_t i) {
  return IL ? w + i * kR + r * E::kStep : w + r * n + i;
}
// Row k of a group.
template <class E, bool IL>
inline const uint16_t* group_row(const uint16_t* group, int64_t n, int k) {
  return IL ? group + k * E::kStep : group + k * n;
}

// One accumulator per (row, token), taking the row's steps in order, the last step masked.
// A row's arithmetic is the same whatever rows and tokens share its pass, and whether its elements are
// taken in one pass or in blocks of a multiple of the step (steps from i to end; the accumulators
// carry over between blocks).
// NOTE (tile shapes): prefill takes 4 rows x 6 tokens (24 accumulators): per step 4 weight loads
// and 6 activation loads feed 24 multiply-adds. The former 4 rows x 3 tokens, with two accumulators per
// (row, token) taking alternate steps (for the decode latency below), spent the same converts and half
// the loads on 12 FMAs. Qwen2.5-0.5B F16 pp512, 5 alternations: 206-215 -> 223-234 t/s at 1 thread,
// 417-423 -> 433-449 at 2 (Zen 5).
template <int NR, int NX>
using Acc = __m512[NR][NX];

// NOTE (F16 prefill prefetch): a pass of 4 rows over the copy reads 2 of every 8 lines of a step, a
// stride the hardware prefetchers left to demand misses: the hottest instructions were the first weight
// converts of a step. Prefetching the pass's lines 8 KiB (16 steps) ahead into L1, Qwen2.5-0.5B F16
// pp512 on Zen 5 (`ignis bench -p 512 -n 0 -t T -r 2`, alternated 3-4x): 1 thread 160-165 -> 188-194
// t/s (4 and 16 KiB ahead: 181-196, 185-197), 2 threads 280-305 -> 315-360. BF16 (4 of 16 lines,
// vdpbf16ps) gained nothing (1 thread 330-378 t/s without, 255-371 with), so it goes without.
constexpr int64_t kPrefillPrefetchBytes = 8192;

template <class E, int NR, int NX, bool IL>
__attribute__((always_inline)) inline void steps(int64_t i, int64_t end, int64_t n, const uint16_t* w, const uint8_t* x,
                                                 size_t x_stride, Acc<NR, NX>& acc) {
  auto step = [&](int64_t i, typename E::Mask m) {
    typename E::W wv[NR];
    IGNIS_UNROLL for (int r = 0; r < NR; ++r) wv[r] = E::w(elems_at<E, IL>(w, n, r, i), m);
    IGNIS_UNROLL for (int t = 0; t < NX; ++t) {
      const typename E::X xv = E::x(x + t * x_stride, i, m);
      IGNIS_UNROLL for (int r = 0; r < NR; ++r) acc[r][t] = E::madd(acc[r][t], wv[r], xv);
    }
  };
  constexpr bool kPrefetch = IL && NX > 1 && std::is_same_v<E, F16Elems>;  // see kPrefillPrefetchBytes
  for (; i + E::kStep <= end; i += E::kStep) {
    if constexpr (kPrefetch) {
      const auto* pf = reinterpret_cast<const char*>(elems_at<E, IL>(w, n, 0, i + kPrefillPrefetchBytes / (kR * 2)));
      IGNIS_UNROLL for (int l = 0; l < NR * E::kStep * 2 / 64; ++l) _mm_prefetch(pf + 64 * l, _MM_HINT_T0);
    }
    step(i, E::mask(E::kStep));
  }
  if (i < end) step(i, E::mask(end - i));
}

// Stores the first nr rows (the copy's last group computes its zero rows too).
template <int NR, int NX>
inline void store(const Acc<NR, NX>& acc, float* out, int64_t out_stride, int nr = NR) {
  IGNIS_UNROLL for (int r = 0; r < NR; ++r) IGNIS_UNROLL for (int t = 0; t < NX; ++t)
    if (r < nr) out[t * out_stride + r] = _mm512_reduce_add_ps(acc[r][t]);
}

template <class E, int NR, int NX, bool IL>
inline void rows(int64_t n, const uint16_t* w, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride,
                 int nr = NR) {
  Acc<NR, NX> acc;
  IGNIS_UNROLL for (int r = 0; r < NR; ++r) IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[r][t] = _mm512_setzero_ps();
  steps<E, NR, NX, IL>(0, n, n, w, x, x_stride, acc);
  store<NR, NX>(acc, out, out_stride, nr);
}

// NOTE (blocks of kBlock elements): for long rows (the FFN down projection, 4,864 elements) four rows
// and the tokens' activations no longer fit in L1, and every quad of rows read the activations again
// from L2 (F16: 52-55 GMAC/s on one Zen 5 core against 72-80 for 896-element rows). In blocks, the 16
// rows' accumulators wait in memory between blocks and the block's activations stay in L1 for all
// four quads.
constexpr int64_t kBlock = 1024;  // a multiple of every step: every block starts on a step

constexpr int kTokens = 6;
constexpr int kPassRows = 4;
template <class E, int NX, bool IL>
void group_blocked(int64_t n, const uint16_t* w, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride,
                   int n_rows) {
  constexpr int NR = kPassRows, NQ = 16 / NR;
  alignas(64) Acc<NR, NX> saved[NQ];
  for (auto& q : saved) IGNIS_UNROLL for (int r = 0; r < NR; ++r) IGNIS_UNROLL for (int t = 0; t < NX; ++t)
    q[r][t] = _mm512_setzero_ps();
  for (int64_t k0 = 0; k0 < n; k0 += kBlock) {
    const int64_t k1 = std::min(n, k0 + kBlock);
    for (int q = 0; q < NQ; ++q) {
      Acc<NR, NX> acc;
      IGNIS_UNROLL for (int r = 0; r < NR; ++r) IGNIS_UNROLL for (int t = 0; t < NX; ++t) acc[r][t] = saved[q][r][t];
      steps<E, NR, NX, IL>(k0, k1, n, group_row<E, IL>(w, n, NR * q), x, x_stride, acc);
      IGNIS_UNROLL for (int r = 0; r < NR; ++r) IGNIS_UNROLL for (int t = 0; t < NX; ++t) saved[q][r][t] = acc[r][t];
    }
  }
  for (int q = 0; q < NQ; ++q) store<NR, NX>(saved[q], out + NR * q, out_stride, std::clamp(n_rows - NR * q, 0, NR));
}


// NOTE (decode in place): one accumulator chain per row was slower than memory (from L3, F16 896 x
// 4864 on one Zen 5 core: 42-58 GB/s against 67-86 for the former two chains per row), so decode takes
// 4 rows at a time, four chains sharing each activation load. The 4 rows are 4 short streams side by
// side, which the hardware prefetcher alone read at half speed from DRAM (896 x 151,936: 13.7-15.8 GB/s
// against 25-32 one row at a time), so the next 4 rows are prefetched front to back, every line of
// each step, kDecodePrefetchBytes past their start: 23-30 GB/s from DRAM at 1 thread, 35-39 at 2 (one
// row at a time 29-32 and 32-37), 89-98 from L3. Qwen2.5-0.5B F16 tg64 unchanged within the noise.
constexpr int64_t kDecodePrefetchBytes = 4096;

template <class E>
inline void decode_quad(int64_t n, const uint16_t* w, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride) {
  constexpr int kLines = static_cast<int>(4 * E::kStep * 2 / 64);  // 4 rows' step
  const char* pf = reinterpret_cast<const char*>(w + 4 * n) + kDecodePrefetchBytes;
  Acc<4, 1> acc;
  IGNIS_UNROLL for (int r = 0; r < 4; ++r) acc[r][0] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + E::kStep <= n; i += E::kStep) {
    IGNIS_UNROLL for (int l = 0; l < kLines; ++l) _mm_prefetch(pf + 8 * i + 64 * l, _MM_HINT_T0);  // 4 rows x 2 bytes
    steps<E, 4, 1, false>(i, i + E::kStep, n, w, x, x_stride, acc);
  }
  steps<E, 4, 1, false>(i, n, n, w, x, x_stride, acc);
  store<4, 1>(acc, out, out_stride);
}

// Decode on the copy: the group's 16 rows in one pass, one stream (the rows' chains as above).
// NOTE (prefetchnta, one line per F16 step of 512 bytes, 2 KiB ahead): 41% of the kernel's samples had
// been on the first load of a step. On Zen 5, F16 896 x 4864 from DRAM (40 copies) at 2 threads 72-80
// -> 76-84 GB/s, alternated 3x; Qwen2.5-0.5B F16 tg128 at 2 threads 72.1-73.5 -> 75.8-79.4 t/s, at 1
// thread 37.9-38.7 -> 40.3-41.9 (membw 70-73 GB/s throughout). From L3 it costs ~5% (one core 88-92 ->
// 83-87 GB/s), and T0 / T1 hints, 1-16 KiB ahead, had not gained. The same hint on the Q4_0 / Q8_0
// records was mixed and on Q6_K's triples 1.6x slower.
// NOTE (no dot1_pair): two row groups half a matrix apart (the quantized types' decode) need 32
// accumulators; in blocks of 2-128 steps with them waiting on the stack, rows 0-7 of both groups then
// 8-15, or one group's 16 rows then the other's, read Qwen2.5-0.5B F16 tg at 2 threads in 0.955-1.40x
// one stream's time (bench/ab-decode.cpp, thirtieth session), at 1 thread 1.03-1.07x.
constexpr int64_t kIlPrefetchBytes = 2048;

template <class E>
inline void decode_il(int64_t n, const uint16_t* w, const uint8_t* x, float* out, int n_rows) {
  __m512 acc[kR];
  _Pragma("GCC unroll 16") for (int r = 0; r < kR; ++r) acc[r] = _mm512_setzero_ps();
  auto step = [&](int64_t i, typename E::Mask m) {
    const typename E::X xv = E::x(x, i, m);
    const uint16_t* s = w + i * kR;
    _mm_prefetch(reinterpret_cast<const char*>(s) + kIlPrefetchBytes, _MM_HINT_NTA);
    _Pragma("GCC unroll 16") for (int r = 0; r < kR; ++r) acc[r] = E::madd(acc[r], E::w(s + r * E::kStep, m), xv);
  };
  int64_t i = 0;
  for (; i + E::kStep <= n; i += E::kStep) step(i, E::mask(E::kStep));
  if (i < n) step(i, E::mask(n - i));
  // NOTE: unrolled with constant indices. A loop to n_rows here (and the r loops under an unroll of 8)
  // kept acc in memory, a load and a store around every FMA: 896 x 4864 from L3 on one Zen 5 core 63-73
  // -> 82-92 GB/s; Qwen2.5-0.5B F16 tg128 at 2 threads 37.4-49.5 -> 49.2-56.6 t/s (floor ~59).
  _Pragma("GCC unroll 16") for (int r = 0; r < kR; ++r) if (r < n_rows) out[r] = _mm512_reduce_add_ps(acc[r]);
}

template <class E, int NX, bool IL>
void packed_dot_float(int64_t n, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                      int64_t out_stride, int n_rows) {
  const auto* w = reinterpret_cast<const uint16_t*>(group);
  int k = 0;
  if constexpr (NX == 1) {
    if constexpr (IL) {
      return decode_il<E>(n, w, x, out, n_rows);
    } else {
      for (; k + 4 <= n_rows; k += 4) decode_quad<E>(n, w + k * n, x, x_stride, out + k, out_stride);
      for (; k < n_rows; ++k) rows<E, 1, 1, false>(n, w + k * n, x, x_stride, out + k, out_stride);
      return;
    }
  }
  if (n > 2 * kBlock && (IL || n_rows == 16)) return group_blocked<E, NX, IL>(n, w, x, x_stride, out, out_stride, n_rows);
  if constexpr (IL) {  // the copy has all 16 rows (zero past n_rows)
    for (; k < n_rows; k += kPassRows) rows<E, kPassRows, NX, IL>(n, group_row<E, IL>(w, n, k), x, x_stride, out + k, out_stride, n_rows - k);
    return;
  }
  for (; k + 4 <= n_rows; k += 4) rows<E, 4, NX, IL>(n, w + k * n, x, x_stride, out + k, out_stride);
  for (; k + 2 <= n_rows; k += 2) rows<E, 2, NX, IL>(n, w + k * n, x, x_stride, out + k, out_stride);
  if (k < n_rows) rows<E, 1, NX, IL>(n, w + k * n, x, x_stride, out + k, out_stride);
}

// NOTE (token blocks): a prefill streams a product's weights from memory once per token block, and the
// default block (256 KB of converted activations) is small for f32 rows: 6 tokens of Qwen2.5-1.5B's
// 8,960-element FFN down rows, whose 27.5 MB of F16 weights then came from DRAM every 6 tokens
// (`ignis-bench-matmul f16 8960 1536 512 1 3`: 51-59 GMAC/s, 75-82 with 4 MiB). A block's activations
// past L2 cost less: each token group's rows are read once per slice of weights. Alternated 3x at
// bb796c2 on Zen 5, `ignis bench -p 512 -n 0 -t T -r 1`: Qwen2.5-1.5B F16 1 thread 44-47 -> 53-54 t/s, 2
// threads 83-87 -> 100-117; Qwen2.5-0.5B F16 (896 / 4,864-element rows) and its BF16 within the noise.
constexpr size_t kFloatActCacheBytes = 4 * 1024 * 1024;

template <class E, bool IL, int... I>
PackedKernels float_kernels_of(std::integer_sequence<int, I...>) {
  PackedKernels k{packed_dot_float<E, 1, IL>, packed_dot_float<E, kTokens, IL>, kTokens};
  k.dotn_rest = packed_dot_rest<packed_dot_float<E, I + 1, IL>...>;
  k.act_cache_bytes = kFloatActCacheBytes;
  return k;
}
template <class E, bool IL>
PackedKernels float_kernels() {
  return float_kernels_of<E, IL>(std::make_integer_sequence<int, kTokens - 1>());
}

}  // namespace

PackedKernels packed_kernels_float_avx512(DType t, bool rows) {
  if (t == DType::F16) return rows ? float_kernels<F16Elems, false>() : float_kernels<F16Elems, true>();
  if (t == DType::BF16) return rows ? float_kernels<Bf16Elems, false>() : float_kernels<Bf16Elems, true>();
  return {};
}

void f16_round_avx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT)));
  }
}

void bf16_round_avx512(const float* x, uint16_t* y, int64_t n, int64_t n_padded) {
  // f32_to_bf16 (core/fp16.h) on 16 lanes: round to nearest even in integers, NaN quieted. (vcvtneps2bf16
  // would flush subnormal inputs to zero.)
  const __m512i round = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x40);
  const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  auto convert = [&](__m512i v) {
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(v, _mm512_add_epi32(round, _mm512_and_si512(_mm512_srli_epi32(v, 16), one))), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(v, abs), inf);
    return _mm512_cvtepi32_epi16(_mm512_mask_or_epi32(rounded, nan, _mm512_srli_epi32(v, 16), quiet));
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), convert(_mm512_loadu_si512(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm256_mask_storeu_epi16(y + i, m, convert(_mm512_maskz_loadu_epi32(m, x + i)));
    i = n;
  }
  for (; i < n_padded; ++i) y[i] = 0;
}

}  // namespace ignis::cpu
