// The tiled (flash-style) attention kernel: one work item is a tile of query vectors (rows of one
// sequence x query heads sharing one KV head) against that sequence's K/V rows, read in chunks of
// kAttnChunk positions with an online softmax, so no score row longer than a chunk is ever stored.
//
// NOTE (batch invariance): chunk c always covers absolute positions [c * kAttnChunk, (c + 1) *
// kAttnChunk) and every query vector folds its chunks in order with its own running max, sum and
// output; nothing it computes depends on which other vectors share its tile, so a row's result is the
// same alone, in any tile, and in any batch. Each ISA's kernel is deterministic; different ISAs round
// differently (the portable kernel is the reference the others are tested against).
//
// NOTE (f16 cache): K/V rows are f16 by default (model.h, KvCache). The chunk walk widens each chunk's 16
// K and 16 V rows of the tile's KV head into scratch once per tile, and the kernels read f32 rows from
// there: the widening is exact, so every kernel computes what it computes on an f32 cache holding the
// same values, and it is shared by all the tile's query vectors (a prefill tile of 8 rows x 7 heads
// widens each element once per 56 dot products). f32 rows are read in place. Measured on a 2-core Xeon
// (AVX-512, `ignis bench --cache-type`, alternated twice): Qwen3-0.6B Q8_0 pp512 at 2 threads 575-581
// t/s with f16 against 464-468 with f32 (its f32 rows sit 4 KiB apart in the cache, 8 KV heads x 128
// floats; the widened ones are packed together in scratch); tg128 41.3-42.0 against 41.1-41.3; the
// 0.5B, 1.5B and Llama-3.2-1B files within the noise (0-5% for f16).
//
// Pure functions over caller-owned memory: thread-safe for distinct outputs and scratch.
#pragma once

#include <cstdint>

namespace ignis::model {

inline constexpr int64_t kAttnChunk = 16;

struct AttnTile {
  int64_t head_dim = 0;
  float scale = 0;
  // K/V rows: position j of this KV head is element (j % page) * width + kv_off of k_pages[j / page],
  // f16 when kv_f16, else f32.
  const void* const* k_pages = nullptr;
  const void* const* v_pages = nullptr;
  int64_t page = 0;
  int64_t width = 0;
  int64_t kv_off = 0;
  bool kv_f16 = true;
  // Query vectors: n_rows rows x n_heads heads; vector (r, h) is q + r * q_stride + h * head_dim, and its
  // output goes to the same offset of out. Row r attends to positions [0, n_kv0 + r).
  const float* q = nullptr;
  float* out = nullptr;
  int64_t q_stride = 0;
  int64_t n_rows = 0;
  int64_t n_heads = 0;
  int64_t n_kv0 = 0;
};

// scratch: at least attn_scratch_floats(tile) floats, 64-byte aligned.
// (Per query vector: its output, a running max and 16 lane sums; per head of a row, its chunk's 16
// softmax weights; then the chunk's widened K and V rows at attn_chunk_rows.)
inline int64_t attn_work_floats(const AttnTile& t) {
  return (t.n_rows * t.n_heads * (t.head_dim + 32) + 16 * t.n_heads + 64 + 15) / 16 * 16;
}
inline int64_t attn_scratch_floats(const AttnTile& t) { return attn_work_floats(t) + 2 * kAttnChunk * t.head_dim; }
// [2 (K, V)][kAttnChunk][head_dim] f32, 64-byte aligned when scratch is.
inline float* attn_chunk_rows(const AttnTile& t, float* scratch) { return scratch + attn_work_floats(t); }

// The chunk walk shared by the SIMD kernels: for each chunk of kAttnChunk positions (in order) and each
// row r whose positions reach into it, step_row(r, kp, vp, nj) with the chunk's 16 K and V rows as f32
// (f16 rows widened by widen(src, dst, head_dim) into `rows`, attn_chunk_rows; past the chunk's end they
// point at zeros, which must hold head_dim floats) and nj, the number of positions of the chunk the row
// attends to.
template <class Widen, class StepRow>
inline void for_each_chunk_row(const AttnTile& t, const float* zeros, float* rows, Widen&& widen, StepRow&& step_row) {
  const int64_t n_kv_max = t.n_kv0 + t.n_rows - 1;
  const int64_t d = t.head_dim;
  const float* kp[kAttnChunk];
  const float* vp[kAttnChunk];
  // Position j is row `off` of page `pg`, stepped along (a division per row cost decode, whose tiles
  // hold few query vectors to share a chunk's row lookups).
  int64_t pg = 0, off = 0;
  for (int64_t j0 = 0; j0 < n_kv_max; j0 += kAttnChunk) {
    const int64_t n_chunk = n_kv_max - j0 < kAttnChunk ? n_kv_max - j0 : kAttnChunk;
    for (int64_t i = 0; i < kAttnChunk; ++i) {
      if (i >= n_chunk) {
        kp[i] = vp[i] = zeros;
        continue;
      }
      const int64_t e = off * t.width + t.kv_off;
      if (t.kv_f16) {
        float* kr = rows + i * d;
        float* vr = rows + (kAttnChunk + i) * d;
        widen(static_cast<const uint16_t*>(t.k_pages[pg]) + e, kr, d);
        widen(static_cast<const uint16_t*>(t.v_pages[pg]) + e, vr, d);
        kp[i] = kr;
        vp[i] = vr;
      } else {
        kp[i] = static_cast<const float*>(t.k_pages[pg]) + e;
        vp[i] = static_cast<const float*>(t.v_pages[pg]) + e;
      }
      if (++off == t.page) off = 0, ++pg;
    }
    for (int64_t r = 0; r < t.n_rows; ++r) {
      const int64_t n_kv = t.n_kv0 + r;
      if (j0 >= n_kv) continue;
      const int nj = static_cast<int>(n_kv - j0 < kAttnChunk ? n_kv - j0 : kAttnChunk);
      step_row(r, kp, vp, nj);
    }
  }
}

using AttnTileFn = void (*)(const AttnTile& tile, float* scratch);

void attend_tile_portable(const AttnTile& tile, float* scratch);
void attend_tile_avx2(const AttnTile& tile, float* scratch);    // head_dim % 8 == 0, <= 256; else the portable loops
void attend_tile_avx512(const AttnTile& tile, float* scratch);  // head_dim % 16 == 0, <= 256
// AMX-BF16 (attention_amx.cpp): f16 pages, head_dim % 32 == 0, <= 256; only call when
// cpu::amx_bf16_supported(). Its scratch: attn_amx_scratch_floats(tile) floats, 64-byte aligned.
void attend_tile_amx(const AttnTile& tile, float* scratch);
int64_t attn_amx_scratch_floats(const AttnTile& tile);

}  // namespace ignis::model
