// Packing of weights and activations into the row-interleaved layouts (see packed.h).
#include "backend/cpu/packed.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "core/fp16.h"
#include "core/quant_blocks.h"

namespace ignis::cpu {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kParallelPackBytes = size_t{256} << 10;  // matrices at least this large pack on several threads
constexpr int64_t kR = kPackRows;

int64_t row_groups(int64_t n_out) { return (n_out + kR - 1) / kR; }

int64_t block_elems(DType t) {
  return t == DType::Q2_K || t == DType::Q3_K || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ? kQKK : kQK;
}

// The 4 bytes of lane k in chunk c of a record region: region + c * 64 + 4 * k.
inline uint8_t* lane(uint8_t* region, int64_t c, int64_t k) { return region + c * 64 + 4 * k; }

inline uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void store32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// The 32 nibbles of a Q4_0 / Q5_0 block (element e < 16 in the low nibble of qs[e], e >= 16 in the high
// nibble of qs[e - 16]) as row k's lanes of 4 chunks: chunk m low nibbles = group 2m, high = group 2m+1.
// Four bytes at a time: chunk 0 takes the low nibbles of qs[0..3] and qs[4..7], chunk 1 of qs[8..15],
// chunks 2 and 3 the high nibbles of the same bytes.
void pack_nibbles(const uint8_t* qs, uint8_t* chunks, int64_t k) {
  constexpr uint32_t kLo = 0x0f0f0f0f;
  const uint32_t w0 = load32(qs), w1 = load32(qs + 4), w2 = load32(qs + 8), w3 = load32(qs + 12);
  store32(lane(chunks, 0, k), (w0 & kLo) | ((w1 & kLo) << 4));
  store32(lane(chunks, 1, k), (w2 & kLo) | ((w3 & kLo) << 4));
  store32(lane(chunks, 2, k), ((w0 >> 4) & kLo) | (((w1 >> 4) & kLo) << 4));
  store32(lane(chunks, 3, k), ((w2 >> 4) & kLo) | (((w3 >> 4) & kLo) << 4));
}

// Q5_0 / Q5_1: row k's 5th bits (ggml's qh, bit 4g + j = element 4g + j) as its lane of the record's qh
// chunk at `at`: bit g of byte j = the 5th bit of element 4g + j (a 4 x 8 bit transpose).
void pack_fifth_bits(const uint8_t qh_bytes[4], uint8_t* at, int64_t k) {
  const uint32_t qh = load32(qh_bytes);
  uint32_t out = 0;
  for (int j = 0; j < 4; ++j) {
    uint32_t x = (qh >> j) & 0x11111111u;  // bit 4g: element 4g + j
    x = (x | x >> 3) & 0x03030303u;
    x = (x | x >> 6) & 0x000f000fu;
    x = (x | x >> 12) & 0xffu;  // bit g
    out |= x << (8 * j);
  }
  store32(lane(at, 0, k), out);
}

// The inverse: row k's qh (ggml's bit order) from the qh chunk at `at`.
uint32_t unpack_fifth_bits(const uint8_t* at, int64_t k) {
  const uint32_t v = load32(at + 4 * k);
  uint32_t qh = 0;
  for (int j = 0; j < 4; ++j) {
    uint32_t y = (v >> (8 * j)) & 0xffu;  // bit g: element 4g + j
    y = (y | y << 12) & 0x000f000fu;
    y = (y | y << 6) & 0x03030303u;
    y = (y | y << 3) & 0x11111111u;  // bit 4g
    qh |= y << j;
  }
  return qh;
}

// Q6_K's qh chunk h and Q3_K's lo(h), from 16 dwords of 2-bit fields laid out as ggml's Q6_K qh and Q3_K
// qs (within each 128-element half, element i's field at bits 2 (i / 32) of byte i % 32): bits 2c..2c+1
// of byte j = the field of element 64 c + 4 h + j, which is byte j of dword 8 (c / 2) + h % 8 shifted by
// 2 (2 (c % 2) + h / 8).
uint32_t two_bit_chunk(const uint32_t src[16], int h) {
  uint32_t v = 0;
  for (int c = 0; c < 4; ++c) v |= ((src[8 * (c / 2) + h % 8] >> (2 * (2 * (c % 2) + h / 8))) & 0x03030303u) << (2 * c);
  return v;
}

// Writes row k's block `src` (ggml layout) into the record `rec` of its row group (the type a template
// argument, so that pack_groups' loop over a row's blocks has no switch in it).
template <DType t>
void pack_block(const uint8_t* src, uint8_t* rec, int64_t k) {
  auto* d16 = reinterpret_cast<uint16_t*>(rec);
  switch (t) {
    case DType::Q4_0: {
      BlockQ4_0 b;
      std::memcpy(&b, src, sizeof b);
      d16[k] = b.d;
      pack_nibbles(b.qs, rec + 32, k);
      break;
    }
    case DType::Q5_0: {
      BlockQ5_0 b;
      std::memcpy(&b, src, sizeof b);
      d16[k] = b.d;
      pack_nibbles(b.qs, rec + 32, k);
      pack_fifth_bits(b.qh, rec + 32 + 256, k);
      break;
    }
    case DType::Q4_1:
    case DType::Q5_1: {
      using Block = std::conditional_t<t == DType::Q4_1, BlockQ4_1, BlockQ5_1>;
      Block b;
      std::memcpy(&b, src, sizeof b);
      d16[k] = b.d;
      d16[kR + k] = b.m;
      pack_nibbles(b.qs, rec + 64, k);
      if constexpr (t == DType::Q5_1) pack_fifth_bits(b.qh, rec + 64 + 256, k);
      break;
    }
    case DType::Q8_0: {
      BlockQ8_0 b;
      std::memcpy(&b, src, sizeof b);
      d16[k] = b.d;
      // + 128 on every byte (mod 256) is a flip of its top bit.
      for (int c = 0; c < 8; ++c) store32(lane(rec + 32, c, k), load32(reinterpret_cast<const uint8_t*>(b.qs) + 4 * c) ^ 0x80808080u);
      break;
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      using Block = std::conditional_t<t == DType::Q4_K, BlockQ4_K, BlockQ5_K>;
      Block b;
      std::memcpy(&b, src, sizeof b);
      d16[k] = b.d;
      d16[kR + k] = b.dmin;
      uint8_t* sc = rec + 64;          // [8 sub-blocks][16 rows]
      uint8_t* mn = rec + 64 + 128;    // [4 pairs][16 rows][2]
      uint8_t* qs = rec + 64 + 256;    // 32 chunks
      for (int j = 0; j < 8; ++j) {
        uint8_t s, m;
        k4_scale_min(j, b.scales, &s, &m);
        sc[j * kR + k] = s;
        mn[(j / 2) * 2 * kR + 2 * k + (j % 2)] = m;
      }
      // Chunk (i, c): low nibbles = sub-block 2i elements 4c.., high nibbles = sub-block 2i+1 elements 4c..
      // (low nibbles: elements 64i + 4c + j, high: + 32)
      for (int i = 0; i < 4; ++i)
        for (int c = 0; c < 8; ++c) {
          uint8_t* chunk = t == DType::Q5_K ? rec + q5k_chunk_at(i, c) : lane(qs, 8 * i + c, 0);
          store32(chunk + 4 * k, load32(b.qs + 32 * i + 4 * c));
        }
      if constexpr (t == DType::Q5_K)  // qh chunk c: qh[4c..4c+3] (bit s of qh[l]: 5th bit of element 32s + l)
        for (int c = 0; c < 8; ++c) store32(rec + q5k_qh_at(c) + 4 * k, load32(b.qh + 4 * c));
      break;
    }
    case DType::Q6_K: {
      BlockQ6_K b;
      std::memcpy(&b, src, sizeof b);
      d16[k] = b.d;
      auto* sc = reinterpret_cast<int8_t*>(rec + 32);  // [16 sub-blocks][16 rows]
      // 16 triples of chunks in the order the kernel reads them: ql chunk h, ql chunk h + 16, qh chunk h.
      auto ql_chunk = [&](int n) { return rec + 32 + 256 + (n % 16) * 192 + (n / 16) * 64; };
      auto qh_chunk = [&](int h) { return rec + 32 + 256 + h * 192 + 128; };
      for (int s = 0; s < 16; ++s) sc[s * kR + k] = b.scales[s];
      // ggml: within half a (128 elements, ql + 64 a, qh + 32 a) element i has the low nibble of ql[i] (i
      // < 64) or the high nibble of ql[i - 64], and bits 2 (i / 32) of qh[i % 32]. So ql chunk n < 16
      // (elements 4n + j of half 0 | of half 1) is ql dwords n | 16 + n, low nibbles; n >= 16 the high
      // nibbles of dwords n - 16 | n; qh chunk h is two_bit_chunk of the qh dwords: whole dwords at once.
      // NOTE: Q6_K and Q3_K were packed through a byte per element (256 per block, bit by bit), 22% of
      // the 1.5B Q4_K_M's load-and-copy samples; with dwords, `ignis bench -p 1 -n 0 -t 2 -r 1` (load,
      // copy, one token) on Zen 5, alternated 3x: 1.5B Q4_K_M 2.2-2.5 -> 1.1-1.7 s, Q3_K_M 3.1 -> 1.2 s.
      uint32_t ql[32], qh[16];
      std::memcpy(ql, b.ql, sizeof ql);
      std::memcpy(qh, b.qh, sizeof qh);
      constexpr uint32_t kLo = 0x0f0f0f0fu;
      for (int n = 0; n < 16; ++n) {
        store32(lane(ql_chunk(n), 0, k), (ql[n] & kLo) | ((ql[16 + n] & kLo) << 4));
        store32(lane(ql_chunk(n + 16), 0, k), ((ql[n] >> 4) & kLo) | (ql[16 + n] & ~kLo));
      }
      for (int hh = 0; hh < 16; ++hh) store32(lane(qh_chunk(hh), 0, k), two_bit_chunk(qh, hh));
      break;
    }
    case DType::Q3_K: {
      BlockQ3_K b;
      std::memcpy(&b, src, sizeof b);
      d16[k] = b.d;
      auto* sc = reinterpret_cast<int8_t*>(rec + 32);  // [16 sub-blocks][16 rows]
      int8_t scales[16];
      q3k_scales(b.scales, scales);
      for (int s = 0; s < 16; ++s) sc[s * kR + k] = scales[s];
      // ggml: element e = 128 a + 32 b + l has low bits (qs[32 a + l] >> 2 b) & 3 and high bit e / 32 of
      // hmask[l]. So lo(h) is two_bit_chunk of the qs dwords, and byte j of hi(m), bit 4 e + u (element
      // 64 u + 4 n + j, n = 2 m + e), is byte j of hmask dword n % 8 shifted by 2 u + n / 8.
      uint32_t qs[16], hm[8];
      std::memcpy(qs, b.qs, sizeof qs);
      std::memcpy(hm, b.hmask, sizeof hm);
      uint8_t* tri = rec + 32 + 256;  // 8 triples of 192 bytes: lo(2m), lo(2m + 1), hi(m)
      for (int h = 0; h < 16; ++h) store32(lane(tri + 192 * (h / 2) + 64 * (h % 2), 0, k), two_bit_chunk(qs, h));
      for (int m = 0; m < 8; ++m) {
        uint32_t hi = 0;
        for (int e = 0; e < 2; ++e) {
          const int n = 2 * m + e;
          for (int u = 0; u < 4; ++u) hi |= ((hm[n % 8] >> (2 * u + n / 8)) & 0x01010101u) << (4 * e + u);
        }
        store32(lane(tri + 192 * m + 128, 0, k), hi);
      }
      break;
    }
    case DType::Q2_K: {
      BlockQ2_K b;
      std::memcpy(&b, src, sizeof b);
      d16[k] = b.d;
      d16[kR + k] = b.dmin;
      for (int i = 0; i < 8; ++i)
        for (int e = 0; e < 2; ++e) rec[64 + (i * kR + k) * 2 + e] = b.scales[2 * i + e];
      for (int c = 0; c < 16; ++c) store32(lane(rec + 64 + 256, c, k), load32(b.qs + 4 * c));
      break;
    }
    default:
      fail("pack_weight: type {} cannot be packed", dtype_name(t));
  }
}

// Packs row groups [g_begin, g_end) of w as groups row0 / kPackRows + g of the packed matrix at dst
// (row0 a multiple of kPackRows). A last partial group is zeroed (rows past n_out stay 0); each is filled
// while it is in cache, from its rows read in order (one sequential stream).
template <DType T>
void pack_groups_of(const WeightView& w, uint8_t* dst, int64_t row0, int64_t g_begin, int64_t g_end) {
  const int64_t nb = w.n_in / block_elems(T);
  const size_t src_row = row_bytes(T, w.n_in);
  const size_t src_block = src_row / static_cast<size_t>(nb);
  constexpr size_t rec = static_cast<size_t>(packed_record_bytes(T));
  const size_t group_bytes = packed_group_bytes(T, w.n_in);
  for (int64_t g = g_begin; g < g_end; ++g) {
    uint8_t* group = dst + (row0 / kR + g) * group_bytes;
    const int64_t n_rows = std::min(kR, w.n_out - g * kR);
    const uint8_t* src = static_cast<const uint8_t*>(w.data) + src_row * static_cast<size_t>(g * kR);
    // Whole groups are not zeroed first: their rows write every byte of the records.
    // NOTE: with the per-block type switch hoisted too, load to first token (bench/load-vs-llamacpp.sh
    // 3, Zen 5 VM) 0.5B Q8_0 1,294 -> 1,301 ms, Qwen3-0.6B Q8_0 1,731 -> 1,464, 0.5B Q4_K_M 1,824 ->
    // 1,577. What is left is mostly the kernel's: faulting in and zeroing the fresh pages (49% of the
    // load's samples, clear_page 20%) against 28% for this loop.
    if (n_rows < kR) std::memset(group, 0, group_bytes);
    for (int64_t k = 0; k < n_rows; ++k)
      for (int64_t b = 0; b < nb; ++b) pack_block<T>(src + k * src_row + b * src_block, group + b * rec, k);
  }
}

void pack_groups(const WeightView& w, uint8_t* dst, int64_t row0, int64_t g_begin, int64_t g_end) {
  switch (w.type) {
    case DType::Q4_0: return pack_groups_of<DType::Q4_0>(w, dst, row0, g_begin, g_end);
    case DType::Q5_0: return pack_groups_of<DType::Q5_0>(w, dst, row0, g_begin, g_end);
    case DType::Q4_1: return pack_groups_of<DType::Q4_1>(w, dst, row0, g_begin, g_end);
    case DType::Q5_1: return pack_groups_of<DType::Q5_1>(w, dst, row0, g_begin, g_end);
    case DType::Q8_0: return pack_groups_of<DType::Q8_0>(w, dst, row0, g_begin, g_end);
    case DType::Q4_K: return pack_groups_of<DType::Q4_K>(w, dst, row0, g_begin, g_end);
    case DType::Q5_K: return pack_groups_of<DType::Q5_K>(w, dst, row0, g_begin, g_end);
    case DType::Q6_K: return pack_groups_of<DType::Q6_K>(w, dst, row0, g_begin, g_end);
    case DType::Q3_K: return pack_groups_of<DType::Q3_K>(w, dst, row0, g_begin, g_end);
    case DType::Q2_K: return pack_groups_of<DType::Q2_K>(w, dst, row0, g_begin, g_end);
    default: fail("pack_weight: type {} cannot be packed", dtype_name(w.type));
  }
}

// Packs the rows of w as rows row0.. of the packed matrix at dst (row0 a multiple of kPackRows), on
// several threads for large matrices (load time: a 0.5B model has ~350 MB to repack).
void pack_rows(const WeightView& w, uint8_t* dst, int64_t row0) {
  // (F16 never comes here: its copy is PackedStore's background work.)
  if (packed_record_bytes(w.type) == 0 || w.n_in % block_elems(w.type) != 0 || row0 % kR != 0)
    fail("pack_weight: type {} with rows of {} cannot be packed", dtype_name(w.type), w.n_in);
  const size_t group_bytes = packed_group_bytes(w.type, w.n_in);
  const int64_t n_groups = row_groups(w.n_out);
  const int64_t n_threads = std::clamp<int64_t>(
      static_cast<int64_t>(group_bytes * static_cast<size_t>(n_groups) / kParallelPackBytes), 1,
      std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (int64_t i = 1; i < n_threads; ++i) {
    const int64_t g0 = n_groups * i / n_threads, g1 = n_groups * (i + 1) / n_threads;
    threads.emplace_back([&, g0, g1] { pack_groups(w, dst, row0, g0, g1); });
  }
  pack_groups(w, dst, row0, 0, n_groups / n_threads);
  for (auto& t : threads) t.join();
}

// The inverse of pack_block for the 32-element types: row k's block of the record `rec`, in ggml's layout.
void unpack_block(DType t, const uint8_t* rec, int64_t k, uint8_t* dst) {
  const auto* d16 = reinterpret_cast<const uint16_t*>(rec);
  const uint8_t* chunks = rec + 32;
  auto unpack_nibbles = [&](uint8_t qs[16]) {
    constexpr uint32_t kLo = 0x0f0f0f0f;
    const uint32_t c0 = load32(chunks + 4 * k), c1 = load32(chunks + 64 + 4 * k);
    const uint32_t c2 = load32(chunks + 128 + 4 * k), c3 = load32(chunks + 192 + 4 * k);
    store32(qs, (c0 & kLo) | ((c2 & kLo) << 4));
    store32(qs + 4, ((c0 >> 4) & kLo) | (((c2 >> 4) & kLo) << 4));
    store32(qs + 8, (c1 & kLo) | ((c3 & kLo) << 4));
    store32(qs + 12, ((c1 >> 4) & kLo) | (((c3 >> 4) & kLo) << 4));
  };
  switch (t) {
    case DType::Q4_0: {
      BlockQ4_0 b;
      b.d = d16[k];
      unpack_nibbles(b.qs);
      std::memcpy(dst, &b, sizeof b);
      break;
    }
    case DType::Q5_0: {
      BlockQ5_0 b;
      b.d = d16[k];
      unpack_nibbles(b.qs);
      store32(b.qh, unpack_fifth_bits(rec + 32 + 256, k));
      std::memcpy(dst, &b, sizeof b);
      break;
    }
    case DType::Q8_0: {
      BlockQ8_0 b;
      b.d = d16[k];
      for (int c = 0; c < 8; ++c) store32(reinterpret_cast<uint8_t*>(b.qs) + 4 * c, load32(chunks + c * 64 + 4 * k) ^ 0x80808080u);
      std::memcpy(dst, &b, sizeof b);
      break;
    }
    default:
      fail("get_row: packed {} rows cannot be read back", dtype_name(t));
  }
}

}  // namespace

namespace {
template <int64_t kStep>
void pack_il_groups(const uint16_t* w, int64_t n_in, int64_t n_out, uint8_t* dst, int64_t g_begin, int64_t g_end) {
  // Row by row: each source row is read front to back, its steps written 16 steps apart into the group
  // (fixed-size copies the compiler inlines; the former per-step memcpy calls made Qwen2.5-0.5B's 1 GB
  // copy take 1.4-2.6 s).
  const int64_t full = n_in / kStep;
  auto* d = reinterpret_cast<uint16_t*>(dst);
  for (int64_t row = g_begin * kR; row < g_end * kR; ++row) {
    uint16_t* o = d + float_copy_index(kStep, row, 0, n_in);
    const int64_t copied = row < n_out ? full : 0;  // rows past n_out: zero
    const uint16_t* src = row < n_out ? w + row * n_in : nullptr;
    for (int64_t s = 0; s < copied; ++s) std::memcpy(o + s * kR * kStep, src + s * kStep, kStep * 2);
    for (int64_t i = copied * kStep; i < n_in; i += kStep) {  // the masked tail step, or a zero row
      uint16_t* t = o + i * kR;
      std::memset(t, 0, kStep * 2);
      if (row < n_out) std::memcpy(t, src + i, static_cast<size_t>(n_in - i) * 2);
    }
  }
}
bool is_float(DType t) { return t == DType::F16 || t == DType::BF16; }
// AVX2: F16 and BF16 copied in the background as they are (ggml's rows, onto the store's huge pages).
bool float_rows_copied(DType t) { return is_float(t) && best_isa() == Isa::kAvx2; }
// Rows [g_begin, g_end) x 16 of w (n_out rows of n_in 2-byte elements) as they are; rows past n_out: zero.
void copy_row_groups(const uint16_t* w, int64_t n_in, int64_t n_out, uint8_t* dst, int64_t g_begin, int64_t g_end) {
  const size_t rb = static_cast<size_t>(n_in) * 2;
  const int64_t r0 = g_begin * kR, r1 = g_end * kR, real = std::clamp(n_out, r0, r1);
  uint8_t* d = dst + rb * static_cast<size_t>(r0);
  std::memcpy(d, w + r0 * n_in, rb * static_cast<size_t>(real - r0));
  std::memset(d + rb * static_cast<size_t>(real - r0), 0, rb * static_cast<size_t>(r1 - real));
}
}  // namespace

void pack_float_il_groups(DType t, const uint16_t* w, int64_t n_in, int64_t n_out, uint8_t* dst, int64_t g_begin,
                          int64_t g_end) {
  if (t == DType::BF16) return pack_il_groups<kBf16CopyStep>(w, n_in, n_out, dst, g_begin, g_end);
  pack_il_groups<kF16CopyStep>(w, n_in, n_out, dst, g_begin, g_end);
}

size_t packed_group_bytes(DType t, int64_t n_in) {
  if (float_rows_copied(t)) return static_cast<size_t>(n_in) * 2 * kR;  // AVX2: ggml's rows
  if (t == DType::F16) {  // 1 KB chunks of 32 elements on AMX, else steps of 16 elements of 16 rows
    if (f16_on_amx()) return static_cast<size_t>((n_in + 31) / 32) * 1024;
    return static_cast<size_t>((n_in + kF16CopyStep - 1) / kF16CopyStep) * kF16CopyStep * 2 * kR;
  }
  if (t == DType::BF16) return static_cast<size_t>((n_in + kBf16CopyStep - 1) / kBf16CopyStep) * kBf16CopyStep * 2 * kR;
  return static_cast<size_t>(n_in / block_elems(t)) * static_cast<size_t>(packed_record_bytes(t));
}

size_t packed_act_row_bytes(DType t, int64_t n_in) {
  if (t == DType::F16) return static_cast<size_t>(f16_on_amx() ? (n_in + 31) / 32 * 32 : n_in) * sizeof(float);
  if (float_rows_copied(t)) return static_cast<size_t>(n_in) * sizeof(float);  // BF16 off AVX-512: bf16-rounded f32
  if (t == DType::BF16) return static_cast<size_t>((n_in + kBf16CopyStep - 1) / kBf16CopyStep * kBf16CopyStep) * 2;
  if (block_elems(t) == kQKK) return static_cast<size_t>(n_in / kQKK) * (sizeof(BlockQ8_K) + 64);
  return static_cast<size_t>(n_in / kQK) * (kQK + 8);
}

bool can_pack(const WeightView& w) {
  if (w.packed || !w.data || w.n_in <= 0 || w.n_out <= 0) return false;
  if (is_float(w.type)) return packed_kernels(w.type).dot1 != nullptr;
  if (packed_record_bytes(w.type) == 0) return false;
  if (w.n_in % block_elems(w.type) != 0) return false;
  return packed_kernels(w.type).dot1 != nullptr;
}

size_t packed_bytes(const WeightView& w) {
  return packed_group_bytes(w.type, w.n_in) * static_cast<size_t>(row_groups(w.n_out));
}

void pack_weight(const WeightView& w, uint8_t* dst) { pack_rows(w, dst, 0); }

bool packed_rows_readable(DType t) {
  return t == DType::Q4_0 || t == DType::Q5_0 || t == DType::Q8_0 || is_float(t);
}

void packed_get_row(const WeightView& w, int64_t row, float* dst) {
  if (!packed_rows_readable(w.type)) fail("get_row: packed {} rows cannot be read back", dtype_name(w.type));
  const DTypeTraits* tr = dtype_traits(w.type);
  if (is_float(w.type)) {  // the copy (F16: off AMX) once it exists (pack_float_il_groups), else ggml's rows
    const bool amx = w.type == DType::F16 && f16_on_amx();
    const void* copy = w.repacked && !amx ? w.repacked->load(std::memory_order_acquire) : nullptr;
    if (!copy || float_rows_copied(w.type)) {  // ggml's rows: the file's, or (AVX2) the copy of them
      const void* rows = copy ? copy : w.data;
      tr->to_float(static_cast<const uint8_t*>(rows) + row_bytes(w.type, w.n_in) * static_cast<size_t>(row), dst, w.n_in);
      return;
    }
    const int64_t step = float_copy_step(w.type);
    for (int64_t i = 0; i < w.n_in; i += step)
      tr->to_float(static_cast<const uint16_t*>(copy) + float_copy_index(step, row, i, w.n_in), dst + i,
                   std::min(step, w.n_in - i));
    return;
  }
  const void* packed = w.data;
  if (w.repacked) {  // copied in the background: ggml's rows until the copy exists
    packed = w.repacked->load(std::memory_order_acquire);
    if (!packed) {
      tr->to_float(static_cast<const uint8_t*>(w.data) + row_bytes(w.type, w.n_in) * static_cast<size_t>(row), dst, w.n_in);
      return;
    }
  }
  const int64_t nb = w.n_in / kQK;
  const size_t rec = static_cast<size_t>(packed_record_bytes(w.type));
  const uint8_t* group = static_cast<const uint8_t*>(packed) + packed_group_bytes(w.type, w.n_in) * static_cast<size_t>(row / kR);
  alignas(8) uint8_t block[64];
  for (int64_t b = 0; b < nb; ++b) {
    unpack_block(w.type, group + b * rec, row % kR, block);
    tr->to_float(block, dst + b * kQK, kQK);
  }
}

void pack_activation(DType t, const float* x, int64_t n_in, uint8_t* dst) {
  if (t == DType::F16) {
    // Rounded to f16 as ggml-cpu converts F16 products' activations, kept as (exact) f32 values.
    // (Packed F16 weights exist only where the AVX-512 or AVX2 kernels run.) On AMX: split for its tiles.
    if (f16_on_amx()) return f16_split_activation(x, n_in, dst);
    if (best_isa() == Isa::kAvx512) {
      f16_round_avx512(x, reinterpret_cast<float*>(dst), n_in);
    } else {
      f16_round_avx2(x, reinterpret_cast<float*>(dst), n_in);
    }
    return;
  }
  // ggml's vec_dot_type: bf16 (for vdpbf16ps on AVX-512), as f32 values on AVX2.
  if (t == DType::BF16 && best_isa() == Isa::kAvx2) return bf16_round_avx2(x, reinterpret_cast<float*>(dst), n_in);
  if (t == DType::BF16)
    return bf16_round_avx512(x, reinterpret_cast<uint16_t*>(dst), n_in, (n_in + kBf16CopyStep - 1) / kBf16CopyStep * kBf16CopyStep);
  if (block_elems(t) == kQKK) {
    static const FromFloatFn quantize_k = best_act_quantizer(DType::Q8_K);
    const int64_t nsb = n_in / kQKK;
    quantize_k(x, dst, n_in);
    auto* side = reinterpret_cast<int32_t*>(dst + nsb * sizeof(BlockQ8_K));
    for (int64_t s = 0; s < nsb; ++s) {
      BlockQ8_K b;
      std::memcpy(&b, dst + s * sizeof b, sizeof b);
      int32_t* o = side + 16 * s;
      if (t == DType::Q4_K || t == DType::Q5_K) {
        // Pairs of 32-element sums (sub-blocks 2i, 2i+1) as two int16 for vpdpwssd with the mins.
        for (int i = 0; i < 4; ++i) {
          const int32_t s0 = b.bsums[4 * i] + b.bsums[4 * i + 1], s1 = b.bsums[4 * i + 2] + b.bsums[4 * i + 3];
          o[i] = static_cast<int32_t>((static_cast<uint32_t>(s0) & 0xffffu) | (static_cast<uint32_t>(s1) << 16));
        }
        for (int i = 4; i < 16; ++i) o[i] = 0;
      } else if (t == DType::Q2_K) {
        // The 16-element sums of sub-blocks (2i, 2i+1) as two int16 for vpdpwssd with the mins.
        for (int i = 0; i < 8; ++i)
          o[i] = static_cast<int32_t>((static_cast<uint32_t>(b.bsums[2 * i]) & 0xffffu) |
                                      (static_cast<uint32_t>(b.bsums[2 * i + 1]) << 16));
        for (int i = 8; i < 16; ++i) o[i] = 0;
      } else {
        const int off = t == DType::Q3_K ? 4 : 32;  // quants stored as q + 32 (Q6_K), q + 4 (Q3_K)
        for (int i = 0; i < 16; ++i) o[i] = -off * b.bsums[i];
      }
    }
    return;
  }
  const bool with_sum = t == DType::Q4_1 || t == DType::Q5_1;
  const int shift = t == DType::Q4_0 ? 3 : t == DType::Q5_0 ? 4 : 7;
  const int64_t nb = n_in / kQK;
  if (best_isa() == Isa::kAvx512) return pack_act_q8_0_avx512(x, nb, shift, dst, with_sum);
  auto* dx = reinterpret_cast<float*>(dst + nb * kQK);
  auto* cx = reinterpret_cast<int32_t*>(dst + nb * (kQK + 4));
  static const FromFloatFn quantize = best_act_quantizer(DType::Q8_0);
  static const FromFloatFn quantize_1 = best_act_quantizer(DType::Q8_1);
  BlockQ8_0 tmp[16];
  BlockQ8_1 tmp1[16];
  for (int64_t b0 = 0; b0 < nb; b0 += 16) {
    const int64_t n = std::min<int64_t>(16, nb - b0);
    if (with_sum) {
      quantize_1(x + b0 * kQK, tmp1, n * kQK);
    } else {
      quantize(x + b0 * kQK, tmp, n * kQK);
    }
    for (int64_t i = 0; i < n; ++i) {
      const int8_t* qs = with_sum ? tmp1[i].qs : tmp[i].qs;
      int32_t sum = 0;
      for (int e = 0; e < kQK; ++e) sum += qs[e];
      std::memcpy(dst + (b0 + i) * kQK, qs, kQK);
      dx[b0 + i] = f16_to_f32(with_sum ? tmp1[i].d : tmp[i].d);
      if (with_sum) {
        const float s = f16_to_f32(tmp1[i].s);
        std::memcpy(cx + b0 + i, &s, 4);
      } else {
        cx[b0 + i] = -(sum * (1 << shift));
      }
    }
  }
}

uint8_t* PackedStore::alloc(size_t n, const WeightView& w) {
  // NOTE: the copies are cut one after another, in the loader's order, from 256 MiB mappings on
  // transparent huge pages (2 MiB): packing first-touches every page, and 4 KiB faults were ~40% of
  // load time (0.5B Q4_0: ~85k faults), and the products then stream each weight, and one after the
  // next, without a TLB miss or a stop of the hardware prefetcher every 4 KiB. Each weight had its own
  // buffer before, and only a buffer's whole 2 MiB pages were huge: none of a Qwen2.5-0.5B layer's
  // 0.5-2.5 MB matrices, while its 145 MB output head streamed 20% faster per byte. tg128 at 2
  // threads on Zen 5, alternated three times: Qwen2.5-0.5B Q4_0 150-160 -> 161-174 t/s, Qwen2.5-1.5B
  // Q4_0 48-50 -> 49-53, the 0.5B Q8_0, F16 and Q4_K_M files within the noise (peak RSS +4 MB).
  // (Qwen2.5-0.5B F16 on AMX, tg64 at 2 threads: 23.1-24.0 t/s, 18.7-19.2 with 4 KiB pages.) Unused
  // ends of a mapping are never touched, so they stay out of RSS (at most one partial 2 MiB page each). The
  // price is on a VM whose balloon reports free memory to its host: a fresh 2 MiB page then costs the
  // host's faults, and first-touching 1 GiB took 1.2-2.2 s right after another process's run, 0.12-0.32 s
  // warm, 0.32 s in 4 KiB pages either way (the copies are made in the background where that matters).
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t need = (n + kAlign - 1) / kAlign * kAlign;
  std::lock_guard lock(mu_);
  if (chunks_.empty() || chunks_.back().size - chunks_.back().used < need) {
    // (Where a whole chunk cannot be mapped, e.g. under strict overcommit, one the weight's size.)
    const size_t fit = (need + kHuge - 1) / kHuge * kHuge;
    size_t size = std::max(kChunkBytes, fit), map_bytes = 0;
    void* map = MAP_FAILED;
    for (;;) {
      map_bytes = size + kHuge;  // room to align the base
      map = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (map != MAP_FAILED || size == fit) break;
      size = fit;
    }
    if (map == MAP_FAILED)
      fail("packing a {} weight [{}, {}]: cannot map {} bytes", dtype_name(w.type), w.n_in, w.n_out, map_bytes);
    auto* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(map) + kHuge - 1) & ~uintptr_t{kHuge - 1});
    ::madvise(base, size, MADV_HUGEPAGE);
    try {
      chunks_.push_back(Chunk{map, map_bytes, base, size, 0});
    } catch (...) {
      ::munmap(map, map_bytes);
      throw;
    }
  }
  Chunk& c = chunks_.back();
  uint8_t* p = c.base + c.used;
  c.used += need;
  bytes_.fetch_add(n, std::memory_order_relaxed);
  return p;
}

