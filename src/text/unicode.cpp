// UTF-8 helpers, GPT-2 byte map and utf8proc wrappers (see unicode.h).
#include "text/unicode.h"

#include <utf8proc.h>

#include <array>
#include <cstdlib>

#include "core/error.h"

namespace ignis::text {

uint32_t utf8_decode(std::string_view s, size_t i, size_t* len) {
  *len = 0;
  if (i >= s.size()) return 0;
  const uint8_t c0 = uint8_t(s[i]);
  if (c0 < 0x80) {
    *len = 1;
    return c0;
  }
  size_t n;
  uint32_t cp, min;
  if (c0 >= 0xC2 && c0 <= 0xDF) {
    n = 2, cp = c0 & 0x1F, min = 0x80;
  } else if (c0 >= 0xE0 && c0 <= 0xEF) {
    n = 3, cp = c0 & 0x0F, min = 0x800;
  } else if (c0 >= 0xF0 && c0 <= 0xF4) {
    n = 4, cp = c0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const uint8_t c = uint8_t(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  *len = n;
  return cp;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

std::string utf8_encode(uint32_t cp) {
  std::string s;
  utf8_append(s, cp);
  return s;
}

bool utf8_valid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (uint8_t(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    utf8_decode(s, i, &len);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

// Length of the longest prefix of s[i..] that could still start a valid sequence (a "maximal
// subpart" in Unicode's terms); at least 1.
static size_t maximal_subpart(std::string_view s, size_t i) {
  const uint8_t c0 = uint8_t(s[i]);
  size_t n;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c0 >= 0xC2 && c0 <= 0xDF) n = 2;
  else if (c0 == 0xE0) n = 3, lo = 0xA0;
  else if (c0 >= 0xE1 && c0 <= 0xEC) n = 3;
  else if (c0 == 0xED) n = 3, hi = 0x9F;
  else if (c0 >= 0xEE && c0 <= 0xEF) n = 3;
  else if (c0 == 0xF0) n = 4, lo = 0x90;
  else if (c0 >= 0xF1 && c0 <= 0xF3) n = 4;
  else if (c0 == 0xF4) n = 4, hi = 0x8F;
  else return 1;
  size_t k = 1;
  for (; k < n && i + k < s.size(); ++k) {
    const uint8_t c = uint8_t(s[i + k]);
    if (k == 1 ? (c < lo || c > hi) : (c & 0xC0) != 0x80) break;
  }
  return k;
}

size_t utf8_incomplete_tail(std::string_view s) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const size_t i = s.size() - back;
    const uint8_t c = uint8_t(s[i]);
    if ((c & 0xC0) == 0x80) continue;  // continuation: keep looking for the lead
    if (c < 0x80) return 0;
    const size_t need = utf8_len(c);
    if (need > back && maximal_subpart(s, i) == back) return back;
    return 0;
  }
  return 0;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (uint8_t(s[i]) < 0x80) {
      out += s[i++];
      continue;
    }
    size_t len;
    utf8_decode(s, i, &len);
    if (len) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      i += maximal_subpart(s, i);
    }
  }
  return out;
}

std::vector<uint32_t> utf8_to_cps(std::string_view s) {
  std::vector<uint32_t> cps;
  cps.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    size_t len;
    uint32_t cp = utf8_decode(s, i, &len);
    if (!len) cp = 0xFFFD, len = 1;
    cps.push_back(cp);
    i += len;
  }
  return cps;
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100.. in byte order.
static const std::array<uint32_t, 256>& byte_map() {
  static const std::array<uint32_t, 256> map = [] {
    std::array<uint32_t, 256> m{};
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      m[b] = printable ? b : next++;
    }
    return m;
  }();
  return map;
}

uint32_t byte_to_cp(uint8_t b) { return byte_map()[b]; }

static int cp_to_byte(uint32_t cp) {
  static const std::array<int16_t, 324> inv = [] {
    std::array<int16_t, 324> v;
    v.fill(-1);
    for (int b = 0; b < 256; ++b) v[byte_map()[b]] = int16_t(b);
    return v;
  }();
  return cp < inv.size() ? inv[cp] : -1;
}

