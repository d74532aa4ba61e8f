// CPU matmul / get_row.
//
// NOTE (matmul design): activations are converted once per call to the weight type's vec_dot_type
// (shared by all threads), then the output is cut into tiles of kRowTile weight rows x a token block
// sized so the block's converted activations stay in L2. Threads pull tiles from an atomic counter
// (balances the 2 cores even when one is busy elsewhere). Inside a tile each weight row is loaded
// from memory once and reused for every token of the block: for prefill this is a matrix-matrix
// product with weights streamed once per token block, not n_tokens matrix-vector products. Where the
// type has a multi-token kernel, groups of kDotTokens tokens also share each decoded weight block in
// registers.
#include "backend/cpu/ops.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <memory>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/packed.h"
#include "core/error.h"

namespace ignis::cpu {
namespace {

constexpr int64_t kRowTile = 16;
constexpr int64_t kTilesPerThread = 8;
constexpr size_t kActCacheBytes = 256 * 1024;
// NOTE (AMX token blocks): an AMX call unpacks its row group's weights into B tiles once for all the
// tiles of 16 tokens it is given, so it takes the whole token block, and the block may hold 1 MB of
// activations (the Xeons with AMX have 2 MB of L2 per core). The former fixed 64-token calls spent
// 16-18% of the kernel unpacking (perf annotate, Llama-3.2-1B Q4_0 pp512). pp512 at 2 threads on a
// 2-core Xeon, alternated twice against the binary before: Llama-3.2-1B Q4_0 494-515 -> 526-587 t/s,
// Qwen2.5-1.5B Q4_0 390-392 -> 422-425, Qwen3-0.6B Q8_0 688-724 -> 741-773, Qwen2.5-0.5B Q4_0 within
// the noise; budgets of 512 KB and 2 MB were no better.
constexpr size_t kAmxActCacheBytes = 1024 * 1024;
constexpr size_t kWeightCacheBytes = 256 * 1024;
constexpr size_t kMinChunkBytes = 16 * 1024;
constexpr int kMaxTypeId = 64;
constexpr int kGluMaxTokens = 8;  // the most tokens a kernel may take in matmul_glu off AMX

// Best activation converter per raw type id, resolved once.
const std::array<FromFloatFn, kMaxTypeId>& act_table() {
  static const std::array<FromFloatFn, kMaxTypeId> t = [] {
    std::array<FromFloatFn, kMaxTypeId> r{};
    for (uint32_t id = 0; id < kMaxTypeId; ++id)
      if (dtype_traits(id)) r[id] = best_act_quantizer(static_cast<DType>(id));
    return r;
  }();
  return t;
}

// Best kernels per raw type id, resolved once.
const std::array<const VecDotEntry*, kMaxTypeId>& kernel_table() {
  static const std::array<const VecDotEntry*, kMaxTypeId> t = [] {
    std::array<const VecDotEntry*, kMaxTypeId> r{};
    for (uint32_t id = 0; id < kMaxTypeId; ++id)
      if (dtype_traits(id)) r[id] = best_kernels(static_cast<DType>(id));
    return r;
  }();
  return t;
}

void check_weight(const WeightView& w, const DTypeTraits*& tr) {
  tr = dtype_traits(w.type);
  if (!tr) fail("matmul: unknown weight type id {}", static_cast<uint32_t>(w.type));
  if (w.n_in <= 0 || w.n_out <= 0 || w.n_in % tr->block_size != 0)
    fail("matmul: weight of type {} has shape [{}, {}]; rows must be a positive multiple of {}", tr->name, w.n_in,
         w.n_out, tr->block_size);
  if (!w.data) fail("matmul: weight of type {} has no data", tr->name);
}

}  // namespace

const char* isa_name() { return isa_label(best_isa()); }

namespace {

// Decode's work split: [0, n_units) cut into one contiguous region per thread (boundaries multiples
// of granule). A thread claims chunks from the front of its own region, so its chunks follow one
// another in memory (one stream for the hardware prefetcher), and once its region is empty it steals
// the back half of what is left of the fullest other region. Each region's front and back share one
// atomic word (n_units < 2^32).
class Regions {
 public:
  Regions(int nth, int64_t n_units, int64_t granule) : nth_(nth), granule_(granule) {
    if (nth > kInline) heap_ = std::make_unique<Slot[]>(static_cast<size_t>(nth));
    slots_ = heap_ ? heap_.get() : inline_;
    for (int i = 0; i < nth; ++i) {
      int64_t b, e;
      ThreadPool::split(n_units, i, nth, granule, &b, &e);
      slots_[i].v.store(pack(b, e), std::memory_order_relaxed);
    }
  }
  // The next chunk of region ith, at least min_units (a multiple of granule) or what is left.
  bool take_front(int ith, int64_t min_units, int64_t* u0, int64_t* u1) {
    std::atomic<uint64_t>& v = slots_[ith].v;
    uint64_t cur = v.load(std::memory_order_relaxed);
    for (;;) {
      const int64_t f = front(cur), b = back(cur);
      if (f >= b) return false;
      const int64_t left = b - f, take = std::min(left, std::max(min_units, round_up(left / 4)));
      if (v.compare_exchange_weak(cur, pack(f + take, b), std::memory_order_relaxed)) {
        *u0 = f, *u1 = f + take;
        return true;
      }
    }
  }
  // Half of what is left of the fullest region (at least min_units), taken from its back.
  bool steal(int ith, int64_t min_units, int64_t* u0, int64_t* u1) {
    for (;;) {
      int victim = -1;
      int64_t most = 0;
      for (int i = 0; i < nth_; ++i) {
        const uint64_t cur = slots_[i].v.load(std::memory_order_relaxed);
        if (i != ith && back(cur) - front(cur) > most) most = back(cur) - front(cur), victim = i;
      }
      if (victim < 0) return false;
      std::atomic<uint64_t>& v = slots_[victim].v;
      uint64_t cur = v.load(std::memory_order_relaxed);
      const int64_t f = front(cur), b = back(cur);
      if (f >= b) continue;
      const int64_t take = std::max(min_units, round_up((b - f) / 2));
      const int64_t nb = std::max(f, (b - take) / granule_ * granule_);
      if (v.compare_exchange_weak(cur, pack(f, nb), std::memory_order_relaxed)) {
        *u0 = nb, *u1 = b;
        return true;
      }
    }
  }