// The background copies (copied_in_background): one weight after another, each packed in slices of row groups
// so that the destructor's stop is seen within one slice; published with release order, so that a
// product that sees the pointer sees the whole copy.
// NOTE (measured on a 2-vCPU Sapphire Rapids class VM, Qwen2.5-0.5B F16): made at load, the ~1 GB copy
// took 0.3-1.9 s (`ignis bench` load_ms; its fresh huge pages cost the host's faults on this VM, see
// alloc), and load to first token (bench/load-vs-llamacpp.sh 5) was 1,470 ms median against
// llama-simple's 908; in the background, load_ms is 25-28 and first token 365 ms against 864. Until the
// copy is made the products run on the rows kernel (packed_f16_amx.cpp), which transposes the rows as
// it reads them: decode there is 14-15 t/s at 2 threads against 21 on the copy, prefill about 10%
// slower. Once the copies are made, pp512 / tg64 at 2 threads 701-712 / 20.8-20.9 t/s against
// 656-676 / 21.0-21.3 made at load, peak RSS 1,090 MB against 1,052 (llama-bench: 1,959).
void PackedStore::repack_loop(bool idle) {
  // Idle priority: the copies take the CPU time that the products leave (the main thread waiting for
  // a request, or for wait()), not the first token's.
  // NOTE (Zen 5, 2 vCPU, Qwen2.5-0.5B F16): the 1 GB copy costs 1.2-2.5 s of one core here, mostly
  // the kernel zeroing fresh huge pages (clear_page 42% of its profile, the copy loop 25%); at normal
  // priority it shared the cores with the first token: bench/load-vs-llamacpp.sh 5, 886 ms against
  // 724 with no copy (llama-simple 826-830).
  if (idle) {
    sched_param param{};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
  }
  for (;;) {
    Job* job = nullptr;
    int64_t g0 = 0, g1 = 0;
    {
      std::unique_lock lock(mu_);
      auto open = [&]() -> Job* {
        for (Job& j : jobs_)
          if (j.next < j.n_groups) return &j;
        return nullptr;
      };
      if (idle) cv_.wait(lock, [&] { return stop_ || open(); });
      job = stop_ ? nullptr : open();
      if (!job) return;
      g0 = job->next;
      g1 = std::min(job->n_groups, g0 + kSliceGroups);
      job->next = g1;
    }
    pack_slice(*job, g0, g1);
    std::lock_guard lock(mu_);
    job->done += g1 - g0;
    if (job->done < job->n_groups) continue;
    job->slot->store(job->dst, std::memory_order_release);
    if (on_repacked_)
      for (const WeightView& p : job->parts()) on_repacked_(p.data, row_bytes(p.type, p.n_in) * static_cast<size_t>(p.n_out));
    jobs_.remove_if([&](const Job& j) { return &j == job; });
    if (--unfinished_ == 0) pending_.store(false, std::memory_order_release);
    cv_.notify_all();
  }
}