bool byte_level_decode(std::string_view s, std::string* out) {
  out->clear();
  size_t i = 0;
  while (i < s.size()) {
    size_t len;
    const uint32_t cp = utf8_decode(s, i, &len);
    if (!len) return false;
    const int b = cp_to_byte(cp);
    if (b < 0) return false;
    *out += char(b);
    i += len;
  }
  return true;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8_append(out, byte_to_cp(uint8_t(c)));
  return out;
}

static std::string map_utf8proc(std::string_view s, int options) {
  if (s.empty()) return {};
  utf8proc_uint8_t* res = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          utf8proc_ssize_t(s.size()), &res,
                                          utf8proc_option_t(options));
  if (n < 0) fail("unicode normalization failed: {}", utf8proc_errmsg(n));
  std::string out(reinterpret_cast<char*>(res), size_t(n));
  std::free(res);
  return out;
}

static bool all_ascii(std::string_view s) {
  for (char c : s)
    if (uint8_t(c) >= 0x80) return false;
  return true;
}

// NOTE: ASCII characters are starters that never compose with a following ASCII character, so
// only the stretches around non-ASCII characters (plus the ASCII starter before each) can change;
// the rest is copied. This keeps NFC cheap on mostly-ASCII text.
std::string nfc(std::string_view s) {
  if (all_ascii(s)) return std::string(s);
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && uint8_t(s[j]) < 0x80) ++j;
    if (j == s.size()) {
      out.append(s.data() + i, j - i);
      break;
    }
    // s[j] starts a non-ASCII stretch; include the ASCII character before it.
    const size_t begin = j > i ? j - 1 : j;
    out.append(s.data() + i, begin - i);
    size_t end = j;
    while (end < s.size() && uint8_t(s[end]) >= 0x80) ++end;
    const std::string_view part = s.substr(begin, end - begin);
    if (utf8_valid(part)) out += map_utf8proc(part, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    else out.append(part);
    i = end;
  }
  return out;
}
std::string nfd(std::string_view s) {
  if (all_ascii(s)) return std::string(s);
  return map_utf8proc(s, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
}
std::string nfkc(std::string_view s) {
  if (all_ascii(s)) return std::string(s);
  return map_utf8proc(s, UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
}
std::string nfkd(std::string_view s) {
  if (all_ascii(s)) return std::string(s);
  return map_utf8proc(s, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
}

uint32_t cp_lower(uint32_t cp) { return uint32_t(utf8proc_tolower(utf8proc_int32_t(cp))); }

std::string to_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t c = uint8_t(s[i]);
    if (c < 0x80) {
      out += char(c >= 'A' && c <= 'Z' ? c + 32 : c);
      ++i;
      continue;
    }
    size_t len;
    const uint32_t cp = utf8_decode(s, i, &len);
    if (!len) {
      out += s[i++];
      continue;
    }
    utf8_append(out, cp_lower(cp));
    i += len;
  }
  return out;
}

static utf8proc_category_t cat(uint32_t cp) {
  return utf8proc_category(utf8proc_int32_t(cp));
}

bool cp_is_whitespace(uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool cp_is_punctuation(uint32_t cp) {
  const auto c = cat(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}
bool cp_is_symbol(uint32_t cp) {
  const auto c = cat(cp);
  return c >= UTF8PROC_CATEGORY_SM && c <= UTF8PROC_CATEGORY_SO;
}
bool cp_is_control(uint32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  const auto c = cat(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CN ||
         c == UTF8PROC_CATEGORY_CO || c == UTF8PROC_CATEGORY_CS;
}
bool cp_is_mark_nonspacing(uint32_t cp) { return cat(cp) == UTF8PROC_CATEGORY_MN; }
bool cp_is_alnum(uint32_t cp) {
  const auto c = cat(cp);
  return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
         (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}
bool cp_is_digit(uint32_t cp) { return cat(cp) == UTF8PROC_CATEGORY_ND; }

}  // namespace ignis::text
