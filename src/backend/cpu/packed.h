// Weights repacked into a row-interleaved layout for AVX-512 VNNI and AVX2 (Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K; BF16 on AVX-512): at load, or after it in the background
// (copied_in_background). On AVX2, F16 and BF16 weights are copied in the background as they are
// (ggml's rows, onto huge pages; the same kernels read the rows until then).
//
// Why: in ggml's layout every 32-element block carries its own scale, so a SIMD kernel must reduce each
// block's integer dot on its own (shuffles, scalar scale conversions, a horizontal sum per row) before
// the scale multiply: on Zen 4 that made decode compute-bound at ~5 cycles per block. Interleaving 16
// rows so that int32 lane k of a 512-bit register always belongs to row k lets eight vpdpbusd (the
// activation's 4-byte groups broadcast to every lane) accumulate a whole block of 16 rows, followed by
// one convert and one multiply-add with the 16 rows' scales; the 16 outputs come out as one vector with
// no horizontal sums, for any row length.
//
// F16 weights are copied in the background after load (f16_copied), into a layout of their own; until
// the copy exists the products read ggml's rows in place. BF16 likewise on AVX-512 (the same layout in
// steps of 32 elements), against bf16 activations (ggml's vec_dot_type) with vdpbf16ps; on AVX2 BF16
// takes F16's kernels on its rows against f32 activations holding the bf16-rounded values. On AVX-512 without AMX the quantized types'
// packed copies are made in the background too (copied_in_background), their kernels on ggml's rows
// (packed_rows_avx512.cpp) serving the products meanwhile with the same bits. The packed kernel (except on AMX-BF16, below:
// f16_on_amx) takes f32 activations that hold the f16-rounded values (what ggml-cpu multiplies with),
// so prefill does not convert every activation element again for every weight row.
//
// Layout of a packed matrix (n_out rows of n_in elements, nb blocks per row: 32 elements for Q4_0, Q5_0,
// Q8_0, 256 for Q4_K, Q5_K, Q6_K): rows in groups of 16 (the last group padded with zero rows); per row
// group, nb records, one per block, holding that block of all 16 rows. Quants are cut into chunks of
// 64 bytes, 4 bytes per row (lane k = row k of the group), each chunk holding one group of 4 elements
// ("element group g" = elements 4g..4g+3 of the block). Records:
//   Q4_0  [16 f16 d][4 chunks: low nibbles = group 2m, high nibbles = group 2m+1; q + 8]
//   Q5_0  [16 f16 d][4 nibble chunks as Q4_0][qh chunk: bit g of byte j = 5th bit of element 4g+j];
//         q + 16
//   Q4_1  [16 f16 d][16 f16 m][4 nibble chunks as Q4_0]; q as is
//   Q5_1  [16 f16 d][16 f16 m][4 nibble chunks][qh chunk as Q5_0]; q as is
//   Q8_0  [16 f16 d][8 chunks, group j, as unsigned q + 128]
//   Q4_K  [16 f16 d][16 f16 dmin][8 x 16 u8 scales, [sub-block][row]][4 x 16 x 2 u8 mins, [pair][row][2]]
//         [32 chunks (i, c) = 8i + c: low nibbles = sub-block 2i group c, high = sub-block 2i+1 group c]
//   Q5_K  Q4_K's d, dmin, scales and mins, then its 32 chunks (the quants' low 4 bits) with 8 qh chunks
//         among them: qh chunk c (ggml's qh[4c..4c+3], so bit 2i (2i + 1) of byte j = 5th bit of the
//         element of chunk (i, c)'s low (high) nibble j) follows chunk (0, c) (q5k_chunk_at, q5k_qh_at)
//   Q6_K  [16 f16 d][16 x 16 i8 scales, [sub-block][row]][16 triples h of chunks: ql(h), ql(h + 16),
//         qh(h)]; ql(n): low nibbles = group n, high = group n + 32 (low 4 bits of q + 32); qh(h): bits
//         2c..2c+1 of byte j = high 2 bits of element 4 (h + 16c) + j. (Triples keep the kernel's reads
//         sequential: measured 1.7x faster from DRAM than separate ql / qh regions.)
//   Q3_K  [16 f16 d][16 x 16 i8 scales (ggml's 6-bit scales - 32), [sub-block][row]][8 triples m of
//         chunks: lo(2m), lo(2m + 1), hi(m)]; lo(h): bits 2u..2u+1 of byte j = low 2 bits of element
//         4 (h + 16u) + j; hi(m): bit 4e + u of byte j = high bit of element 4 (2m + e + 16u) + j; the
//         quant taken is low + 4 high (0..7, ggml's q + 4).
//   Q2_K  [16 f16 d][16 f16 dmin][8 x 16 x 2 u8 (scale | min << 4), [pair i][row][sub-block 2i + e]]
//         [16 chunks c = ggml's qs dword c: bits 2s..2s+1 of byte j = element 128 (c / 8) + 32 s + 4 (c % 8)
//         + j, so chunks c and c + 4 (c % 8 < 4) hold sub-blocks 2i and 2i + 1, i = 4 (c / 8) + s]
// Activations for a packed product are converted per token row:
//   32-element types: [nb * 32 int8 quants (ggml's Q8_0 qs, in order)][nb f32 scales][nb int32:
//   -off * sum of the block's quants], off = 8 (Q4_0), 16 (Q5_0), 128 (Q8_0); for Q4_1 / Q5_1 the last
//   array holds f32 block sums instead, ggml's Q8_1 s (f16(d * sum of the quants), widened);
//   K-quants: [nb ggml Q8_K blocks][nb x 16 int32: Q4_K and Q5_K the 32-element sums of sub-blocks (2i,
//   2i+1) as two int16 (i < 4), Q2_K the 16-element sums of sub-blocks (2i, 2i+1) as two int16 (i < 8),
//   Q6_K -32 * the 16-element sums, Q3_K -4 * them].
// The quants and scales are exactly ggml's activation quantization (same converters), and every block's
// (sub-block's) integer dot is exact: dot(q_w + off, q_x) - off * sum(q_x). So a packed product differs
// from the unpacked kernels only in the order of the float accumulation.
//
// Thread safety: pure functions; PackedStore is filled on one thread during load, immutable after.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "backend/cpu/ops.h"