std::span<const WeightView> PackedStore::Job::parts() const {
  return w.parts ? std::span<const WeightView>(w.parts, w.n_parts) : std::span<const WeightView>(&w, 1);
}

void PackedStore::pack_slice(const Job& job, int64_t g0, int64_t g1) {
  // The parts of a fused matrix one after another (all but the last fill whole row groups, so part
  // i's groups are the matrix's from its first row / 16).
  const size_t group_bytes = packed_group_bytes(job.w.type, job.w.n_in);
  int64_t row0 = 0;
  for (const WeightView& p : job.parts()) {
    const int64_t first = row0 / kR, n_groups = row_groups(p.n_out);
    const int64_t a = std::max<int64_t>(g0 - first, 0), b = std::min<int64_t>(g1 - first, n_groups);
    if (a < b) {
      const auto* src = static_cast<const uint16_t*>(p.data);
      uint8_t* part = job.dst + first * group_bytes;
      if (!is_float(p.type))
        pack_groups(p, job.dst, row0, a, b);
      else if (p.type == DType::F16 && f16_on_amx())
        pack_f16_amx_groups(src, p.n_in, p.n_out, part, a, b);
      else if (float_rows_copied(p.type))
        copy_row_groups(src, p.n_in, p.n_out, part, a, b);
      else
        pack_float_il_groups(p.type, src, p.n_in, p.n_out, part, a, b);
      if (on_repacked_) {  // the slice's rows, read again only by products until the copy is published
        const size_t rb = row_bytes(p.type, p.n_in);
        const int64_t r0 = a * kR, r1 = std::min(p.n_out, b * kR);
        on_repacked_(reinterpret_cast<const uint8_t*>(src) + rb * static_cast<size_t>(r0), rb * static_cast<size_t>(r1 - r0));
      }
    }
    row0 += p.n_out;
  }
}