 private:
  static constexpr int kInline = 8;
  struct alignas(64) Slot {
    std::atomic<uint64_t> v{0};
  };
  static uint64_t pack(int64_t f, int64_t b) { return static_cast<uint64_t>(f) | static_cast<uint64_t>(b) << 32; }
  static int64_t front(uint64_t v) { return static_cast<int64_t>(v & 0xffffffffu); }
  static int64_t back(uint64_t v) { return static_cast<int64_t>(v >> 32); }
  int64_t round_up(int64_t n) const { return (n + granule_ - 1) / granule_ * granule_; }
  int nth_;
  int64_t granule_;
  Slot inline_[kInline];
  std::unique_ptr<Slot[]> heap_;
  Slot* slots_;
};

// The tile loop shared by the plain and the packed products: tiles of output units (weight rows, or
// packed groups of rows) x a token block sized so its converted activations stay in L2, pulled by
// threads from an atomic counter. A tile holds about n_units / (kTilesPerThread * threads) units, a
// multiple of `granule` (for rows: whole cache lines of y). do4(u, t, g) computes unit u for the g *
// n_multi tokens from t (only when n_multi > 1; g <= max_groups), dom(u, t) for tokens t .. t + m_multi
// - 1 (only when m_multi > 1: the groups left under n_multi), do1(u, t) for token t; all write y
// themselves. unit_bytes: the weight bytes of one unit; act_cache: the bytes of converted activations a
// token block may hold.
struct TileShape {
  int n_multi = 0, m_multi = 0;
  int max_groups = 1;
  size_t act_cache = kActCacheBytes;
};
template <class Do4, class DoM, class Do1>
void run_tiles(ThreadPool& pool, int64_t n_units, int64_t granule, size_t unit_bytes, int64_t n_tokens, size_t act_row,
               const TileShape& shape, const Do4& do4, const DoM& dom, const Do1& do1) {
  const int n_multi = shape.n_multi, m_multi = shape.m_multi;
  // Whole groups of n_multi per block (a block's leftover tokens would take the smaller kernels), and
  // at least one group when there are that many tokens.
  int64_t tok_block = std::max<int64_t>(1, static_cast<int64_t>(shape.act_cache / act_row));
  if (n_multi > 1 && n_tokens >= n_multi) tok_block = std::max<int64_t>(tok_block - tok_block % n_multi, n_multi);
  tok_block = std::min(tok_block, n_tokens);
  // Units per pass over the block's tokens: a tile's weights are re-read once per token group, so
  // they are taken in slices that stay in cache (a tile of the output head is megabytes).
  const int64_t slice = std::max<int64_t>(1, static_cast<int64_t>(kWeightCacheBytes / std::max<size_t>(unit_bytes, 1)));
  const int64_t div = kTilesPerThread * pool.n_threads() * granule;
  const int64_t per_tile = std::max<int64_t>(granule, (n_units + div - 1) / div * granule);
  const int64_t n_unit_tiles = (n_units + per_tile - 1) / per_tile;
  const int64_t n_tiles = n_unit_tiles * ((n_tokens + tok_block - 1) / tok_block);
  std::atomic<int64_t> next{0};
  // Units [u0, u1) for tokens [t0, t1), the weights taken in cache-sized slices.
  auto run_units = [&](int64_t u0, int64_t u1, int64_t t0, int64_t t1) {
    for (int64_t s0 = u0; s0 < u1; s0 += slice) {
      const int64_t s1 = std::min(u1, s0 + slice);
      int64_t t = t0;
      // n_multi tokens at a time: each weight block is decoded once per group of tokens.
      if (n_multi > 1)
        while (t + n_multi <= t1) {
          const int g = static_cast<int>(std::min<int64_t>(shape.max_groups, (t1 - t) / n_multi));
          for (int64_t u = s0; u < s1; ++u) do4(u, t, g);
          t += g * n_multi;
        }
      if (m_multi > 1)
        for (; t + m_multi <= t1; t += m_multi)
          for (int64_t u = s0; u < s1; ++u) dom(u, t);
      for (; t < t1; ++t)
        for (int64_t u = s0; u < s1; ++u) do1(u, t);
    }
  };
  if (tok_block == n_tokens && pool.n_threads() > 1 && n_units < (int64_t{1} << 32)) {
    // NOTE: with one token block (decode) a matmul is a few hundred microseconds of streaming, and
    // the fixed tiles above left one thread idle for half a tile at the end of each (~3% of decode).
    // Chunks shrink with the work left (at least kMinChunkBytes of weights), so the threads finish
    // within one small chunk of each other, whatever the other load on the cores. They come from one
    // region per thread (Regions): a thread's chunks continue one stream until it steals. Handed out
    // from one counter, each chunk after the first was a jump for both threads (about 12 stream starts
    // per thread per product): tg128 at 2 threads on Zen 5, alternated three times, Qwen2.5-0.5B Q4_0
    // 147-154 -> 164-179 t/s, its Q4_K_M mix 111-117 -> 124-129, Qwen2.5-1.5B Q4_0 44-47 -> 46-50.
    const int nth = pool.n_threads();
    const int64_t min_units = std::max<int64_t>(
        granule, (static_cast<int64_t>(kMinChunkBytes / std::max<size_t>(unit_bytes, 1)) + granule - 1) / granule * granule);
    Regions regions(nth, n_units, granule);
    pool.run([&](int ith, int) {
      int64_t u0, u1;
      while (regions.take_front(ith, min_units, &u0, &u1)) run_units(u0, u1, 0, n_tokens);
      while (regions.steal(ith, min_units, &u0, &u1)) run_units(u0, u1, 0, n_tokens);
    });
    return;
  }
  pool.run([&](int, int) {
    for (;;) {
      const int64_t tile = next.fetch_add(1, std::memory_order_relaxed);
      if (tile >= n_tiles) break;
      // Token block is the outer index so consecutive tiles share activations in cache.
      const int64_t tb = tile / n_unit_tiles, ut = tile % n_unit_tiles;
      const int64_t u0 = ut * per_tile, u1 = std::min(n_units, u0 + per_tile);
      run_units(u0, u1, tb * tok_block, std::min(n_tokens, (tb + 1) * tok_block));
    }
  });
}

// The tile shape of a packed product off AMX: n_multi tokens a kernel call, `rest` left over.
TileShape packed_shape(const PackedKernels& k, int n_multi, int rest) {
  return TileShape{n_multi, rest > 1 ? rest : 0, 1, k.act_cache_bytes ? k.act_cache_bytes : kActCacheBytes};
}

// Converts n_tokens activation rows with convert(t, dst_row) into buf (rows of act_row bytes), in
// parallel when there are several; returns the first row, 64-byte aligned.
template <class Convert>
uint8_t* convert_rows(ThreadPool& pool, int64_t n_tokens, size_t act_row, std::vector<uint8_t>& buf,
                      const Convert& convert) {
  // Grow-only: sizes alternate between matmuls, and growing a vector zero-fills the new part.
  const size_t need = act_row * static_cast<size_t>(n_tokens) + 64;
  if (buf.size() < need) buf.resize(need);
  auto* dst = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t{63});
  if (n_tokens == 1) {
    convert(0, dst);
  } else {
    pool.run([&](int ith, int nth) {
      int64_t t0, t1;
      ThreadPool::split(n_tokens, ith, nth, 1, &t0, &t1);
      for (int64_t t = t0; t < t1; ++t) convert(t, dst + t * act_row);
    });
  }
  return dst;
}

// matmul_glu's combining step (ops.h).
struct Glu {
  GluRowFn fn;
  const float *gb, *ub;
};

// y's rows are y_stride floats apart (a fused matrix's parts write their columns of it). With glu:
// w's halves' products combined into y (row stride y_stride = n_out / 2); where it cannot (see
// matmul_glu) it returns false having written nothing.
bool matmul_packed(ThreadPool& pool, const WeightView& view, const float* x, int64_t n_tokens, float* y,
                   int64_t y_stride, const Glu* glu = nullptr) {
  // Types copied in the background (F16 on AVX-512, the quantized types there without AMX): the
  // copy once it exists, else ggml's rows with their own kernels (the same bits). Where F16 is not
  // copied (AVX2) its packed kernels take the rows.
  WeightView w = view;
  bool in_rows = false;
  if (copied_in_background(w.type)) {
    const void* copy = w.repacked ? w.repacked->load(std::memory_order_acquire) : nullptr;
    if (copy) {
      w.data = copy;
    } else if (w.parts) {  // a fused matrix: its parts' columns of y one after another
      if (glu) return false;
      for (int i = 0; i < w.n_parts; ++i) {
        matmul_packed(pool, w.parts[i], x, n_tokens, y, y_stride);
        y += w.parts[i].n_out;
      }
      return true;
    }
    in_rows = !copy;
  }
  const PackedKernels k = in_rows ? packed_kernels_rows(w.type) : packed_kernels(w.type);
  if (!k.dot1) fail("matmul: packed {} weight but no packed kernel on this CPU", dtype_name(w.type));
  const bool by_element = w.type == DType::F16 || w.type == DType::BF16;  // the float kernels take n_in
  const int64_t nb = by_element ? w.n_in : w.n_in / dtype_traits(w.type)->block_size;
  const size_t act_row = packed_act_row_bytes(w.type, w.n_in);
  // AMX prefill: for the 32-element types the activations' scales also go to a block-major table (the
  // K-quant kernels read each row's super-block scales themselves).
  const bool amx = k.dott && n_tokens >= kAmxTokens;
  // (Off AMX, kernels without a pair form combine only prefills: a decode's unit would read its gate
  // and up groups as two alternating streams, and Qwen2.5-1.5B Q4_K_M tg128 at 2 threads measured
  // 53-55 t/s fused against 57-58 unfused, alternated three times.)
  if (glu && !amx && (k.dot_pair ? k.n_pair > kGluMaxTokens : (k.n_multi > kGluMaxTokens || n_tokens < k.n_multi)))
    return false;
  const bool amx_table = amx && dtype_traits(w.type)->block_size == 32;
  thread_local std::vector<uint8_t> act_buf, table_buf;
  uint8_t* table = nullptr;
  if (amx_table) {
    const size_t need = amx_table_bytes(nb, n_tokens) + 64;
    if (table_buf.size() < need) table_buf.resize(need);
    table = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(table_buf.data()) + 63) & ~uintptr_t{63});
  }
  const uint8_t* xb = convert_rows(pool, n_tokens, act_row, act_buf, [&](int64_t t, uint8_t* dst) {
    pack_activation(w.type, x + t * w.n_in, w.n_in, dst);
    if (amx_table) amx_table_column(dst, nb, t, table);
  });
  // (In place a "group" is 16 consecutive rows; the copies, see packed.h.)
  const size_t group_bytes = in_rows ? row_bytes(w.type, w.n_in) * kPackRows : packed_group_bytes(w.type, w.n_in);
  const auto* wb = static_cast<const uint8_t*>(w.data);
  const int64_t n_groups = (w.n_out + kPackRows - 1) / kPackRows;
  auto rows = [&](int64_t g) { return static_cast<int>(std::min<int64_t>(kPackRows, w.n_out - g * kPackRows)); };
  auto dotn = [&](int64_t g, int64_t t) {
    k.dotn(nb, wb + g * group_bytes, xb + t * act_row, act_row, y + t * y_stride + g * kPackRows, y_stride, rows(g));
  };
  auto dot1 = [&](int64_t g, int64_t t) {
    k.dot1(nb, wb + g * group_bytes, xb + t * act_row, act_row, y + t * y_stride + g * kPackRows, y_stride, rows(g));
  };
  if (amx) {
    const size_t tile_table = amx_table_bytes(nb, kAmxTileTokens);
    // Kernels whose multi-token form is a whole tile (F16) take the tokens left after the tiles in one
    // call of their short form, not one call per token.
    const int rest = k.n_multi == kAmxTileTokens && k.dotn_rest ? static_cast<int>(n_tokens % kAmxTileTokens) : 0;
    // Units of tile_groups row groups (the last may hold fewer).
    const int64_t per = k.tile_groups, n_units = (n_groups + per - 1) / per;
    auto each = [&](int64_t u, auto&& fn) {
      for (int64_t g = u * per; g < std::min(n_groups, (u + 1) * per); ++g) fn(g);
    };
    if (glu) {
      // A unit: up to tile_groups groups of the gate half and the same of the up half, into the
      // thread's scratch rows (16 per group), then combined into y.
      const int64_t half = n_groups / 2, n_glu = (half + per - 1) / per, width = 16 * per;
      thread_local std::vector<float> glu_buf;
      auto unit = [&](int64_t u, int64_t t, int64_t n_tok, auto&& product) {
        const int64_t g = u * per;
        const int ng = static_cast<int>(std::min(per, half - g));
        const size_t need = static_cast<size_t>(2 * n_tok * width);
        if (glu_buf.size() < need) glu_buf.resize(need);
        float* gs = glu_buf.data();
        float* us = gs + n_tok * width;
        product(g, ng, gs);
        product(g + half, ng, us);
        const int64_t c0 = g * kPackRows;
        for (int64_t r = 0; r < n_tok; ++r)
          glu->fn(gs + r * width, us + r * width, glu->gb ? glu->gb + c0 : nullptr, glu->ub ? glu->ub + c0 : nullptr,
                  ng * kPackRows, y + (t + r) * y_stride + c0);
      };
      // The same kernels as below, for groups [g, g + ng) and tokens from t, into rows of `width`.
      auto groups_of = [&](int64_t t, int64_t n_tok, auto&& kernel) {
        return [&, t, n_tok](int64_t g, int ng, float* dst) {
          for (int i = 0; i < ng; ++i)
            for (int64_t j = 0; j < n_tok; j += kernel(g + i, t + j, dst + j * width + i * kPackRows)) {
            }
        };
      };
      run_tiles(
          pool, n_glu, 1, 2 * per * group_bytes, n_tokens, act_row,
          TileShape{kAmxTileTokens, rest > 1 ? rest : k.n_multi, std::numeric_limits<int>::max(), kAmxActCacheBytes},
          [&](int64_t u, int64_t t, int n_tiles) {
            unit(u, t, int64_t{n_tiles} * kAmxTileTokens, [&](int64_t g, int ng, float* dst) {
              k.dott(nb, wb + g * group_bytes, group_bytes, ng, xb + t * act_row, act_row,
                     table ? table + (t / kAmxTileTokens) * tile_table : nullptr, dst, width, kPackRows, n_tiles);
            });
          },
          [&](int64_t u, int64_t t) {
            const int64_t n_tok = rest > 1 ? rest : k.n_multi;
            unit(u, t, n_tok, groups_of(t, n_tok, [&](int64_t g, int64_t tt, float* dst) -> int64_t {
                   if (rest > 1)
                     k.dotn_rest(nb, wb + g * group_bytes, xb + tt * act_row, act_row, dst, width, kPackRows, rest);
                   else
                     k.dotn(nb, wb + g * group_bytes, xb + tt * act_row, act_row, dst, width, kPackRows);
                   return n_tok;
                 }));
          },
          [&](int64_t u, int64_t t) {
            unit(u, t, 1, groups_of(t, 1, [&](int64_t g, int64_t tt, float* dst) -> int64_t {
                   k.dot1(nb, wb + g * group_bytes, xb + tt * act_row, act_row, dst, width, kPackRows);
                   return 1;
                 }));
          });
      return true;
    }
    run_tiles(
        pool, n_units, 1, per * group_bytes, n_tokens, act_row,
        TileShape{kAmxTileTokens, rest > 1 ? rest : k.n_multi, std::numeric_limits<int>::max(), kAmxActCacheBytes},
        [&](int64_t u, int64_t t, int n_tiles) {
          const int64_t g = u * per;
          const int ng = static_cast<int>(std::min(per, n_groups - g));
          k.dott(nb, wb + g * group_bytes, group_bytes, ng, xb + t * act_row, act_row,
                 table ? table + (t / kAmxTileTokens) * tile_table : nullptr, y + t * y_stride + g * kPackRows, y_stride,
                 rows(g + ng - 1), n_tiles);
        },
        [&](int64_t u, int64_t t) {
          each(u, [&](int64_t g) {
            if (rest <= 1) return dotn(g, t);
            k.dotn_rest(nb, wb + g * group_bytes, xb + t * act_row, act_row, y + t * y_stride + g * kPackRows, y_stride,
                        rows(g), rest);
          });
        },
        [&](int64_t u, int64_t t) { each(u, [&](int64_t g) { dot1(g, t); }); });
    return true;
  }
  if (glu) {
    // NOTE: off AMX, a unit is a gate group and its up group (half the groups further on), made by the
    // pair kernel as its pair where there is one (sharing each activation load), else by the same
    // kernels as below one group after the other, and combined at once from the thread's stack: the
    // [n_tokens, 2 h] products no longer go to memory for a second pass, which also ran on one thread
    // in decode while the other waited. The bits are those of the separate product and pass.
    // Alternated three times on Zen 5: Qwen2.5-0.5B Q4_0 pp512 at one thread 570-582 -> 597-626 t/s,
    // its Q8_0 file 505-604 -> 564-634, Qwen2.5-1.5B Q4_K_M 120-123 -> 126-155, F16 159-183 -> 164-180;
    // tg128 at 2 threads within the noise (1.5B Q4_0 46-52 -> 52).
    const int64_t half = n_groups / 2;
    const bool pair = k.dot_pair != nullptr;
    const int n_multi = pair ? k.n_pair : k.dotn ? k.n_multi : 1;
    const bool has_rest = pair ? k.dot_pair_rest != nullptr : k.dotn_rest != nullptr;
    const int rest = has_rest ? static_cast<int>(n_tokens % n_multi) : 0;
    const size_t gate_to_up = static_cast<size_t>(half) * group_bytes;
    constexpr int64_t kUnitRow = 2 * kPackRows;  // a token's gate then up outputs in a unit
    auto unit = [&](int64_t g, int64_t t, int n_tok, auto&& product) {
      alignas(64) float s[kGluMaxTokens * kUnitRow];
      const uint8_t* gate = wb + g * group_bytes;
      const uint8_t* x = xb + t * act_row;
      product(gate, x, s);
      const int64_t c0 = g * kPackRows;
      for (int r = 0; r < n_tok; ++r)
        glu->fn(s + r * kUnitRow, s + r * kUnitRow + kPackRows, glu->gb ? glu->gb + c0 : nullptr,
                glu->ub ? glu->ub + c0 : nullptr, kPackRows, y + (t + r) * y_stride + c0);
    };
    run_tiles(
        pool, half, 1, 2 * group_bytes, n_tokens, act_row, packed_shape(k, n_multi, rest),
        [&](int64_t g, int64_t t, int) {
          unit(g, t, n_multi, [&](const uint8_t* gate, const uint8_t* x, float* s) {
            if (pair) return k.dot_pair(nb, gate, gate_to_up, x, act_row, s, kUnitRow, 2, kPackRows);
            k.dotn(nb, gate, x, act_row, s, kUnitRow, kPackRows);
            k.dotn(nb, gate + gate_to_up, x, act_row, s + kPackRows, kUnitRow, kPackRows);
          });
        },
        [&](int64_t g, int64_t t) {
          unit(g, t, rest, [&](const uint8_t* gate, const uint8_t* x, float* s) {
            if (pair) return k.dot_pair_rest(nb, gate, gate_to_up, x, act_row, s, kUnitRow, 2, kPackRows, rest);
            k.dotn_rest(nb, gate, x, act_row, s, kUnitRow, kPackRows, rest);
            k.dotn_rest(nb, gate + gate_to_up, x, act_row, s + kPackRows, kUnitRow, kPackRows, rest);
          });
        },
        [&](int64_t g, int64_t t) {
          unit(g, t, 1, [&](const uint8_t* gate, const uint8_t* x, float* s) {
            if (pair && k.dot_pair_rest)
              return k.dot_pair_rest(nb, gate, gate_to_up, x, act_row, s, kUnitRow, 2, kPackRows, 1);
            k.dot1(nb, gate, x, act_row, s, kUnitRow, kPackRows);
            k.dot1(nb, gate + gate_to_up, x, act_row, s + kPackRows, kUnitRow, kPackRows);
          });
        });
    return true;
  }
  if (n_tokens == 1 && k.dot1_pair && n_groups >= 2) {
    // NOTE (decode in two streams): a unit is row group g with group g + half (half the matrix
    // further on) through dot1_pair, and an odd last group alone, so each thread reads two streams of
    // weights instead of one. A whole group of one then of the other is not the same: on the K-quants
    // 1.3x slower. With the 4- and 5-bit types' prefetch (packed_avx512.cpp), in one process
    // alternating every 8 tokens (ab-decode, BENCHMARKS.md), 2 threads, Zen 5, tg time against one
    // group at a time: Qwen2.5-1.5B Q4_0 0.92-0.95, Llama-3.2-1B Q4_0 0.86-0.92, 0.5B Q4_0 0.93-1.01,
    // 0.5B Q8_0 0.96-1.00, a Q4_1 file 0.87; the K-quants (1.5B Q4_K_M) 0.94-0.98. Per row the
    // operations are dot1's, so the bits are the same.
    const int64_t half = n_groups / 2;
    const size_t apart = static_cast<size_t>(half) * group_bytes;
    run_tiles(
        pool, half + n_groups % 2, 1, 2 * group_bytes, 1, act_row, packed_shape(k, 1, 0),
        [](int64_t, int64_t, int) {}, [](int64_t, int64_t) {},
        [&](int64_t g, int64_t) {
          if (g == half) return dot1(n_groups - 1, 0);  // the odd one
          alignas(64) float s[2 * kPackRows];
          const int last = rows(g + half);
          k.dot1_pair(nb, wb + g * group_bytes, apart, xb, act_row, s, 2 * kPackRows, 2, last);
          std::copy_n(s, kPackRows, y + g * kPackRows);
          std::copy_n(s + kPackRows, last, y + (g + half) * kPackRows);
        });
    return true;
  }
  if (k.dot_pair && (n_tokens >= k.n_pair || (k.dot_pair_rest && n_tokens > 1))) {
    // Units are pairs of row groups (the last may be a single group): the pair kernel shares each
    // activation load between them. The tokens left over after the groups of n_pair (all of them in a
    // prompt shorter than n_pair) go through the pair kernel's short form in one call per unit, not
    // through the one-token kernel per token: 20-token Qwen2.5-0.5B Q4_0 prefill, see BENCHMARKS.md.
    const int64_t n_pairs = (n_groups + 1) / 2;
    const int rest = k.dot_pair_rest ? static_cast<int>(n_tokens % k.n_pair) : 0;
    auto unit = [&](int64_t p, int64_t t, auto&& kernel) {
      const int64_t g = 2 * p;
      const int ng = static_cast<int>(std::min<int64_t>(2, n_groups - g));
      kernel(nb, wb + g * group_bytes, group_bytes, xb + t * act_row, act_row, y + t * y_stride + g * kPackRows, y_stride,
             ng, rows(g + ng - 1));
    };
    run_tiles(
        pool, n_pairs, 1, 2 * group_bytes, n_tokens, act_row, packed_shape(k, k.n_pair, rest),
        [&](int64_t p, int64_t t, int) { unit(p, t, k.dot_pair); },
        [&](int64_t p, int64_t t) {
          unit(p, t, [&](auto... a) { k.dot_pair_rest(a..., rest); });
        },
        [&](int64_t p, int64_t t) {
          for (int64_t g = 2 * p; g < std::min(n_groups, 2 * p + 2); ++g) dot1(g, t);
        });
    return true;
  }
  // The same for the other types: a prefill's leftover tokens in one call per row group.
  const int rest = k.dotn_rest ? static_cast<int>(n_tokens % k.n_multi) : 0;
  run_tiles(
      pool, n_groups, 1, group_bytes, n_tokens, act_row, packed_shape(k, k.n_multi, rest),
      [&](int64_t g, int64_t t, int) { dotn(g, t); },
      [&](int64_t g, int64_t t) {
        k.dotn_rest(nb, wb + g * group_bytes, xb + t * act_row, act_row, y + t * y_stride + g * kPackRows, y_stride,
                    rows(g), rest);
      },
      dot1);
  return true;
}

}  // namespace