namespace ignis::cpu {

inline constexpr int64_t kPackRows = 16;  // rows per interleaved group
inline constexpr int64_t kF16CopyStep = 16;  // F16 copy off AMX: elements per row per step (f16_copied)
inline constexpr int64_t kBf16CopyStep = 32;  // BF16 copy: elements per row per step
// The float types' copies (F16 off AMX, BF16): elements per row per step.
constexpr int64_t float_copy_step(DType t) { return t == DType::BF16 ? kBf16CopyStep : kF16CopyStep; }

// Bytes of one record (one block of 16 rows) of a packed weight type; 0 if the type is not packable.
// (constexpr: the kernels take it as their record stride.)
constexpr int64_t packed_record_bytes(DType t) {
  switch (t) {
    case DType::Q4_0: return 32 + 256;
    case DType::Q5_0: return 32 + 256 + 64;
    case DType::Q4_1: return 64 + 256;
    case DType::Q5_1: return 64 + 256 + 64;
    case DType::Q8_0: return 32 + 512;
    case DType::Q4_K: return 64 + 256 + 2048;
    case DType::Q5_K: return 64 + 256 + 2048 + 512;
    case DType::Q6_K: return 32 + 256 + 2048 + 1024;
    case DType::Q3_K: return 32 + 256 + 1024 + 512;
    case DType::Q2_K: return 64 + 256 + 1024;
    default: return 0;
  }
}
// Byte offsets in a packed Q5_K record of chunk (i, c) and of qh chunk c: the kernel reads chunk (0, c),
// qh chunk c, ..., then the chunks of i = 1..3 (the qh chunks again from L1), one stream front to back.
// NOTE: with the qh chunks after all 32 chunks, a 1536 x 8960 matvec from DRAM on one Zen 5 core read
// 10 GB/s against Q4_K's 21.
constexpr int64_t q5k_chunk_at(int i, int c) { return 320 + (i == 0 ? 128 * c : 1024 + 64 * (8 * (i - 1) + c)); }
constexpr int64_t q5k_qh_at(int c) { return 320 + 128 * c + 64; }
// Bytes of one row group of a packed matrix with rows of n_in elements.
size_t packed_group_bytes(DType t, int64_t n_in);
// Bytes of one converted activation row for a packed product over n_in elements.
size_t packed_act_row_bytes(DType t, int64_t n_in);

// True if matmul has a packed kernel for w on this CPU (AVX-512 VNNI or AVX2; Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, F16, BF16).
bool can_pack(const WeightView& w);

// Writes the packed form of w into dst (packed_bytes(w) bytes). Requires can_pack(w)'s type/shape rules.
size_t packed_bytes(const WeightView& w);
void pack_weight(const WeightView& w, uint8_t* dst);

// True if a packed weight of type t can give back its rows (Q4_0, Q5_0, Q8_0; F16, BF16):
// an embedding tied to a packed output head is then read from the packed copy alone. packed_get_row
// writes row `row` of the packed view w as f32, bit-identical to get_row on the unpacked weight.
bool packed_rows_readable(DType t);
void packed_get_row(const WeightView& w, int64_t row, float* dst);

// Converts one f32 activation row (n_in elements) into the packed activation layout for weights of type t.
void pack_activation(DType t, const float* x, int64_t n_in, uint8_t* dst);
// Its 32-element layout (nb blocks' quants, their f32 scales, then their -sum x 2^shift corrections, or
// with_sum (Q4_1, Q5_1) the Q8_1 sums) on AVX-512, byte for byte what the Q8_0 / Q8_1 quantizers and the
// scalar loop give.
void pack_act_q8_0_avx512(const float* x, int64_t nb, int shift, uint8_t* dst, bool with_sum = false);

// Owns packed copies of weights (64-byte aligned). add() returns the packed view of w when
// can_pack(w), else w itself; for F16 the packed view shares w's data. Where copied_in_background(type)
// (F16 on AVX-512; the quantized types there without AMX) the view shares w's data and the copy is made
// on a background thread (idle priority), in the order added, and published through the view's
// `repacked` (ops.h): loading returns at once, and the products run on ggml's rows with the same bits
// until the copy exists. Elsewhere the quantized types are packed in add().
// Thread safety: add, add_fused, on_repacked and the destructor from one thread; wait, finish and bytes
// from any.
class PackedStore {
 public:
  PackedStore() = default;
  // helper_after: how long after the first background job the normal-priority helper starts.
  explicit PackedStore(std::chrono::milliseconds helper_after) : helper_after_(helper_after) {}
  PackedStore(const PackedStore&) = delete;
  PackedStore& operator=(const PackedStore&) = delete;
  ~PackedStore();  // stops the background repacking (after the group slice in progress) and joins it