void PackedStore::repack_later(WeightView& v, std::span<const WeightView> parts) {
  uint8_t* dst = nullptr;
  try {
    dst = alloc(packed_bytes(v), v);
  } catch (const Error&) {
    dst = nullptr;  // no memory for the copy: the weight stays on its rows (its slot stays empty)
  }
  std::lock_guard lock(mu_);
  v.repacked = &slots_.emplace_back();
  if (!parts.empty()) {
    const std::vector<WeightView>& kept = fused_parts_.emplace_back(parts.begin(), parts.end());
    v.parts = kept.data();
    v.n_parts = static_cast<int>(kept.size());
  }
  if (!dst) return;
  jobs_.push_back({v, &slots_.back(), dst, row_groups(v.n_out)});
  ++unfinished_;
  pending_.store(true, std::memory_order_release);
  if (!worker_.joinable()) {
    worker_ = std::thread([this] { repack_loop(true); });
    // An idle-priority thread gets almost no time while the products keep both cores busy (a server
    // under load from its start), and an unprivileged thread cannot leave SCHED_IDLE. So a second
    // thread, at the loading thread's priority, takes the slices still unclaimed helper_after_ after the
    // first job; the idle one then holds up at most the slice it is packing.
    helper_ = std::thread([this] {
      {
        std::unique_lock lock(mu_);
        if (cv_.wait_for(lock, helper_after_, [&] { return stop_; })) return;
      }
      repack_loop(false);
    });
  }
  cv_.notify_all();
}

