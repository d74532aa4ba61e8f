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
// Decode tiles (one row: a few query vectors to share a widened chunk) skip the widening and convert each
// element as they load it (for_each_chunk_row_f16). `ignis-bench-attention D HEADS CTX` decode, ns per
// query vector and chunk on one Zen 5 core, widened -> in place, alternated 3x, with K/V in L2 (512
// positions): AVX-512 128 x 2 heads (Qwen3-0.6B) 111-150 -> 101-103, 128 x 6 69-87 -> 61-74, 64 x 7
// level (36-37); AVX2 128 x 2 193-232 -> 124-149, 128 x 6 133-166 -> 105, 64 x 7 79-81 -> 68-80. At
// 4096 positions (L3, or 64 caches from DRAM: `... 4096 20 64`) the reads set the pace: AVX-512, minimum
// of 6 runs, 64 x 4 45.0 -> 44.1 (DRAM 54.1 -> 48.8), 128 x 2 121.9 -> 122.1 (DRAM 198 -> 175).
//
// Pure functions over caller-owned memory: thread-safe for distinct outputs and scratch.
#pragma once

#include <cstdint>
#include <type_traits>

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

// The most query vectors a kernel takes through one chunk step together (the AVX-512 kernel's
// registers' worth of scores).
inline constexpr int kAttnMaxVectors = 64;
// scratch: at least attn_scratch_floats(tile) floats, 64-byte aligned.
// (Per query vector: its output, a running max and 16 lane sums; per vector in flight (at most
// kAttnMaxVectors), its chunk's 16 softmax weights; then the chunk's widened K and V rows at attn_chunk_rows.)
inline int64_t attn_work_floats(const AttnTile& t) {
  return (t.n_rows * t.n_heads * (t.head_dim + 32) + 16 * kAttnMaxVectors + 64 + 15) / 16 * 16;
}
inline int64_t attn_scratch_floats(const AttnTile& t) { return attn_work_floats(t) + 2 * kAttnChunk * t.head_dim; }
// [2 (K, V)][kAttnChunk][head_dim] f32, 64-byte aligned when scratch is.
inline float* attn_chunk_rows(const AttnTile& t, float* scratch) { return scratch + attn_work_floats(t); }

// Steps through a tile's positions in order: the current one is row `off` of page `pg` (a division per
// row cost decode, whose tiles hold few query vectors to share a chunk's row lookups).
struct PageCursor {
  int64_t pg = 0, off = 0;
  template <class Row>
  const Row* k(const AttnTile& t) const { return static_cast<const Row*>(t.k_pages[pg]) + off * t.width + t.kv_off; }
  template <class Row>
  const Row* v(const AttnTile& t) const { return static_cast<const Row*>(t.v_pages[pg]) + off * t.width + t.kv_off; }
  void next(const AttnTile& t) {
    if (++off == t.page) off = 0, ++pg;
  }
};

// The chunks of a tile in order: on_chunk(j0, n_chunk, kr, vr) with the first position j0 of each chunk
// of kAttnChunk positions, how many of them exist (n_kv0 + n_rows - 1 in all) and their K and V rows as
// they sit in the pages (Row: uint16_t for f16 pages, float for f32).
template <class Row, class OnChunk>
inline void for_each_chunk(const AttnTile& t, OnChunk&& on_chunk) {
  const int64_t n_kv_max = t.n_kv0 + t.n_rows - 1;
  const Row* kr[kAttnChunk];
  const Row* vr[kAttnChunk];
  PageCursor at;
  for (int64_t j0 = 0; j0 < n_kv_max; j0 += kAttnChunk) {
    const int n_chunk = static_cast<int>(n_kv_max - j0 < kAttnChunk ? n_kv_max - j0 : kAttnChunk);
    for (int i = 0; i < n_chunk; ++i, at.next(t)) {
      kr[i] = at.k<Row>(t);
      vr[i] = at.v<Row>(t);
    }
    on_chunk(j0, n_chunk, kr, vr);
  }
}

// step_rows(r, nr, kp, vp, nj) for the rows of the tile whose positions reach into the chunk at j0, in
// order, up to group_rows consecutive rows at a time that attend to the same number nj of the chunk's
// positions (rows r .. r + nr - 1).
template <class Row, class StepRows>
inline void for_each_row_in_chunk(const AttnTile& t, int64_t j0, const Row* const* kp, const Row* const* vp,
                                  int64_t group_rows, StepRows&& step_rows) {
  auto seen = [&](int64_t r) {  // positions of the chunk row r attends to (<= 0: none)
    const int64_t n = t.n_kv0 + r - j0;
    return n < kAttnChunk ? n : kAttnChunk;
  };
  for (int64_t r = 0; r < t.n_rows;) {
    const int64_t nj = seen(r);
    if (nj <= 0) {
      ++r;
      continue;
    }
    int64_t nr = 1;
    while (nr < group_rows && r + nr < t.n_rows && seen(r + nr) == nj) ++nr;
    step_rows(r, nr, kp, vp, static_cast<int>(nj));
    r += nr;
  }
}

