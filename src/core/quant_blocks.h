// Block layouts of ggml's quantized tensor types, byte for byte as stored in GGUF files.
//
// Each struct is one block; a row of n elements is n / kBlock<T> consecutive blocks. Scales are IEEE
// half floats stored as raw uint16_t bits (see core/fp16.h), except Q8_K's f32 scale. Field order and
// sizes follow ggml's ggml-common.h definitions; the static_asserts pin them. Plain data: thread-safe.
#pragma once

#include <cstdint>

namespace ignis {

inline constexpr int kQK = 32;    // elements per block of the 32-wide types
inline constexpr int kQKK = 256;  // elements per super-block of the K-quants
inline constexpr int kKScaleBytes = 12;

struct BlockQ4_0 {
  uint16_t d;            // scale
  uint8_t qs[kQK / 2];   // nibbles: element j in low nibble of qs[j], element j+16 in high nibble
};
struct BlockQ4_1 {
  uint16_t d, m;         // scale, min
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];         // 5th bit of element j in bit j (little-endian u32)
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockQ8_1 {
  uint16_t d;            // scale
  uint16_t s;            // d * sum(qs)
  int8_t qs[kQK];
};
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];  // low nibble scale, high nibble min, per 16 elements
  uint8_t qs[kQKK / 4];       // 2-bit quants
  uint16_t d, dmin;
};
struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];    // high bit (set = no -4 offset)
  uint8_t qs[kQKK / 4];       // low 2 bits
  uint8_t scales[12];         // 16 6-bit scales
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[kKScaleBytes];  // 8 6-bit scales and 8 6-bit mins
  uint8_t qs[kQKK / 2];
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];       // low 4 bits
  uint8_t qh[kQKK / 4];       // high 2 bits
  int8_t scales[kQKK / 16];   // 8-bit scales
  uint16_t d;
};
struct BlockQ8_K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];   // sums of qs in groups of 16
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// Scale j and min j (6 bits each) of a Q4_K / Q5_K block's packed 12-byte scale array.
inline void k4_scale_min(int j, const uint8_t* s, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// The 16 signed 6-bit scales of a Q3_K block (each already minus 32).
inline void q3k_scales(const uint8_t* s, int8_t out[16]) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (s[j] & 0xf) : (s[j - 8] >> 4);
    const int high = (s[8 + (j % 4)] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

}  // namespace ignis
