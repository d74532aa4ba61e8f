// Normalizer and pre-tokenizer steps (see pretokenizer.h).
#include "text/pretokenizer.h"

#include "core/error.h"
#include "text/unicode.h"

namespace ignis::text {

const char* const kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

std::string regex_escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/#&~ ").find(c) != std::string_view::npos &&
        c != ' ')
      out += '\\';
    out += c;
  }
  return out;
}

static void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  size_t pos = 0;
  for (;;) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += to;
    pos = hit + from.size();
  }
  if (pos == 0) return;
  out.append(s, pos, std::string::npos);
  s = std::move(out);
}

static bool is_chinese_char(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

static std::string strip_accents(std::string_view s) {
  std::string out;
  for (uint32_t cp : utf8_to_cps(s))
    if (!cp_is_mark_nonspacing(cp)) utf8_append(out, cp);
  return out;
}

// HF BertNormalizer: drop control chars, map whitespace to ' ', pad CJK with spaces, then
// optionally strip accents and lowercase.
static std::string bert_clean(std::string_view s, const NormalizerStep& st) {
  std::string out;
  for (uint32_t cp : utf8_to_cps(s)) {
    if (st.clean_text) {
      if (cp == 0 || cp == 0xFFFD || cp_is_control(cp)) continue;
      if (cp_is_whitespace(cp)) {
        out += ' ';
        continue;
      }
    }
    if (st.chinese_chars && is_chinese_char(cp)) {
      out += ' ';
      utf8_append(out, cp);
      out += ' ';
      continue;
    }
    utf8_append(out, cp);
  }
  if (st.strip_accents) out = strip_accents(nfd(out));
  if (st.lowercase) out = to_lower(out);
  return out;
}

std::string Normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (const auto& st : steps_) {
    switch (st.kind) {
      case NormalizerStep::NFC: s = nfc(s); break;
      case NormalizerStep::NFD: s = nfd(s); break;
      case NormalizerStep::NFKC: s = nfkc(s); break;
      case NormalizerStep::NFKD: s = nfkd(s); break;
      case NormalizerStep::Lowercase: s = to_lower(s); break;
      case NormalizerStep::Replace: replace_all(s, st.pattern, st.content); break;
      case NormalizerStep::ReplaceRegex: {
        std::vector<Span> m;
        st.regex->find_all(s, {0, uint32_t(s.size())}, &m);
        if (m.empty()) break;
        std::string out;
        uint32_t pos = 0;
        for (const Span& sp : m) {
          out.append(s, pos, sp.begin - pos);
          out += st.content;
          pos = sp.end;
        }
        out.append(s, pos, std::string::npos);
        s = std::move(out);
        break;
      }
      case NormalizerStep::Prepend:
        if (!s.empty()) s = st.content + s;
        break;
      case NormalizerStep::Append:
        if (!s.empty()) s += st.content;
        break;
      case NormalizerStep::Strip: {
        auto cps = utf8_to_cps(s);
        size_t b = 0, e = cps.size();
        if (st.left)
          while (b < e && cp_is_whitespace(cps[b])) ++b;
        if (st.right)
          while (e > b && cp_is_whitespace(cps[e - 1])) --e;
        std::string out;
        for (size_t i = b; i < e; ++i) utf8_append(out, cps[i]);
        s = std::move(out);
        break;
      }
      case NormalizerStep::StripAccents: s = strip_accents(s); break;
      case NormalizerStep::BertClean: s = bert_clean(s, st); break;
    }
  }
  return s;
}

