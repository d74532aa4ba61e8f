// Jinja lexer (see lexer.h).
#include "text/jinja/lexer.h"

#include <cctype>
#include <cstring>

#include "text/jinja/value.h"

namespace ignis::text::jinja {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Python's str.rstrip() for the ASCII whitespace the lexer deals with (and the Unicode spaces).
std::string rstrip_ws(const std::string& s) {
  std::u32string u = utf8_decode(s);
  size_t n = u.size();
  while (n > 0 && py_isspace(u[n - 1])) --n;
  return utf8_encode(u.substr(0, n));
}

std::string normalize_newlines(const std::string& src) {
  std::string out;
  out.reserve(src.size());
  for (size_t k = 0; k < src.size(); ++k) {
    if (src[k] == '\r') {
      out += '\n';
      if (k + 1 < src.size() && src[k + 1] == '\n') ++k;
    } else {
      out += src[k];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(const std::string& src, const LexOptions& o) : src_(normalize_newlines(src)), opts_(o) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t start = find_tag(pos_);
      std::string text = src_.substr(pos_, start - pos_);
      if (start >= src_.size()) {
        emit_text(text, pos_);
        break;
      }
      char kind = src_[start + 1];  // '{', '%' or '#'
      char mod = start + 2 < src_.size() ? src_[start + 2] : 0;
      strip_before_tag(text, pos_, mod, kind != '{');
      emit_text(text, pos_);
      size_t body = start + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      if (kind == '#') {
        lex_comment(body);
      } else if (kind == '%' && is_raw(body)) {
        lex_raw(start, body);
      } else {
        lex_tag(kind, start, body);
      }
    }
    tokens_.push_back({Tok::Eof, "", line_at(src_.size())});
    return std::move(tokens_);
  }

 private:
  std::string src_;
  LexOptions opts_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
  size_t line_cache_pos_ = 0;
  int line_cache_ = 1;

  int line_at(size_t p) {
    if (p < line_cache_pos_) {
      line_cache_pos_ = 0;
      line_cache_ = 1;
    }
    for (; line_cache_pos_ < p && line_cache_pos_ < src_.size(); ++line_cache_pos_)
      if (src_[line_cache_pos_] == '\n') ++line_cache_;
    return line_cache_;
  }

  [[noreturn]] void fail(size_t p, const std::string& msg) { throw RenderError{msg, line_at(p)}; }

  size_t find_tag(size_t from) const {
    for (size_t k = from; k + 1 < src_.size(); ++k)
      if (src_[k] == '{' && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#')) return k;
    return src_.size();
  }

  // The text before a tag: `-` strips all trailing whitespace; lstrip_blocks strips the spaces between
  // the line start and a block or comment tag ("line start" includes right after a tag ending in \n).
  void strip_before_tag(std::string& text, size_t text_start, char mod, bool block_like) const {
    if (mod == '-') {
      text = rstrip_ws(text);
      return;
    }
    if (mod == '+' || !opts_.lstrip_blocks || !block_like) return;
    bool line_starting = text_start == 0 || src_[text_start - 1] == '\n';
    size_t l_pos = text.rfind('\n');
    l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
    if (l_pos == 0 && !line_starting) return;
    bool all_ws = l_pos < text.size();
    for (size_t k = l_pos; k < text.size(); ++k) all_ws = all_ws && is_ws(text[k]);
    if (all_ws) text.resize(l_pos);
  }

  void emit_text(const std::string& text, size_t at) {
    if (!text.empty()) tokens_.push_back({Tok::Text, text, line_at(at)});
  }

  // After a tag's closing marker: `-` eats following whitespace, trim_blocks eats one newline.
  void after_close(size_t p, char mod, bool block_like) {
    pos_ = p;
    if (mod == '-') {
      while (pos_ < src_.size() && is_ws(src_[pos_])) ++pos_;
    } else if (mod != '+' && block_like && opts_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
  }

  void lex_comment(size_t body) {
    size_t end = src_.find("#}", body);
    if (end == std::string::npos) fail(body, "Missing end of comment tag");
    char mod = end > body && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
    after_close(end + 2, mod, true);
  }

  bool is_raw(size_t body) const {
    size_t k = body;
    while (k < src_.size() && is_ws(src_[k])) ++k;
    if (src_.compare(k, 3, "raw") != 0) return false;
    k += 3;
    while (k < src_.size() && is_ws(src_[k])) ++k;
    return src_.compare(k, 2, "%}") == 0 || src_.compare(k, 3, "-%}") == 0 || src_.compare(k, 3, "+%}") == 0;
  }

  void lex_raw(size_t start, size_t body) {
    size_t k = src_.find("%}", body);
    bool strip_after_open = src_[k - 1] == '-';
    size_t p = k + 2;
    if (strip_after_open)
      while (p < src_.size() && is_ws(src_[p])) ++p;
    // Find {%[-+]? endraw [-+]?%}
    for (size_t q = p; q + 1 < src_.size(); ++q) {
      if (src_[q] != '{' || src_[q + 1] != '%') continue;
      size_t r = q + 2;
      char mod = 0;
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) mod = src_[r++];
      while (r < src_.size() && is_ws(src_[r])) ++r;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && is_ws(src_[r])) ++r;
      char close_mod = 0;
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) close_mod = src_[r++];
      if (src_.compare(r, 2, "%}") != 0) continue;
      std::string text = src_.substr(p, q - p);
      strip_before_tag(text, p, mod, true);
      emit_text(text, p);
      after_close(r + 2, close_mod, true);
      return;
    }
    fail(start, "Missing end of raw directive");
  }