void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tokens, float* y) {
  if (n_tokens <= 0) return;
  const DTypeTraits* tr = nullptr;
  check_weight(w, tr);
  if (w.packed) {
    matmul_packed(pool, w, x, n_tokens, y, w.n_out);
    return;
  }
  const uint32_t id = static_cast<uint32_t>(w.type);
  const VecDotEntry* kern = id < kMaxTypeId ? kernel_table()[id] : nullptr;
  if (!kern) fail("matmul: no CPU kernel for weight type {}", tr->name);
  const VecDotFn dot = kern->vec_dot;
  const VecDotMultiFn dot_multi = kern->vec_dot_multi;

  // Activations in the weight type's vec_dot_type: [n_tokens, act_row] bytes.
  const DTypeTraits* act = dtype_traits(tr->vec_dot_type);
  const uint8_t* xb = reinterpret_cast<const uint8_t*>(x);
  size_t act_row = static_cast<size_t>(w.n_in) * sizeof(float);
  thread_local std::vector<uint8_t> act_buf;
  if (act->type != DType::F32) {
    const FromFloatFn convert = act_table()[static_cast<uint32_t>(act->type)];
    if (!convert) fail("matmul: no converter for activation type {}", act->name);
    act_row = row_bytes(act->type, w.n_in);
    xb = convert_rows(pool, n_tokens, act_row, act_buf,
                      [&](int64_t t, uint8_t* dst) { convert(x + t * w.n_in, dst, w.n_in); });
  }

  const size_t w_row = row_bytes(w.type, w.n_in);
  const auto* wb = static_cast<const uint8_t*>(w.data);
  run_tiles(
      pool, w.n_out, kRowTile, w_row, n_tokens, act_row, TileShape{dot_multi != nullptr ? kDotTokens : 1, 0},
      [&](int64_t r, int64_t t, int) {
        float out[kDotTokens];
        dot_multi(w.n_in, wb + r * w_row, xb + t * act_row, act_row, out);
        for (int j = 0; j < kDotTokens; ++j) y[(t + j) * w.n_out + r] = out[j];
      },
      [](int64_t, int64_t) {},
      [&](int64_t r, int64_t t) { y[t * w.n_out + r] = dot(w.n_in, wb + r * w_row, xb + t * act_row); });
}