// The chunk walk shared by the SIMD kernels: for each chunk (in order) and each group of rows whose
// positions reach into it (for_each_row_in_chunk), step_rows(r, nr, kp, vp, nj) with the chunk's 16 K
// and V rows as f32 (f16 rows widened by widen(src, dst, head_dim) into `rows`, attn_chunk_rows; past
// the chunk's end they point at zeros, which must hold head_dim floats).
template <class Widen, class StepRows>
inline void for_each_chunk_row(const AttnTile& t, const float* zeros, float* rows, int64_t group_rows, Widen&& widen,
                               StepRows&& step_rows) {
  const int64_t d = t.head_dim;
  auto walk = [&]<class Row>(int64_t j0, int n_chunk, const Row* const* kr, const Row* const* vr) {
    const float* kp[kAttnChunk];
    const float* vp[kAttnChunk];
    for (int i = 0; i < kAttnChunk; ++i) {
      if (i >= n_chunk) {
        kp[i] = vp[i] = zeros;
      } else if constexpr (std::is_same_v<Row, uint16_t>) {
        widen(kr[i], rows + i * d, d);
        widen(vr[i], rows + (kAttnChunk + i) * d, d);
        kp[i] = rows + i * d;
        vp[i] = rows + (kAttnChunk + i) * d;
      } else {
        kp[i] = kr[i];
        vp[i] = vr[i];
      }
    }
    for_each_row_in_chunk(t, j0, kp, vp, group_rows, step_rows);
  };
  if (t.kv_f16)
    for_each_chunk<uint16_t>(t, walk);
  else
    for_each_chunk<float>(t, walk);
}

// The same walk over f16 pages without widening (t.kv_f16): kp and vp are the rows as they sit in the
// pages (past the chunk's end: zeros, head_dim uint16_t zeros). For tiles of few query vectors
// (decode), where converting each element as it is read costs less than widening the chunk.
// NOTE (prefetch): the rows of the chunk and the two after it are prefetched as each chunk starts. The
// widening loop had issued a chunk's 32 row loads back to back; the kernels read them in among their
// FMA chains, and from DRAM (`ignis-bench-attention 64 4 4096 20 64`) took 2x the widening loop's time
// without the prefetch.
template <class StepRows>
inline void for_each_chunk_row_f16(const AttnTile& t, const uint16_t* zeros, StepRows&& step_rows) {
  const int64_t n_kv_max = t.n_kv0 + t.n_rows - 1;
  const auto row_bytes = static_cast<uintptr_t>(t.head_dim) * sizeof(uint16_t);
  int64_t ahead = 0;  // positions [0, ahead) prefetched; `at` is position `ahead`
  PageCursor at;
  auto prefetch_to = [&](int64_t end) {
    for (end = end < n_kv_max ? end : n_kv_max; ahead < end; ++ahead, at.next(t)) {
      // The cache lines the two rows touch (each from its first byte's line to its last byte's).
      const auto k = reinterpret_cast<uintptr_t>(at.k<uint16_t>(t));
      const auto v = reinterpret_cast<uintptr_t>(at.v<uint16_t>(t));
      for (uintptr_t l = k & ~uintptr_t{63}; l < k + row_bytes; l += 64) __builtin_prefetch(reinterpret_cast<char*>(l));
      for (uintptr_t l = v & ~uintptr_t{63}; l < v + row_bytes; l += 64) __builtin_prefetch(reinterpret_cast<char*>(l));
    }
  };
  for_each_chunk<uint16_t>(t, [&](int64_t j0, int n_chunk, const uint16_t* const* kr, const uint16_t* const* vr) {
    prefetch_to(j0 + 3 * kAttnChunk);
    const uint16_t* kp[kAttnChunk];
    const uint16_t* vp[kAttnChunk];
    for (int i = 0; i < kAttnChunk; ++i) {
      kp[i] = i < n_chunk ? kr[i] : zeros;
      vp[i] = i < n_chunk ? vr[i] : zeros;
    }
    for_each_row_in_chunk(t, j0, kp, vp, 1, step_rows);
  });
}

using AttnTileFn = void (*)(const AttnTile& tile, float* scratch);

void attend_tile_portable(const AttnTile& tile, float* scratch);
void attend_tile_avx2(const AttnTile& tile, float* scratch);    // head_dim % 8 == 0, <= 256; else the portable loops
void attend_tile_avx512(const AttnTile& tile, float* scratch);  // head_dim % 16 == 0, <= 256
// The rows of a prefill tile for attend_tile_avx512 with `group` query heads per KV head: 8 to 32, as
// many as keep the tile's outputs within 32 KB.
// NOTE (tile rows): every tile reads its sequence's K/V rows up to its last position, so a tile of
// rows x group vectors reads them once for all those vectors. At 4,096 positions of context one KV
// head's rows (2.4 MB for head_dim 128) no longer sit in L2. Qwen3-0.6B (2 heads of 128 per KV head)
// `ignis bench -p 512 -n 0 -d 4096 -t 2 -r 2`, 8 rows -> 32, alternated 3x: 146-164 -> 170-196 t/s;
// Qwen2.5-0.5B (18 rows), Llama-3.2-1B (32) and Qwen2.5-1.5B (10) within the noise.
inline int64_t attn_avx512_tile_rows(int64_t group, int64_t head_dim) {
  const int64_t rows = 8192 / (group * head_dim);
  return rows < 8 ? 8 : rows > 32 ? 32 : rows;
}
// AMX-BF16 (attention_amx.cpp): f16 pages, head_dim % 32 == 0, <= 256; only call when
// cpu::amx_bf16_supported(). Its scratch: attn_amx_scratch_floats(tile) floats, 64-byte aligned.
void attend_tile_amx(const AttnTile& tile, float* scratch);
int64_t attn_amx_scratch_floats(const AttnTile& tile);

}  // namespace ignis::model
