// Packing of weights and activations into the row-interleaved layouts (see packed.h).
#include "backend/cpu/packed.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "core/fp16.h"
#include "core/quant_blocks.h"

namespace ignis::cpu {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kParallelPackBytes = size_t{4} << 20;  // matrices at least this large pack on several threads
constexpr int64_t kR = kPackRows;

int64_t row_groups(int64_t n_out) { return (n_out + kR - 1) / kR; }

int64_t block_elems(DType t) { return t == DType::Q4_K || t == DType::Q6_K ? kQKK : kQK; }

// The 4 bytes of lane k in chunk c of a record region: region + c * 64 + 4 * k.
inline uint8_t* lane(uint8_t* region, int64_t c, int64_t k) { return region + c * 64 + 4 * k; }

// The 32 nibbles of a Q4_0 / Q5_0 block (element e < 16 in the low nibble of qs[e], e >= 16 in the high
// nibble of qs[e - 16]) as row k's lanes of 4 chunks: chunk m low nibbles = group 2m, high = group 2m+1.
void pack_nibbles(const uint8_t* qs, uint8_t* chunks, int64_t k) {
  auto nib = [&](int e) { return e < 16 ? (qs[e] & 0x0f) : (qs[e - 16] >> 4); };
  for (int m = 0; m < 4; ++m)
    for (int j = 0; j < 4; ++j) lane(chunks, m, k)[j] = static_cast<uint8_t>(nib(8 * m + j) | (nib(8 * m + 4 + j) << 4));
}

// Writes row k's block `src` (ggml layout) into the record `rec` of its row group.
void pack_block(DType t, const uint8_t* src, uint8_t* rec, int64_t k) {
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
      uint32_t qh;
      std::memcpy(&qh, b.qh, 4);
      pack_nibbles(b.qs, rec + 32, k);
      // Mask of element group g (elements 4g..4g+3): bit 4k + j = 5th bit of element 4g + j of row k.
      auto* masks = reinterpret_cast<uint64_t*>(rec + 32 + 256);
      for (int g = 0; g < 8; ++g)
        for (int j = 0; j < 4; ++j)
          if ((qh >> (4 * g + j)) & 1) masks[g] |= uint64_t{1} << (4 * k + j);
      break;
    }
    case DType::Q8_0: {
      BlockQ8_0 b;
      std::memcpy(&b, src, sizeof b);
      d16[k] = b.d;
      for (int c = 0; c < 8; ++c)
        for (int j = 0; j < 4; ++j) lane(rec + 32, c, k)[j] = static_cast<uint8_t>(b.qs[4 * c + j] + 128);
      break;
    }
    case DType::Q4_K: {
      BlockQ4_K b;
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
      for (int i = 0; i < 4; ++i)
        for (int c = 0; c < 8; ++c)
          for (int j = 0; j < 4; ++j) {
            const uint8_t v = b.qs[32 * i + 4 * c + j];  // low: element 64i + 4c + j, high: + 32
            lane(qs, 8 * i + c, k)[j] = v;
          }
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
      uint8_t q[kQKK];
      for (int n = 0; n < 2; ++n) {
        const uint8_t* l = b.ql + 64 * n;
        const uint8_t* h = b.qh + 32 * n;
        for (int i = 0; i < 32; ++i) {
          q[128 * n + i] = static_cast<uint8_t>((l[i] & 0xf) | (((h[i] >> 0) & 3) << 4));
          q[128 * n + i + 32] = static_cast<uint8_t>((l[i + 32] & 0xf) | (((h[i] >> 2) & 3) << 4));
          q[128 * n + i + 64] = static_cast<uint8_t>((l[i] >> 4) | (((h[i] >> 4) & 3) << 4));
          q[128 * n + i + 96] = static_cast<uint8_t>((l[i + 32] >> 4) | (((h[i] >> 6) & 3) << 4));
        }
      }
      // ql chunk n: low nibbles = group n (elements 4n..4n+3), high nibbles = group n + 32.
      for (int n = 0; n < 32; ++n)
        for (int j = 0; j < 4; ++j)
          lane(ql_chunk(n), 0, k)[j] = static_cast<uint8_t>((q[4 * n + j] & 0xf) | ((q[4 * (n + 32) + j] & 0xf) << 4));
      // qh chunk h: bits 2c..2c+1 of byte j = high 2 bits of element 4 * (h + 16c) + j.
      for (int hh = 0; hh < 16; ++hh)
        for (int j = 0; j < 4; ++j) {
          uint8_t v = 0;
          for (int c = 0; c < 4; ++c) v |= static_cast<uint8_t>((q[4 * (hh + 16 * c) + j] >> 4) << (2 * c));
          lane(qh_chunk(hh), 0, k)[j] = v;
        }
      break;
    }
    default:
      fail("pack_weight: type {} cannot be packed", dtype_name(t));
  }
}

