// UTF-8 and Unicode helpers for the tokenizers: decoding/encoding code points, lossy repair of
// invalid UTF-8, GPT-2's byte <-> printable-character map, normalization forms (through utf8proc)
// and the character classes the pre-tokenizers need. All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ignis::text {

// Length of the UTF-8 sequence starting with lead byte `c` (1 for continuation/invalid bytes).
inline size_t utf8_len(uint8_t c) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[c >> 4];
}

// Decodes the code point at s[i] if it is a valid, shortest-form sequence; returns its length in
// `len` (0 if invalid).
uint32_t utf8_decode(std::string_view s, size_t i, size_t* len);
void utf8_append(std::string& out, uint32_t cp);
std::string utf8_encode(uint32_t cp);
bool utf8_valid(std::string_view s);
// Number of bytes at the end of `s` that form the start of a valid but incomplete sequence
// (0..3). Used by streaming to hold back partial characters.
size_t utf8_incomplete_tail(std::string_view s);
// Replaces each maximal invalid subpart with U+FFFD (the policy of Python's errors="replace" and
// Rust's from_utf8_lossy).
std::string utf8_lossy(std::string_view s);
std::vector<uint32_t> utf8_to_cps(std::string_view s);  // input must be valid

// GPT-2 byte-level alphabet: byte b <-> a printable code point.
uint32_t byte_to_cp(uint8_t b);
// Maps a byte-level string (each char one byte) to raw bytes; false if a char is outside the map.
bool byte_level_decode(std::string_view s, std::string* out);
std::string byte_level_encode(std::string_view bytes);

// Normalization forms through utf8proc; input must be valid UTF-8.
std::string nfc(std::string_view s);
std::string nfd(std::string_view s);
std::string nfkc(std::string_view s);
std::string nfkd(std::string_view s);
std::string to_lower(std::string_view s);  // full Unicode simple lowercase
uint32_t cp_lower(uint32_t cp);

bool cp_is_whitespace(uint32_t cp);   // Unicode White_Space (as Rust's char::is_whitespace)
bool cp_is_punctuation(uint32_t cp);  // general category P*
bool cp_is_symbol(uint32_t cp);       // S*
bool cp_is_control(uint32_t cp);      // Cc/Cf/Cn/Co/Cs (not \t\n\r)
bool cp_is_mark_nonspacing(uint32_t cp);  // Mn
bool cp_is_alnum(uint32_t cp);        // L* or N*
bool cp_is_digit(uint32_t cp);        // Nd

}  // namespace ignis::text