void PackedStore::wait() const {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return unfinished_ == 0; });
}

void PackedStore::finish(ThreadPool& pool) {
  if (!pending_.load(std::memory_order_acquire)) return;
  pool.run([this](int, int) { repack_loop(false); });
  wait();
}

PackedStore::~PackedStore() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (helper_.joinable()) helper_.join();
  for (const Chunk& c : chunks_) ::munmap(c.map, c.map_bytes);
}

// NOTE: the floats are cut from heap blocks of their own. Cut from the weights' chunks (alloc), each
// layer's norm vectors sat between the copies queued for the background, so that copying a 4 KB vector
// first-touched (and zeroed) a whole 2 MiB page on the loading thread: Qwen3-0.6B Q8_0's 113 vectors
// were about 230 MB of zeroing before its first token (BENCHMARKS.md, thirtieth session).
const float* PackedStore::copy_floats(const float* src, int64_t n) {
  const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + kAlign - 1) / kAlign * kAlign;
  std::lock_guard lock(mu_);
  if (float_blocks_.empty() || float_block_size_ - float_block_used_ < bytes) {
    const size_t size = std::max(kFloatBlockBytes, bytes);
    void* p = std::aligned_alloc(kAlign, size);
    if (!p) fail("copying a vector of {} floats: out of memory", n);
    float_blocks_.emplace_back(static_cast<uint8_t*>(p));
    float_block_size_ = size;
    float_block_used_ = 0;
  }
  uint8_t* dst = float_blocks_.back().get() + float_block_used_;
  float_block_used_ += bytes;
  bytes_.fetch_add(static_cast<size_t>(n) * sizeof(float), std::memory_order_relaxed);
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  return reinterpret_cast<const float*>(dst);
}