  WeightView add(const WeightView& w);
  // One packed matrix holding the rows of every part in order (e.g. Q, K and V projections of one
  // input, multiplied in one pass), when all parts can be packed and share type and n_in; else a
  // view with data == nullptr and nothing stored. F16: made in the background as add's copies are, the
  // view's parts (ops.h) standing in until then.
  WeightView add_fused(std::span<const WeightView> parts);
  // fn(data, bytes) runs on the background thread for each slice of a weight's rows once copied, and
  // for all of them once the copy is published: from then on its original bytes are no longer read
  // by the products (the loader gives the file pages back; products before the publication fault them
  // back in, which the last call drops again). Memory that fn gives back must read the same when
  // touched again. Set it before the first add.
  void on_repacked(std::function<void(const void*, size_t)> fn) { on_repacked_ = std::move(fn); }
  // Blocks until every background copy is published (or has failed to allocate: the weight then stays
  // on its rows).
  void wait() const;
  // Makes the background copies still unclaimed with the pool's threads (each packs slices until none
  // is left), then waits for the slices the background threads hold. Returns at once when every copy
  // is published. Thread-safe.
  void finish(ThreadPool& pool);
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

  // A copy of n floats (norm weights, biases) the store owns, 64-byte aligned.
  // NOTE: read through the mapping, a small vector's fault maps the page cache's whole folio around
  // it (up to 2 MiB on this kernel), which brought released weight pages back: Qwen2.5-0.5B F16's
  // mapping grew 6 -> 56 MB resident over a pp512 after its weights were copied (Zen 5, kernel 6.18).
  const float* copy_floats(const float* src, int64_t n);

