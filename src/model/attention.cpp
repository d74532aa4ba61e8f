// Causal grouped-query attention over KvCache pages (blocks.h: attention, attention_batch), built on
// the tiled kernel of attention_kernel.h.
//
// NOTE (work split): an item is (sequence, KV head, tile of up to rows_per_tile rows, slice of the query
// heads sharing the KV head). Causal rows cost in proportion to their position, so items are sorted by
// cost, largest first, and threads pull them from an atomic counter: a static split of a long prompt's
// rows left one core waiting for the other most of the attention time. Head slices are cut only when
// there would be fewer than two items per thread (decode with few KV heads).
#include <algorithm>
#include <atomic>
#include <numeric>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/packed.h"
#include "model/attention_generic.h"
#include "model/attention_kernel.h"
#include "model/blocks.h"

namespace ignis::model {

void attend_tile_portable(const AttnTile& tile, float* scratch) { attend_tile_generic(tile, scratch); }

namespace {

// rows_per_tile: the AMX kernel's K tiles are written once per tile and shared by all its groups of 16
// query vectors, so its tiles are larger (Qwen3-0.6B Q8_0 pp512 at 2 threads, alternated twice: 16 rows
// 896-944 t/s, 32 rows 950-976, 64 rows 976-988; Qwen2.5-0.5B Q4_0 within the noise).
struct Kernel {
  const char* name;
  AttnTileFn fn;
  int64_t rows_per_tile;
  int64_t (*scratch_floats)(const AttnTile&) = attn_scratch_floats;
};

// The kernel for head_dim, `group` query heads per KV head and the cache type on this CPU, at most
// cpu::isa_cap() (IGNIS_ISA; IGNIS_AMX=0 leaves AMX out); the CPU is probed once.
Kernel pick_kernel(int64_t head_dim, int64_t group, bool kv_f16) {
  static const bool avx512 = [] {
    __builtin_cpu_init();
    return cpu::isa_cap() >= cpu::Isa::kAvx512 && __builtin_cpu_supports("avx512f") != 0;
  }();
  static const bool avx2 = cpu::isa_cap() >= cpu::Isa::kAvx2 && __builtin_cpu_supports("avx2") &&
                           __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  static const bool amx = avx512 && cpu::use_amx() && cpu::amx_bf16_supported();
  if (amx && kv_f16 && head_dim % 32 == 0 && head_dim <= 256)
    return {"amx", attend_tile_amx, 32, attn_amx_scratch_floats};
  if (avx512 && head_dim % 16 == 0 && head_dim <= 256)
    return {"avx512", attend_tile_avx512, attn_avx512_tile_rows(group, head_dim)};
  if (avx2) return {"avx2", attend_tile_avx2, 8};
  return {"portable", attend_tile_portable, 8};
}

struct Item {
  int32_t span;
  int32_t kv_head;
  int32_t slice;
  int64_t row0;  // first row inside the span
  int64_t n_rows;
  int64_t cost;
};

void attend_spans(ThreadPool& pool, std::span<const SeqSpan> spans, int64_t il, const AttentionShape& sh,
                  const float* q, float* out) {
  const bool all_f16 = std::all_of(spans.begin(), spans.end(), [](const SeqSpan& sp) { return sp.cache->kv_type() == DType::F16; });
  const int64_t group = sh.n_head / sh.n_head_kv;
  const Kernel kernel = pick_kernel(sh.head_dim, group, all_f16);
  const int64_t rows_per_tile = kernel.rows_per_tile;
  const int64_t d = sh.head_dim;
  const int64_t q_stride = sh.n_head * d;

  // Page pointers per span, looked up once per call.
  std::vector<std::vector<const void*>> k_pages(spans.size()), v_pages(spans.size());
  int64_t n_tiles = 0;
  for (size_t si = 0; si < spans.size(); ++si) {
    const SeqSpan& sp = spans[si];
    const int64_t page = sp.cache->page_size();  // per span: dense caches of different sizes may share a batch
    const int64_t n_pages = (sp.pos0 + sp.n_tokens + page - 1) / page;
    k_pages[si].resize(n_pages);
    v_pages[si].resize(n_pages);
    for (int64_t p = 0; p < n_pages; ++p) {
      k_pages[si][p] = sp.cache->k_page(il, p);
      v_pages[si][p] = sp.cache->v_page(il, p);
    }
    n_tiles += (sp.n_tokens + rows_per_tile - 1) / rows_per_tile;
  }
  const int64_t nth = pool.n_threads();
  const int64_t n_slices = std::clamp<int64_t>((2 * nth + n_tiles * sh.n_head_kv - 1) / (n_tiles * sh.n_head_kv), 1, group);

  std::vector<Item> items;
  items.reserve(static_cast<size_t>(n_tiles * sh.n_head_kv * n_slices));
  int64_t work = 0;
  for (size_t si = 0; si < spans.size(); ++si) {
    const SeqSpan& sp = spans[si];
    for (int64_t r0 = 0; r0 < sp.n_tokens; r0 += rows_per_tile) {
      const int64_t n_rows = std::min(rows_per_tile, sp.n_tokens - r0);
      const int64_t cost = n_rows * (sp.pos0 + r0 + 1 + n_rows / 2);
      for (int64_t kvh = 0; kvh < sh.n_head_kv; ++kvh)
        for (int64_t sl = 0; sl < n_slices; ++sl)
          items.push_back({static_cast<int32_t>(si), static_cast<int32_t>(kvh), static_cast<int32_t>(sl), r0, n_rows, cost});
      work += cost * sh.n_head_kv;
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.cost > b.cost; });

  auto run_item = [&](const Item& it, std::vector<float>& scratch) {
    const SeqSpan& sp = spans[it.span];
    const int64_t g0 = it.slice * group / n_slices, g1 = (it.slice + 1) * group / n_slices;
    const int64_t h0 = it.kv_head * group + g0;
    const int64_t row = sp.row0 + it.row0;
    AttnTile t;
    t.head_dim = d;
    t.scale = sh.scale;
    t.k_pages = k_pages[it.span].data();
    t.v_pages = v_pages[it.span].data();
    t.page = sp.cache->page_size();
    t.width = d;  // KvCache's pages: [n_head_kv, page, head_dim]
    t.kv_f16 = sp.cache->kv_type() == DType::F16;
    t.kv_off = it.kv_head * t.page * d;
    t.q = q + row * q_stride + h0 * d;
    t.out = out + row * q_stride + h0 * d;
    t.q_stride = q_stride;
    t.n_rows = it.n_rows;
    t.n_heads = g1 - g0;
    t.n_kv0 = sp.pos0 + it.row0 + 1;
    scratch.resize(static_cast<size_t>(kernel.scratch_floats(t) + 16));
    auto* s = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
    kernel.fn(t, s);
  };

  // Small steps (decode over short contexts) run inline: waking the workers costs more.
  if (nth == 1 || work * group * d < (int64_t{1} << 15)) {
    thread_local std::vector<float> scratch;
    for (const Item& it : items) run_item(it, scratch);
    return;
  }
  std::atomic<size_t> next{0};
  pool.run([&](int, int) {
    thread_local std::vector<float> scratch;
    for (;;) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= items.size()) break;
      run_item(items[i], scratch);
    }
  });
}

}  // namespace

const char* attention_kernel_name(int64_t head_dim, bool kv_f16) { return pick_kernel(head_dim, 1, kv_f16).name; }

void attention(ThreadPool& pool, KvCache& cache, int64_t il, const AttentionShape& sh, const float* q,
               int64_t n_tokens, int64_t pos0, float* out) {
  const SeqSpan span{&cache, 0, pos0, n_tokens};
  attend_spans(pool, std::span<const SeqSpan>(&span, 1), il, sh, q, out);
}

void attention_batch(ThreadPool& pool, std::span<const SeqSpan> spans, int64_t il, const AttentionShape& shape,
                     const float* q, const float* k, const float* v, float* out) {
  for (const SeqSpan& sp : spans) {
    const int64_t w = sp.cache->kv_width();
    kv_store(*sp.cache, il, sp.pos0, sp.n_tokens, shape.head_dim, k + sp.row0 * w, v + sp.row0 * w);
  }
  attend_spans(pool, spans, il, shape, q, out);
}

}  // namespace ignis::model