WeightView PackedStore::add(const WeightView& w) {
  if (!can_pack(w)) return w;
  WeightView v = w;
  if (copied_in_background(w.type)) {  // the rows until the copy (from the background) exists
    v.packed = true;
    repack_later(v, {});
    return v;
  }
  auto* dst = alloc(packed_bytes(w), w);
  pack_weight(w, dst);
  v.data = dst;
  v.packed = true;
  return v;
}

WeightView PackedStore::add_fused(std::span<const WeightView> parts) {
  if (parts.empty()) return {};
  WeightView f = parts[0];
  f.n_out = 0;
  for (const WeightView& p : parts) {
    // Every part but the last must fill whole row groups so the parts' rows stay consecutive.
    if (!can_pack(p) || p.type != f.type || p.n_in != f.n_in) return {};
    if (&p != &parts.back() && p.n_out % kR != 0) return {};
    f.n_out += p.n_out;
  }
  if (copied_in_background(f.type)) {  // copied in the background; the parts' rows until then
    f.packed = true;
    repack_later(f, parts);
    return f;
  }
  auto* dst = alloc(packed_bytes(f), f);
  int64_t row0 = 0;
  for (const WeightView& p : parts) {
    pack_rows(p, dst, row0);
    row0 += p.n_out;
  }
  f.data = dst;
  f.packed = true;
  return f;
}

