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
// Pure functions over caller-owned memory: thread-safe for distinct outputs and scratch.
#pragma once

#include <cstdint>

namespace ignis::model {

inline constexpr int64_t kAttnChunk = 16;

struct AttnTile {
  int64_t head_dim = 0;
  float scale = 0;
  // K/V rows: position j of this KV head is k_pages[j / page] + (j % page) * width + kv_off.
  const float* const* k_pages = nullptr;
  const float* const* v_pages = nullptr;
  int64_t page = 0;
  int64_t width = 0;
  int64_t kv_off = 0;
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
// softmax weights.)
inline int64_t attn_scratch_floats(const AttnTile& t) {
  return t.n_rows * t.n_heads * (t.head_dim + 32) + 16 * t.n_heads + 64;
}

// The chunk walk shared by the SIMD kernels: for each chunk of kAttnChunk positions (in order) and
// each row r whose positions reach into it, step_row(r, kp, vp, nj) with the chunk's 16 K and V row
// pointers (past the chunk's end they point at zeros, which must hold head_dim floats) and nj, the
// number of positions of the chunk the row attends to.
template <class StepRow>
inline void for_each_chunk_row(const AttnTile& t, const float* zeros, StepRow&& step_row) {
  const int64_t n_kv_max = t.n_kv0 + t.n_rows - 1;
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
      kp[i] = t.k_pages[pg] + off * t.width + t.kv_off;
      vp[i] = t.v_pages[pg] + off * t.width + t.kv_off;
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

// The same walk per query vector v = r * n_heads + h: step(v, q_vector, kp, vp, nj).
template <class Step>
inline void for_each_chunk(const AttnTile& t, const float* zeros, Step&& step) {
  for_each_chunk_row(t, zeros, [&](int64_t r, const float* const* kp, const float* const* vp, int nj) {
    for (int64_t h = 0; h < t.n_heads; ++h) step(r * t.n_heads + h, t.q + r * t.q_stride + h * t.head_dim, kp, vp, nj);
  });
}

using AttnTileFn = void (*)(const AttnTile& tile, float* scratch);

void attend_tile_portable(const AttnTile& tile, float* scratch);
void attend_tile_avx2(const AttnTile& tile, float* scratch);    // head_dim % 8 == 0, <= 256; else the portable loops
void attend_tile_avx512(const AttnTile& tile, float* scratch);  // head_dim % 16 == 0, <= 256

}  // namespace ignis::model