 private:
  uint8_t* alloc(size_t n, const WeightView& w);
  // Queues v (with its parts, for a fused matrix) for the background copy and points v at its slot.
  void repack_later(WeightView& v, std::span<const WeightView> parts);
  // The copying threads' loop: idle (SCHED_IDLE) waits for jobs until stopped; otherwise it returns
  // once the queue is empty.
  void repack_loop(bool idle);
  // NOTE: the helper takes a core from the products while they run (two pool threads and it on two
  // cores: tokens at 2-3x their time while it copies). Callers that know a long run of steps is ahead
  // finish the copies with their pool instead (finish: generate, the serving engine's first decode
  // step, perplexity), so the helper is left for the rest (a server under a long run of prompts alone),
  // late. With 2 s, `ignis run` of the reference prompt (2-vCPU Zen 5, alternated 3x, wall ms) with the
  // helper -> without it: Qwen2.5-1.5B Q4_K_M n = 40 2,655-3,989 -> 2,362-2,613, n = 64 4,662-4,713 ->
  // 3,736-3,790; Llama-3.2-1B Q4_0 n = 64 3,113-3,718 -> 2,968-3,205 (BENCHMARKS.md, thirty-first session).
  static constexpr std::chrono::milliseconds kIdleGrace{10000};
  std::chrono::milliseconds helper_after_ = kIdleGrace;
  // A mapping the copies are cut from, one after another (see alloc).
  struct Chunk {
    void* map;
    size_t map_bytes;
    uint8_t* base;  // 2 MiB-aligned
    size_t size, used;
  };
  static constexpr size_t kChunkBytes = size_t{256} << 20;
  struct Job {
    WeightView w;
    std::atomic<const void*>* slot;
    uint8_t* dst;      // the copy (allocated when queued)
    int64_t n_groups;  // row groups of all parts
    int64_t next = 0;  // groups claimed by a thread, in slices of kSliceGroups (guarded by mu_)
    int64_t done = 0;  // groups packed (guarded by mu_)
    std::span<const WeightView> parts() const;  // w, or a fused matrix's parts
  };
  static constexpr int64_t kSliceGroups = 256;
  void pack_slice(const Job& job, int64_t g0, int64_t g1);
  std::vector<Chunk> chunks_;  // (guarded by mu_)
  struct FreeBytes {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  static constexpr size_t kFloatBlockBytes = size_t{64} << 10;
  std::vector<std::unique_ptr<uint8_t, FreeBytes>> float_blocks_;  // copy_floats' (guarded by mu_)
  size_t float_block_size_ = 0, float_block_used_ = 0;  // the last block's
  std::atomic<uint64_t> bytes_{0};
  std::function<void(const void*, size_t)> on_repacked_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // jobs added, stop, or a job finished
  std::deque<std::atomic<const void*>> slots_;
  std::deque<std::vector<WeightView>> fused_parts_;  // the parts F16 fused views point at
  std::list<Job> jobs_;  // queued, oldest first, until published (a slice's thread holds a pointer)
  size_t unfinished_ = 0;
  std::atomic<bool> pending_{false};  // some copy is not yet published (unfinished_ > 0)
  bool stop_ = false;
  std::thread worker_;  // idle priority
  std::thread helper_;  // normal priority, from helper_after_ after the first job (repack_later)
};

// The packed kernels (packed_avx512.cpp): out[t * out_stride + k] = dot(row k of the group, act_t) for
// k < n_rows (<= 16) and t < NX tokens, act_t at x + t * x_stride (packed activation rows); group points
// at the row group's bytes, nb is the number of blocks per row.
using PackedDotFn = void (*)(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                             int64_t out_stride, int n_rows);
// The AMX kernels' form: n_tiles tiles of kAmxTileTokens tokens (all sharing one unpacking of the row
// group's weights), with `scales` the tokens' block-major scale table (made by amx_table_column from
// their activation rows, starting at the table entry of the first token) for the 32-element types; null
// for the K-quants (Q4_K, Q6_K), whose kernels read each row's super-block scales themselves.
// It takes n_groups (up to the kernels' tile_groups) consecutive row groups at group_bytes apart; n_rows:
// the rows of the last.
using PackedTileDotFn = void (*)(int64_t nb, const uint8_t* group, size_t group_bytes, int n_groups, const uint8_t* x,
                                 size_t x_stride, const uint8_t* scales, float* out, int64_t out_stride, int n_rows,
                                 int n_tiles);
// Two row groups (the second at group + group_bytes; n_groups = 1 for a last odd group) x n_pair tokens;
// n_rows_last: the rows of the last group taken. Each output bit-identical to dot1's.
using PackedPairDotFn = void (*)(int64_t nb, const uint8_t* group, size_t group_bytes, const uint8_t* x,
                                 size_t x_stride, float* out, int64_t out_stride, int n_groups, int n_rows_last);
// The same for n_tokens < n_pair tokens (the tokens a prefill leaves over after its groups of n_pair).
using PackedPairRestFn = void (*)(int64_t nb, const uint8_t* group, size_t group_bytes, const uint8_t* x,
                                  size_t x_stride, float* out, int64_t out_stride, int n_groups, int n_rows_last,
                                  int n_tokens);
struct PackedKernels {
  PackedDotFn dot1 = nullptr;  // one token
  PackedDotFn dotn = nullptr;  // n_multi tokens, each bit-identical to dot1
  int n_multi = 0;             // as many tokens as the type's accumulators fit in registers
  PackedTileDotFn dott = nullptr;  // optional (AMX): tiles of kAmxTileTokens tokens, each bit-identical to dot1
  PackedPairDotFn dot_pair = nullptr;  // optional: row groups in pairs, n_pair tokens
  int n_pair = 0;
  PackedPairRestFn dot_pair_rest = nullptr;  // optional, with dot_pair: 1 to n_pair - 1 tokens
  // Optional: 1 to n_multi - 1 tokens (a prefill's leftover), each bit-identical to dot1.
  void (*dotn_rest)(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out,
                    int64_t out_stride, int n_rows, int n_tokens) = nullptr;
  int tile_groups = 1;  // row groups dott takes at once
  size_t act_cache_bytes = 0;  // the activations a prefill token block may hold off AMX; 0: the default
  // Optional: one token on two row groups group_bytes apart (decode reads each thread's weights as two
  // streams, ops.cpp), each output bit-identical to dot1's.
  PackedPairDotFn dot1_pair = nullptr;
};
// A dotn_rest (dot_pair_rest) from the kernels for 1, 2, ... tokens (Fns[i] takes i + 1 tokens).
template <PackedDotFn... Fns>
void packed_dot_rest(int64_t nb, const uint8_t* group, const uint8_t* x, size_t x_stride, float* out, int64_t out_stride,
                     int n_rows, int n_tokens) {
  static constexpr PackedDotFn kByTokens[] = {Fns...};
  kByTokens[n_tokens - 1](nb, group, x, x_stride, out, out_stride, n_rows);
}
template <PackedPairDotFn... Fns>
void packed_pair_rest(int64_t nb, const uint8_t* group, size_t group_bytes, const uint8_t* x, size_t x_stride,
                      float* out, int64_t out_stride, int n_groups, int n_rows_last, int n_tokens) {
  static constexpr PackedPairDotFn kByTokens[] = {Fns...};
  kByTokens[n_tokens - 1](nb, group, group_bytes, x, x_stride, out, out_stride, n_groups, n_rows_last);
}
// The K-quants' kernel set from their kernels for 1 to 4 tokens (packed_avx512.cpp, packed_rows_avx512.cpp).
template <PackedDotFn F1, PackedDotFn F2, PackedDotFn F3, PackedDotFn F4>
PackedKernels kquant_kernels() {
  PackedKernels k{F1, F4, 4};
  k.dotn_rest = packed_dot_rest<F1, F2, F3>;
  return k;
}
// Of a 32-element type's packed activation row x (nb blocks): block b's f32 scale and its int32
// correction (-off * the sum of its quants).
inline float act32_scale(const uint8_t* x, int64_t nb, int64_t b) {
  float d;
  std::memcpy(&d, x + nb * 32 + 4 * b, 4);
  return d;
}
inline int32_t act32_correction(const uint8_t* x, int64_t nb, int64_t b) {
  int32_t c;
  std::memcpy(&c, x + nb * 36 + 4 * b, 4);
  return c;
}
// Q4_1 / Q5_1: block b's sum (Q8_1's s) in place of the correction.
inline float act32_sum(const uint8_t* x, int64_t nb, int64_t b) {
  float s;
  std::memcpy(&s, x + nb * 36 + 4 * b, 4);
  return s;
}
// AMX takes tiles of 16 tokens, in products of at least kAmxTokens tokens (fewer stay on VNNI).
inline constexpr int kAmxTileTokens = 16;
inline constexpr int kAmxTokens = 4 * kAmxTileTokens;
// The block-major table of the activation scales of 32-element types for AMX: per tile of 16 tokens,
// [nb][16] f32. amx_table_bytes: its size for n_tokens; amx_table_column writes token t's entries from
// its packed activation row.
size_t amx_table_bytes(int64_t nb, int64_t n_tokens);
void amx_table_column(const uint8_t* x_row, int64_t nb, int64_t t, uint8_t* table);
// The best kernels the CPU (and IGNIS_ISA, IGNIS_AMX, IGNIS_AVXVNNI) allows: AMX, AVX-512 VNNI, AVX2 with
// AVX-VNNI or AVX2 (packed_avx2.h); nullptr entries otherwise.
PackedKernels packed_kernels(DType t);
PackedKernels packed_kernels_avx512(DType t);  // only call when AVX-512 is supported
PackedKernels packed_kernels_avx2(DType t);    // only call when AVX2 is supported
PackedKernels packed_kernels_avxvnni(DType t);  // the same bits with AVX-VNNI; only call when avxvnni_supported()
// True if the CPU has AVX2 (Isa::kAvx2's set) and AVX-VNNI.
bool avxvnni_supported();
// avxvnni_supported() and allowed: the CPU path is AVX2 (IGNIS_ISA, or no AVX-512) and IGNIS_AVXVNNI is
// not 0. packed_kernels then takes packed_kernels_avxvnni.
bool use_avxvnni();
// True if the CPU has AMX-INT8 and the OS granted this process the tile state (asked for on the first
// call). packed_kernels uses AMX for Q4_0, Q5_0, Q8_0, Q4_K and Q6_K prefill when this holds, unless IGNIS_AMX=0.
bool amx_supported();
// amx_supported() and AMX-BF16 as well (attention's tile kernel, model/attention_amx.cpp).
bool amx_bf16_supported();
// amx_supported() and allowed: the CPU path is AVX-512 (IGNIS_ISA) and IGNIS_AMX is not 0.
bool use_amx();
// packed_kernels_avx512(t) with AMX-INT8 dott for Q4_0, Q5_0, Q8_0, Q4_K, Q6_K (packed_amx.cpp); only call when
// amx_supported().
PackedKernels packed_kernels_amx(DType t);
// F16 on AMX-BF16 (packed_f16_amx.cpp): true when use_amx() and amx_bf16_supported(); then F16 weights
// are repacked in the background into 16-row groups of 1 KB chunks (AMX's B-tile order; see that file
// and PackedStore), their activation rows are f16_split_activation's, and every F16 product takes
// packed_kernels_f16_amx().
bool f16_on_amx();
void f16_split_activation(const float* x, int64_t n_in, uint8_t* dst);  // (32 ceil(n_in / 32)) x 4 bytes
// only call when f16_on_amx(); rows: for ggml's rows in place (a group = 16 consecutive rows), else
// for the packed copy. Both give the same bits.
PackedKernels packed_kernels_f16_amx(bool rows);
// Writes row groups [g_begin, g_end) of the F16 matrix w (n_out rows of n_in) in that layout.
void pack_f16_amx_groups(const uint16_t* w, int64_t n_in, int64_t n_out, uint8_t* dst, int64_t g_begin, int64_t g_end);
// True where the CPU path is AVX-512: PackedStore then copies F16 weights in the background, on
// AMX-BF16 into its layout (f16_on_amx), elsewhere into pack_float_il_groups' layout, and the products
// take packed_kernels_f16_rows() on ggml's rows until the copy exists (the same bits). Off AVX-512
// (AVX2) F16 and BF16 are copied in the background as they are (ggml's rows onto the store's huge
// pages; packed_avx2.h's kernels on both). NOTE: on the 2-vCPU Zen 5 with IGNIS_ISA=avx2,
// Qwen2.5-0.5B F16 tg64 read in place / from the copy, alternated 3x: 18.1-20.2 / 21.7-24.6 t/s at 1
// thread, 31.7-39.0 / 37.1-50.3 at 2 (peak RSS 962 / 971 MiB; load to first token 949 / 1203 ms,
// llama-simple 5.3-5.4 s).
// NOTE: in place on AVX-512, decode reads the rows as 4 streams side by side from the file's 4 KiB page-cache
// pages; the copy is one stream per group on huge pages. Qwen2.5-0.5B F16 tg128 on a 2-vCPU Zen 5,
// alternated twice: 12.4-14.7 -> 23.4-24.0 t/s at 1 thread, 26.7-28.3 -> 36.4-43.8 at 2 (llama.cpp
// 11.7-16.7 and 28.4-32.8 in the same runs); ggml's rows copied as they are reached 21.2-21.9 and
// 32.7-33.4.
bool f16_copied();
// Where f16_copied(): the kernels on ggml's rows in place (a group = 16 consecutive rows).
PackedKernels packed_kernels_f16_rows();
// The AVX-512 kernels of the float types (F16 against f16-rounded f32 activations, BF16 against bf16
// activations with vdpbf16ps; packed_float_avx512.cpp): rows for ggml's rows in place, else for the
// copy (pack_float_il_groups). Only call when AVX-512 is supported; {} for other types.
PackedKernels packed_kernels_float_avx512(DType t, bool rows);
// True if PackedStore makes the packed copy of a weight of type t in the background, the products
// taking packed_kernels_rows(t) on ggml's rows until it exists (the same bits): F16 where f16_copied(),
// F16 and BF16 on AVX2 (their rows as they are), BF16 on AVX-512 (with or without AMX), and the other
// packed types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) on AVX-512 VNNI without AMX.
// NOTE: packed at load, those types' fresh memory made loading slow: the kernel faulting in and
// zeroing the pages was 49% of a load's samples, the packing loop 28%. Load to first token
// (bench/load-vs-llamacpp.sh 3, 2-vCPU Zen 5) was 1,418 ms for Qwen2.5-0.5B Q8_0 against llama-simple's
// 636, 1,542 against 701 for its Q4_K_M mix, 1,338 against 749 for Qwen3-0.6B Q8_0.
bool copied_in_background(DType t);
// Where copied_in_background(t): the kernels on ggml's rows in place (a group = 16 consecutive rows).
PackedKernels packed_kernels_rows(DType t);
PackedKernels packed_kernels_rows_avx512(DType t);  // (packed_rows_avx512.cpp) only call when AVX-512 is supported
// Writes row groups [g_begin, g_end) of the F16 or BF16 matrix w (n_out rows of n_in) as the AVX-512 copy:
// per group, each float_copy_step(t)-element step of its 16 rows one after another, zeros past n_in and n_out.
void pack_float_il_groups(DType t, const uint16_t* w, int64_t n_in, int64_t n_out, uint8_t* dst, int64_t g_begin,
                          int64_t g_end);
// Where that copy holds element i (a multiple of the step) of `row`: an index in 16-bit elements.
inline int64_t float_copy_index(int64_t step, int64_t row, int64_t i, int64_t n_in) {
  const int64_t steps = (n_in + step - 1) / step;
  return ((row / kPackRows) * steps * kPackRows + row % kPackRows) * step + i * kPackRows;
}
// y[i] = x[i] rounded to the nearest f16 (ties to even), as f32: F16 products' activations.
void f16_round_avx512(const float* x, float* y, int64_t n);  // only call when AVX-512 is supported
void f16_round_avx2(const float* x, float* y, int64_t n);    // only call when AVX2 and F16C are supported
// y[i] = the float of f32_to_bf16(x[i]) (core/fp16.h): BF16 products' activations off AVX-512.
void bf16_round_avx2(const float* x, float* y, int64_t n);  // only call when AVX2 is supported
// y[i] = f32_to_bf16(x[i]) (core/fp16.h) for i < n, zero up to n_padded: BF16 products' activations.
void bf16_round_avx512(const float* x, uint16_t* y, int64_t n, int64_t n_padded);  // only call when AVX-512 is supported

}  // namespace ignis::cpu