namespace {
// False only where the environment sets `name` to 0 (IGNIS_AMX, IGNIS_AVXVNNI).
bool not_turned_off(const char* name) {
  const char* env = std::getenv(name);
  return !(env && std::strcmp(env, "0") == 0);
}
}  // namespace

bool use_amx() {
  static const bool on = not_turned_off("IGNIS_AMX") && best_isa() == Isa::kAvx512 && amx_supported();
  return on;
}

bool avxvnni_supported() {
  static const bool ok = [] {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return isa_supported(Isa::kAvx2) && __builtin_cpu_supports("avxvnni");
#else
    return false;
#endif
  }();
  return ok;
}

bool use_avxvnni() {
  static const bool on = not_turned_off("IGNIS_AVXVNNI") && best_isa() == Isa::kAvx2 && avxvnni_supported();
  return on;
}

bool f16_on_amx() {
  static const bool on = use_amx() && amx_bf16_supported();
  return on;
}

bool f16_copied() { return best_isa() == Isa::kAvx512; }

bool copied_in_background(DType t) {
  if (float_rows_copied(t)) return true;
  if (t == DType::F16) return f16_copied();
  if (t == DType::BF16) return best_isa() == Isa::kAvx512;
  if (best_isa() != Isa::kAvx512 || use_amx()) return false;
  return t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q5_0 || t == DType::Q5_1 || t == DType::Q8_0 ||
         t == DType::Q2_K || t == DType::Q3_K || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K;
}

PackedKernels packed_kernels_rows(DType t) {
  if (float_rows_copied(t)) return packed_kernels_avx2(t);  // the same kernels on the rows and the copy
  if (t == DType::F16) return packed_kernels_f16_rows();
  return copied_in_background(t) ? packed_kernels_rows_avx512(t) : PackedKernels{};
}

PackedKernels packed_kernels_f16_rows() {
  return f16_on_amx() ? packed_kernels_f16_amx(true) : packed_kernels_float_avx512(DType::F16, true);
}

PackedKernels packed_kernels(DType t) {
  if (best_isa() == Isa::kAvx512) return use_amx() ? packed_kernels_amx(t) : packed_kernels_avx512(t);
  if (best_isa() == Isa::kAvx2) return use_avxvnni() ? packed_kernels_avxvnni(t) : packed_kernels_avx2(t);
  return {};
}

}  // namespace ignis::cpu