  void lex_tag(char kind, size_t start, size_t body) {
    int line = line_at(start);
    tokens_.push_back({kind == '{' ? Tok::VarBegin : Tok::BlockBegin, "", line});
    const char close = kind == '{' ? '}' : '%';
    size_t p = body;
    int balance = 0;  // open ( [ {: like jinja2, `}}` inside a dict literal does not end the tag
    while (true) {
      while (p < src_.size() && is_ws(src_[p])) ++p;
      if (p >= src_.size()) fail(start, kind == '{' ? "unexpected end of template, expected '}}'"
                                                    : "unexpected end of template, expected '%}'");
      // closing marker, optionally with a whitespace modifier
      for (char mod : {'-', '+', '\0'}) {
        if (balance > 0) break;
        size_t q = p + (mod ? 1 : 0);
        if (mod && (p >= src_.size() || src_[p] != mod)) continue;
        if (q + 1 < src_.size() && src_[q] == close && src_[q + 1] == '}') {
          tokens_.push_back({kind == '{' ? Tok::VarEnd : Tok::BlockEnd, "", line_at(p)});
          after_close(q + 2, mod, kind == '%');
          return;
        }
      }
      p = lex_token(p);
      const Token& t = tokens_.back();
      if (t.type == Tok::Op && t.text.size() == 1 && std::strchr("([{", t.text[0])) ++balance;
      if (t.type == Tok::Op && t.text.size() == 1 && std::strchr(")]}", t.text[0])) {
        if (balance == 0) fail(p, "unexpected '" + t.text + "'");
        --balance;
      }
    }
  }

  size_t lex_token(size_t p) {
    int line = line_at(p);
    char c = src_[p];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = p;
      while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
      tokens_.push_back({Tok::Name, src_.substr(p, e - p), line});
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return lex_number(p, line);
    if (c == '\'' || c == '"') return lex_string(p, line);
    static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                       ">",  "=",  ".",  ",",  ":",  "|",  "(", ")", "[", "]", "{", "}"};
    for (const char* op : kOps) {
      size_t n = std::strlen(op);
      if (src_.compare(p, n, op) == 0) {
        tokens_.push_back({Tok::Op, op, line});
        return p + n;
      }
    }
    fail(p, std::string("unexpected char '") + c + "'");
  }

  size_t lex_number(size_t p, int line) {
    size_t e = p;
    auto digits = [&] {
      while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
    };
    digits();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      is_float = true;
      ++e;
      digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t q = e + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && std::isdigit(static_cast<unsigned char>(src_[q]))) {
        is_float = true;
        e = q;
        digits();
      }
    }
    std::string text;
    for (size_t k = p; k < e; ++k)
      if (src_[k] != '_') text += src_[k];
    Token t{is_float ? Tok::Float : Tok::Int, text, line};
    try {
      if (is_float) t.fval = std::stod(text);
      else t.ival = std::stoll(text);
    } catch (const std::exception&) {
      fail(p, "number literal out of range: " + text);
    }
    tokens_.push_back(std::move(t));
    return e;
  }

  // Python string-literal escapes, as jinja2 decodes them ("unicode-escape").
  size_t lex_string(size_t p, int line) {
    char quote = src_[p];
    std::string out;
    size_t k = p + 1;
    auto hex = [&](size_t n) -> char32_t {
      if (k + n > src_.size()) fail(p, "truncated escape in string literal");
      char32_t v = 0;
      for (size_t j = 0; j < n; ++j) {
        char h = src_[k + j];
        if (!std::isxdigit(static_cast<unsigned char>(h))) fail(p, "bad escape in string literal");
        v = v * 16 + static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      k += n;
      return v;
    };
    while (true) {
      if (k >= src_.size()) fail(p, "unexpected end of string literal");
      char c = src_[k];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        ++k;
        continue;
      }
      if (k + 1 >= src_.size()) fail(p, "unexpected end of string literal");
      char e = src_[k + 1];
      k += 2;
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '\n': break;
        case 'x': utf8_append(out, hex(2)); break;
        case 'u': utf8_append(out, hex(4)); break;
        case 'U': utf8_append(out, hex(8)); break;
        default:
          if (e >= '0' && e <= '7') {
            char32_t v = static_cast<char32_t>(e - '0');
            for (int j = 0; j < 2 && k < src_.size() && src_[k] >= '0' && src_[k] <= '7'; ++j, ++k)
              v = v * 8 + static_cast<char32_t>(src_[k] - '0');
            utf8_append(out, v);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    tokens_.push_back({Tok::String, std::move(out), line});
    return k + 1;
  }
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const LexOptions& opts) {
  return Lexer(source, opts).run();
}

}  // namespace ignis::text::jinja