// Packs rows [r_begin, r_end) of w as rows row0 + r of the packed matrix at dst (row0 and r_begin
// multiples of kPackRows; the row groups touched must have been zeroed).
void pack_range(const WeightView& w, uint8_t* dst, int64_t row0, int64_t r_begin, int64_t r_end) {
  const int64_t nb = w.n_in / block_elems(w.type);
  const size_t src_row = row_bytes(w.type, w.n_in);
  const size_t src_block = src_row / static_cast<size_t>(nb);
  const size_t rec = static_cast<size_t>(packed_record_bytes(w.type));
  const size_t group_bytes = packed_group_bytes(w.type, w.n_in);
  for (int64_t r = r_begin; r < r_end; ++r) {
    const uint8_t* src = static_cast<const uint8_t*>(w.data) + src_row * static_cast<size_t>(r);
    uint8_t* group = dst + ((row0 + r) / kR) * group_bytes;
    for (int64_t b = 0; b < nb; ++b) pack_block(w.type, src + b * src_block, group + b * rec, r % kR);
  }
}

// Packs the rows of w as rows row0.. of the packed matrix at dst (row0 a multiple of kPackRows), on
// several threads for large matrices (load time: a 0.5B model has ~350 MB to repack).
void pack_rows(const WeightView& w, uint8_t* dst, int64_t row0) {
  if (packed_record_bytes(w.type) == 0 || w.n_in % block_elems(w.type) != 0 || row0 % kR != 0)
    fail("pack_weight: type {} with rows of {} cannot be packed", dtype_name(w.type), w.n_in);
  const size_t group_bytes = packed_group_bytes(w.type, w.n_in);
  const int64_t n_groups = row_groups(w.n_out);
  std::memset(dst + (row0 / kR) * group_bytes, 0, group_bytes * static_cast<size_t>(n_groups));
  const int64_t n_threads = std::clamp<int64_t>(
      static_cast<int64_t>(group_bytes * static_cast<size_t>(n_groups) / kParallelPackBytes), 1,
      std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (int64_t i = 1; i < n_threads; ++i) {
    const int64_t g0 = n_groups * i / n_threads, g1 = n_groups * (i + 1) / n_threads;
    threads.emplace_back([&, g0, g1] { pack_range(w, dst, row0, g0 * kR, std::min(w.n_out, g1 * kR)); });
  }
  pack_range(w, dst, row0, 0, std::min(w.n_out, n_groups / n_threads * kR));
  for (auto& t : threads) t.join();
}

}  // namespace

int64_t packed_record_bytes(DType t) {
  switch (t) {
    case DType::Q4_0: return 32 + 256;
    case DType::Q5_0: return 32 + 256 + 64;
    case DType::Q8_0: return 32 + 512;
    case DType::Q4_K: return 64 + 256 + 2048;
    case DType::Q6_K: return 32 + 256 + 2048 + 1024;
    default: return 0;
  }
}

size_t packed_group_bytes(DType t, int64_t n_in) {
  return static_cast<size_t>(n_in / block_elems(t)) * static_cast<size_t>(packed_record_bytes(t));
}

size_t packed_act_row_bytes(DType t, int64_t n_in) {
  if (t == DType::F16) return static_cast<size_t>(n_in) * sizeof(float);
  if (block_elems(t) == kQKK) return static_cast<size_t>(n_in / kQKK) * (sizeof(BlockQ8_K) + 64);
  return static_cast<size_t>(n_in / kQK) * (kQK + 8);
}

bool can_pack(const WeightView& w) {
  if (w.packed || !w.data || w.n_in <= 0 || w.n_out <= 0) return false;
  if (w.type == DType::F16) return packed_kernels(w.type).dot1 != nullptr;
  if (packed_record_bytes(w.type) == 0) return false;
  if (w.n_in % block_elems(w.type) != 0) return false;
  return packed_kernels(w.type).dot1 != nullptr;
}