namespace {

struct Seg {
  Span span;
  bool match;
};

// Cuts `span` into alternating matched / unmatched segments, then applies the behaviour.
void split_span(const Regex& re, SplitBehavior behavior, bool invert, std::string_view text,
                Span span, std::vector<Span>* matches, std::vector<Span>* out) {
  matches->clear();
  re.find_all(text, span, matches);
  if (behavior == SplitBehavior::Isolated) {
    uint32_t pos = span.begin;
    for (const Span& m : *matches) {
      if (m.begin > pos) out->push_back({pos, m.begin});
      out->push_back(m);
      pos = m.end;
    }
    if (pos < span.end) out->push_back({pos, span.end});
    return;
  }
  std::vector<Seg> segs;
  uint32_t pos = span.begin;
  for (const Span& m : *matches) {
    if (m.begin > pos) segs.push_back({{pos, m.begin}, invert});
    segs.push_back({m, !invert});
    pos = m.end;
  }
  if (pos < span.end) segs.push_back({{pos, span.end}, invert});
  switch (behavior) {
    case SplitBehavior::Isolated: break;
    case SplitBehavior::Removed:
      for (const Seg& s : segs)
        if (!s.match) out->push_back(s.span);
      break;
    case SplitBehavior::Contiguous: {
      bool prev = false;
      bool have = false;
      const size_t base = out->size();
      for (const Seg& s : segs) {
        if (have && s.match == prev) out->back().end = s.span.end;
        else out->push_back(s.span);
        have = out->size() > base;
        prev = s.match;
      }
      break;
    }
    case SplitBehavior::MergedWithPrevious: {
      bool prev = false;
      const size_t base = out->size();
      for (const Seg& s : segs) {
        if (s.match && !prev && out->size() > base) out->back().end = s.span.end;
        else out->push_back(s.span);
        prev = s.match;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      std::vector<Span> rev;
      bool prev = false;
      for (size_t i = segs.size(); i-- > 0;) {
        const Seg& s = segs[i];
        if (s.match && !prev && !rev.empty()) rev.back().begin = s.span.begin;
        else rev.push_back(s.span);
        prev = s.match;
      }
      out->insert(out->end(), rev.rbegin(), rev.rend());
      break;
    }
  }
}

const Regex& whitespace_words_regex() {
  static const Regex re("\\w+|[^\\w\\s]+", "Whitespace pre-tokenizer");
  return re;
}
const Regex& non_space_regex() {
  static const Regex re("\\S+", "WhitespaceSplit pre-tokenizer");
  return re;
}
const Regex& punct_regex() {
  // Rust's char::is_ascii_punctuation || char::is_punctuation, one character per match.
  static const Regex re("[\\p{P}!-/:-@\\[-`{-~]", "Punctuation pre-tokenizer");
  return re;
}
const Regex& digit_regex(bool individual) {
  static const Regex one("\\p{N}", "Digits pre-tokenizer");
  static const Regex run("\\p{N}+", "Digits pre-tokenizer");
  return individual ? one : run;
}

// Rebuilds `w` with each span passed through `fn(span_text, index) -> new text`.
template <typename Fn>
void rewrite(Words* w, Fn fn) {
  Words n;
  n.text.reserve(w->text.size() + 8);
  for (size_t i = 0; i < w->spans.size(); ++i) {
    const Span sp = w->spans[i];
    std::string t = fn(std::string_view(w->text).substr(sp.begin, sp.size()), i);
    const uint32_t b = uint32_t(n.text.size());
    n.text += t;
    n.spans.push_back({b, uint32_t(n.text.size())});
  }
  *w = std::move(n);
}

}  // namespace

void PreTokenizer::apply(std::string text, bool at_start, Words* out) const {
  out->text = std::move(text);
  out->spans.clear();
  if (out->text.empty()) return;
  out->spans.push_back({0, uint32_t(out->text.size())});
  std::vector<Span> next, matches;
  auto split_all = [&](const Regex& re, SplitBehavior b, bool invert) {
    next.clear();
    for (const Span& sp : out->spans) split_span(re, b, invert, out->text, sp, &matches, &next);
    out->spans.swap(next);
  };
  for (const auto& st : steps_) {
    switch (st.kind) {
      case PreStep::Split: split_all(*st.regex, st.behavior, st.invert); break;
      case PreStep::ByteLevel:
        if (st.add_prefix_space)
          rewrite(out, [](std::string_view s, size_t) {
            return (s.empty() || s[0] == ' ') ? std::string(s) : " " + std::string(s);
          });
        if (st.regex) split_all(*st.regex, SplitBehavior::Isolated, false);
        break;
      case PreStep::Metaspace: {
        const std::string& rep = st.replacement;
        rewrite(out, [&](std::string_view s, size_t i) {
          std::string t(s);
          replace_all(t, " ", rep);
          const bool prepend = st.prepend == PreStep::Always ||
                               (st.prepend == PreStep::First && i == 0 && at_start);
          if (prepend && t.compare(0, rep.size(), rep) != 0) t = rep + t;
          return t;
        });
        if (st.split) {
          const Regex re(regex_escape(rep), "Metaspace pre-tokenizer");
          split_all(re, SplitBehavior::MergedWithNext, false);
        }
        break;
      }
      case PreStep::Digits:
        split_all(digit_regex(st.individual_digits), SplitBehavior::Isolated, false);
        break;
      case PreStep::Whitespace:
        split_all(whitespace_words_regex(), SplitBehavior::Removed, true);
        break;
      case PreStep::WhitespaceSplit:
        split_all(non_space_regex(), SplitBehavior::Removed, true);
        break;
      case PreStep::Punctuation: split_all(punct_regex(), st.behavior, false); break;
      case PreStep::Bert:
        split_all(non_space_regex(), SplitBehavior::Removed, true);
        split_all(punct_regex(), SplitBehavior::Isolated, false);
        break;
    }
  }
}

}  // namespace ignis::text