bool matmul_glu(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tokens, float* out, GluRowFn fn,
                const float* gb, const float* ub) {
  if (!w.packed || w.n_out % (2 * kPackRows) != 0) return false;
  const DTypeTraits* tr = nullptr;
  check_weight(w, tr);
  const Glu glu{fn, gb, ub};
  return matmul_packed(pool, w, x, n_tokens, out, w.n_out / 2, &glu);
}

void get_row(const WeightView& w, int64_t row, float* dst) {
  const DTypeTraits* tr = dtype_traits(w.type);
  if (!tr || !tr->to_float) fail("get_row: weight type {} cannot be converted to f32", dtype_name(w.type));
  if (row < 0 || row >= w.n_out) fail("get_row: row {} out of range [0, {})", row, w.n_out);
  if (w.n_in % tr->block_size != 0)
    fail("get_row: row length {} is not a multiple of {}'s block size {}", w.n_in, tr->name, tr->block_size);
  if (w.packed) {
    if (!packed_rows_readable(w.type)) fail("get_row: the {} weight is packed for matmul; use its unpacked view", tr->name);
    return packed_get_row(w, row, dst);
  }
  const size_t rb = row_bytes(w.type, w.n_in);
  tr->to_float(static_cast<const uint8_t*>(w.data) + row * rb, dst, w.n_in);
}

}  // namespace ignis::cpu