size_t packed_bytes(const WeightView& w) {
  if (w.type == DType::F16) return 0;
  return packed_group_bytes(w.type, w.n_in) * static_cast<size_t>(row_groups(w.n_out));
}

void pack_weight(const WeightView& w, uint8_t* dst) { pack_rows(w, dst, 0); }

void pack_activation(DType t, const float* x, int64_t n_in, uint8_t* dst) {
  if (t == DType::F16) {
    // Rounded to f16 as ggml-cpu converts F16 products' activations, kept as (exact) f32 values.
    auto* y = reinterpret_cast<float*>(dst);
    for (int64_t i = 0; i < n_in; ++i) y[i] = f16_to_f32(f32_to_f16(x[i]));
    return;
  }
  if (block_elems(t) == kQKK) {
    static const FromFloatFn quantize_k = best_act_quantizer(DType::Q8_K);
    const int64_t nsb = n_in / kQKK;
    quantize_k(x, dst, n_in);
    auto* side = reinterpret_cast<int32_t*>(dst + nsb * sizeof(BlockQ8_K));
    for (int64_t s = 0; s < nsb; ++s) {
      BlockQ8_K b;
      std::memcpy(&b, dst + s * sizeof b, sizeof b);
      int32_t* o = side + 16 * s;
      if (t == DType::Q4_K) {
        // Pairs of 32-element sums (sub-blocks 2i, 2i+1) as two int16 for vpdpwssd with the mins.
        for (int i = 0; i < 4; ++i) {
          const int32_t s0 = b.bsums[4 * i] + b.bsums[4 * i + 1], s1 = b.bsums[4 * i + 2] + b.bsums[4 * i + 3];
          o[i] = static_cast<int32_t>((static_cast<uint32_t>(s0) & 0xffffu) | (static_cast<uint32_t>(s1) << 16));
        }
        for (int i = 4; i < 16; ++i) o[i] = 0;
      } else {
        for (int i = 0; i < 16; ++i) o[i] = -32 * b.bsums[i];  // Q6_K: quants stored as q + 32
      }
    }
    return;
  }
  static const FromFloatFn quantize = best_act_quantizer(DType::Q8_0);
  const int shift = t == DType::Q4_0 ? 3 : t == DType::Q5_0 ? 4 : 7;
  const int64_t nb = n_in / kQK;
  auto* dx = reinterpret_cast<float*>(dst + nb * kQK);
  auto* cx = reinterpret_cast<int32_t*>(dst + nb * (kQK + 4));
  BlockQ8_0 tmp[16];
  for (int64_t b0 = 0; b0 < nb; b0 += 16) {
    const int64_t n = std::min<int64_t>(16, nb - b0);
    quantize(x + b0 * kQK, tmp, n * kQK);
    for (int64_t i = 0; i < n; ++i) {
      int32_t sum = 0;
      for (int e = 0; e < kQK; ++e) sum += tmp[i].qs[e];
      std::memcpy(dst + (b0 + i) * kQK, tmp[i].qs, kQK);
      dx[b0 + i] = f16_to_f32(tmp[i].d);
      cx[b0 + i] = -(sum * (1 << shift));
    }
  }
}

void PackedStore::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

uint8_t* PackedStore::alloc(size_t n, const WeightView& w) {
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlign, (n + kAlign - 1) / kAlign * kAlign));
  if (!p) fail("packing a {} weight [{}, {}]: cannot allocate {} bytes", dtype_name(w.type), w.n_in, w.n_out, n);
  bufs_.emplace_back(p);
  bytes_ += n;
  return p;
}

WeightView PackedStore::add(const WeightView& w) {
  if (!can_pack(w)) return w;
  WeightView v = w;
  if (w.type == DType::F16) {  // F16 keeps its layout: only the kernel (f32 activations) differs
    v.packed = true;
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
    if (!can_pack(p) || p.type != f.type || p.n_in != f.n_in || p.type == DType::F16) return {};
    if (&p != &parts.back() && p.n_out % kR != 0) return {};
    f.n_out += p.n_out;
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

PackedKernels packed_kernels(DType t) {
  if (best_isa() != Isa::kAvx512) return {};
  return packed_kernels_avx512(t);
}

}  // namespace ignis::cpu
