// AVX-512 helpers shared by the packed kernels that read the same packed records (packed_avx512.cpp, the
// VNNI kernels, and packed_amx.cpp, which unpacks records into AMX tiles). Include only from files built
// with AVX-512 flags. Pure inline functions: thread-safe.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ignis::cpu {

// The quants (q + 32, 0..63, one byte per element) of triple h of a packed Q6_K record (packed.h; tri:
// the record's first triple): q[u] = element group h + 16u of the 16 rows.
inline void q6k_triple_quants(const uint8_t* tri, int h, __m512i q[4]) {
  const __m512i m0f = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
  const __m512i n1 = _mm512_loadu_si512(tri + 192 * h), n2 = _mm512_loadu_si512(tri + 192 * h + 64);
  const __m512i hb = _mm512_loadu_si512(tri + 192 * h + 128);
  q[0] = _mm512_or_si512(_mm512_and_si512(n1, m0f), _mm512_and_si512(_mm512_slli_epi16(hb, 4), m30));
  q[1] = _mm512_or_si512(_mm512_and_si512(n2, m0f), _mm512_and_si512(_mm512_slli_epi16(hb, 2), m30));
  q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(n1, 4), m0f), _mm512_and_si512(hb, m30));
  q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(n2, 4), m0f), _mm512_and_si512(_mm512_srli_epi16(hb, 2), m30));
}

}  // namespace ignis::cpu
