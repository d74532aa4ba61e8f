// The one Tokenizer implementation: special-token partition, normalizer, pre-tokenizer, model
// (SPM / BPE / WordPiece), post-processing and decoding, configured by a TokenizerConfig.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "text/bpe.h"
#include "text/flat_map.h"
#include "text/spm.h"
#include "text/unicode.h"
#include "text/vocab.h"
#include "text/wpm.h"

namespace ignis::text {

namespace {

// Every non-overlapping occurrence of `from` (left to right) replaced by `to`, like Python's
// str.replace and Rust's String::replace.
std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(s);
  std::string r;
  r.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
    r.append(s.substr(pos, hit - pos));
    r.append(to);
  }
  r.append(s.substr(pos));
  return r;
}

bool is_space_byte(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

class TokenizerImpl final : public Tokenizer {
 public:
  explicit TokenizerImpl(TokenizerConfig cfg);

  std::vector<TokenId> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  std::string token_to_piece(TokenId id) const override;
  std::string decode(const std::vector<TokenId>& ids, bool skip_special) const override;
  int32_t n_vocab() const override { return int32_t(cfg_.tokens.size()); }
  TokenId bos() const override { return cfg_.bos; }
  TokenId eos() const override { return cfg_.eos; }
  bool add_bos() const override { return cfg_.has_template ? false : cfg_.add_bos; }
  bool add_eos() const override { return cfg_.has_template ? false : cfg_.add_eos; }
  bool is_eog(TokenId id) const override { return eog_.count(id) != 0; }
  bool is_control(TokenId id) const override {
    if (id < 0 || id >= n_vocab()) return false;
    const TokenType t = cfg_.tokens[size_t(id)].type;
    return t == TokenType::Control || t == TokenType::Unknown;
  }
  std::string token_text(TokenId id) const override {
    check_id(id);
    const TokenEntry& t = cfg_.tokens[size_t(id)];
    return cfg_.piece_mode == PieceMode::Raw && t.type == TokenType::Normal && cfg_.kind == ModelKind::Bpe
               ? byte_level_encode(t.text)
               : t.text;
  }
  std::string chat_template() const override { return cfg_.chat_template; }
  bool decode_strips_leading_space() const override { return cfg_.decode_strip_leading_space; }
  bool decode_is_contextual() const override {
    return !cfg_.bpe_decoder_suffix.empty() || cfg_.clean_up_spaces;
  }

 private:
  struct Fragment {
    bool is_token;
    TokenId id;
    uint32_t begin, end;
  };
  void check_id(TokenId id) const {
    if (id < 0 || id >= n_vocab())
      fail("{}: token id {} is out of range [0, {})", cfg_.source, id, n_vocab());
  }
  using AddedTable = std::vector<std::vector<uint32_t>>;
  void partition(std::string_view text, bool parse_special, const AddedTable& table,
                 std::vector<Fragment>* out) const;
  void encode_text(std::string_view frag, bool at_start, bool after_special, bool normalized,
                   WordCache* cache,
                   std::vector<TokenId>* out) const;
  std::string normalize(std::string_view s) const {
    return cfg_.normalizer.empty() ? std::string(s) : cfg_.normalizer.apply(s);
  }

  TokenizerConfig cfg_;
  TokenMap map_;
  // The decoded bytes of token id: its text, or other_pieces_[piece_at_[id]] where they differ.
  // NOTE: a table of every token's piece (and one of its spelling in the file, now made on demand by
  // token_text) copied the vocabulary twice at load: 41-47 ms of Qwen3-0.6B's 190-220 ms
  // Tokenizer::from_gguf on the 2-vCPU Zen 5, where fresh memory costs about 2 us a 4 KiB page.
  // Byte-level vocabularies' pieces are their texts.
  const std::string& piece(TokenId id) const {
    const int32_t k = piece_at_[size_t(id)];
    return k < 0 ? cfg_.tokens[size_t(id)].text : other_pieces_[size_t(k)];
  }
  std::vector<int32_t> piece_at_;
  std::vector<std::string> other_pieces_;
  std::unordered_set<TokenId> eog_;
  std::optional<SpmModel> spm_;
  std::optional<BpeModel> bpe_;
  std::optional<WpmModel> wpm_;
  // Added tokens (indices into cfg_.added) by the first byte of the text they match, longest
  // first: non-normalized ones (matched in the raw text) and normalized ones (matched in the
  // normalized text).
  AddedTable added_by_byte_, norm_added_by_byte_;
  std::vector<std::string> added_match_;  // per added token: content, normalized if `normalized`
  bool has_norm_added_ = false;
};

TokenizerImpl::TokenizerImpl(TokenizerConfig cfg) : cfg_(std::move(cfg)) {
  const size_t n = cfg_.tokens.size();
  if (n == 0) fail("{}: the vocabulary is empty", cfg_.source);
  auto check = [&](TokenId id, const char* what) {
    if (id < -1 || id >= TokenId(n))
      fail("{}: {} token id {} is out of range [0, {})", cfg_.source, what, id, n);
  };
  check(cfg_.bos, "bos");
  check(cfg_.eos, "eos");
  check(cfg_.unk, "unk");
  check(cfg_.sep, "sep");
  check(cfg_.pad, "pad");
  check(cfg_.eot, "eot");
  check(cfg_.eom, "eom");
  for (TokenId id : cfg_.template_prefix) check(id, "post-processor");
  for (TokenId id : cfg_.template_suffix) check(id, "post-processor");
  for (const auto& a : cfg_.added) check(a.id, "added");
  // Normal tokens first so that they win over control tokens with the same text.
  map_ = TokenMap(cfg_.tokens, true);

  piece_at_.assign(n, -1);
  std::string p;  // token i's piece; stored only where it is not its text
  auto keep = [&](size_t i) {
    if (p == cfg_.tokens[i].text) return;
    piece_at_[i] = int32_t(other_pieces_.size());
    other_pieces_.push_back(p);
  };
  for (size_t i = 0; i < n; ++i) {
    const TokenEntry& t = cfg_.tokens[i];
    unsigned byte = 0;
    const bool byte_like = t.text.size() == 6 && t.text.compare(0, 3, "<0x") == 0 &&
                           t.text[5] == '>' && sscanf(t.text.c_str() + 3, "%2X", &byte) == 1;
    const bool byte_token =
        t.type == TokenType::Byte ||
        (byte_like && t.type == TokenType::Normal &&
         (cfg_.kind == ModelKind::Spm || cfg_.byte_fallback));
    if (byte_token && byte_like) {
      p.assign(1, char(byte));
      keep(i);
      continue;
    }
    switch (t.type) {
      case TokenType::Unused: p.clear(); break;
      case TokenType::Control:
      case TokenType::Unknown:
      case TokenType::UserDefined: p = t.text; break;
      default:
        if (cfg_.piece_mode == PieceMode::Raw) {
          p = cfg_.bpe_decoder_suffix.empty() ? t.text : replace_all(t.text, cfg_.bpe_decoder_suffix, " ");
        } else if (cfg_.piece_mode == PieceMode::SpaceMarker) {
          p.clear();
          for (size_t k = 0; k < t.text.size();) {
            if (t.text.compare(k, 3, "\xE2\x96\x81") == 0) {
              p += ' ';
              k += 3;
            } else {
              p += t.text[k++];
            }
          }
        } else {  // WordPiece
          const std::string& cont = cfg_.wpm_continuing_prefix;
          const std::string& word = cfg_.wpm_word_prefix;
          if (!cont.empty() && t.text.compare(0, cont.size(), cont) == 0)
            p = t.text.substr(cont.size());
          else if (!word.empty() && t.text.compare(0, word.size(), word) == 0)
            p = " " + t.text.substr(word.size());
          else if (!word.empty())
            p = t.text;
          else
            p = " " + t.text;
          if (cfg_.wpm_cleanup) p = clean_up_tokenization(std::move(p));
        }
    }
    keep(i);
  }

  for (TokenId id : {cfg_.eos, cfg_.eot, cfg_.eom})
    if (id >= 0) eog_.insert(id);
  for (TokenId id : cfg_.eog)
    if (id >= 0 && id < TokenId(n)) eog_.insert(id);

  added_by_byte_.resize(256);
  norm_added_by_byte_.resize(256);
  added_match_.resize(cfg_.added.size());
  for (uint32_t i = 0; i < cfg_.added.size(); ++i) {
    const AddedToken& a = cfg_.added[i];
    added_match_[i] = a.normalized ? normalize(a.content) : a.content;
    if (added_match_[i].empty()) continue;
    (a.normalized ? norm_added_by_byte_ : added_by_byte_)[uint8_t(added_match_[i][0])].push_back(i);
    has_norm_added_ = has_norm_added_ || a.normalized;
  }
  for (AddedTable* table : {&added_by_byte_, &norm_added_by_byte_})
    for (auto& v : *table)
      std::stable_sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) {
        return added_match_[a].size() > added_match_[b].size();
      });

  switch (cfg_.kind) {
    case ModelKind::Spm: spm_.emplace(cfg_, map_); break;
    case ModelKind::Bpe: bpe_.emplace(cfg_, map_); break;
    case ModelKind::Wpm: wpm_.emplace(cfg_, map_); break;
  }
}

// NOTE: added tokens of one table are found leftmost-longest in one scan (as Hugging Face's
// added-token matcher does); control/unknown tokens only when parse_special (as llama.cpp),
// user-defined ones always. lstrip/rstrip eat whitespace next to the token. encode() runs this on
// the raw text with the non-normalized tokens, then on each normalized remainder with the
// normalized ones (Hugging Face's AddedVocabulary order).
void TokenizerImpl::partition(std::string_view text, bool parse_special, const AddedTable& table,
                              std::vector<Fragment>* out) const {
  uint32_t start = 0;  // start of the pending text fragment
  size_t i = 0;
  auto word_char = [&](size_t pos) {
    if (pos >= text.size()) return false;
    const uint8_t c = uint8_t(text[pos]);
    return c >= 0x80 || std::isalnum(c) || c == '_';
  };
  while (i < text.size()) {
    const auto& cands = table[uint8_t(text[i])];
    const AddedToken* hit = nullptr;
    size_t hit_len = 0;
    for (uint32_t k : cands) {
      const AddedToken& a = cfg_.added[k];
      const std::string& m = added_match_[k];
      if (a.special && !parse_special) continue;
      if (text.compare(i, m.size(), m) != 0) continue;
      if (a.single_word && ((i > 0 && word_char(i - 1)) || word_char(i + m.size())))
        continue;
      hit = &a;
      hit_len = m.size();
      break;
    }
    if (!hit) {
      ++i;
      continue;
    }
    size_t left_end = i;
    if (hit->lstrip)
      while (left_end > start && is_space_byte(text[left_end - 1])) --left_end;
    if (left_end > start) out->push_back({false, -1, start, uint32_t(left_end)});
    out->push_back({true, hit->id, uint32_t(i), uint32_t(i + hit_len)});
    i += hit_len;
    if (hit->rstrip)
      while (i < text.size() && is_space_byte(text[i])) ++i;
    start = uint32_t(i);
  }
  if (start < text.size()) out->push_back({false, -1, start, uint32_t(text.size())});
}

void TokenizerImpl::encode_text(std::string_view frag, bool at_start, bool after_special,
                                bool normalized, WordCache* cache,
                                std::vector<TokenId>* out) const {
  if (cfg_.kind == ModelKind::Spm) {
    std::string s;
    if (cfg_.add_space_prefix && (at_start || after_special)) s = " ";
    s += normalized ? std::string(frag) : normalize(frag);
    if (cfg_.escape_whitespace) {
      std::string e;
      e.reserve(s.size() + 16);
      for (char c : s) {
        if (c == ' ') e += "\xE2\x96\x81";
        else e += c;
      }
      s = std::move(e);
    }
    spm_->encode(s, out);
    return;
  }
  std::string norm = normalized ? std::string(frag) : normalize(frag);
  Words words;
  if (cfg_.pretokenizer.empty()) {
    words.text = std::move(norm);
    if (!words.text.empty()) words.spans.push_back({0, uint32_t(words.text.size())});
  } else {
    cfg_.pretokenizer.apply(std::move(norm), at_start, &words);
  }
  for (const Span& sp : words.spans) {
    const std::string_view w = std::string_view(words.text).substr(sp.begin, sp.size());
    if (cfg_.kind == ModelKind::Wpm) {
      wpm_->encode_word(w, out);
      continue;
    }
    if (w.size() > 256) {  // long words are rare; do not let them fill the cache
      bpe_->encode_word(w, out);
      continue;
    }
    uint32_t b, e;
    if (!cache->find(w, &b, &e)) {
      b = uint32_t(cache->ids().size());
      bpe_->encode_word(w, &cache->ids());
      e = uint32_t(cache->ids().size());
      cache->insert(w, b, e);
    }
    out->insert(out->end(), cache->ids().begin() + b, cache->ids().begin() + e);
  }
}

std::vector<TokenId> TokenizerImpl::encode(std::string_view raw, bool add_special,
                                           bool parse_special) const {
  // Input that is not valid UTF-8 is repaired the way a Python caller's str would be.
  std::string repaired;
  if (!utf8_valid(raw)) {
    repaired = utf8_lossy(raw);
    raw = repaired;
  }
  std::vector<TokenId> out;
  if (add_special) {
    if (cfg_.has_template) out = cfg_.template_prefix;
    else if (cfg_.add_bos && cfg_.bos >= 0) out.push_back(cfg_.bos);
  }
  std::vector<Fragment> frags;
  partition(raw, parse_special, added_by_byte_, &frags);
  WordCache cache;
  bool after_special = false;
  std::vector<Fragment> sub;
  for (const Fragment& f : frags) {
    if (f.is_token) {
      out.push_back(f.id);
      after_special = true;
      continue;
    }
    const std::string_view piece = raw.substr(f.begin, f.end - f.begin);
    if (!has_norm_added_) {
      encode_text(piece, f.begin == 0, after_special, false, &cache, &out);
      after_special = false;
      continue;
    }
    // Hugging Face's order: normalize what the raw added tokens left, then take the normalized
    // added tokens out of it; the rest goes to the pre-tokenizer and the model as it is.
    const std::string norm = normalize(piece);
    sub.clear();
    partition(norm, parse_special, norm_added_by_byte_, &sub);
    for (const Fragment& g : sub) {
      if (g.is_token) {
        out.push_back(g.id);
        after_special = true;
        continue;
      }
      encode_text(std::string_view(norm).substr(g.begin, g.end - g.begin), f.begin == 0 && g.begin == 0,
                  after_special, true, &cache, &out);
      after_special = false;
    }
  }
  if (add_special) {
    if (cfg_.has_template) out.insert(out.end(), cfg_.template_suffix.begin(), cfg_.template_suffix.end());
    else if (cfg_.add_eos && cfg_.eos >= 0) out.push_back(cfg_.eos);
  }
  return out;
}

std::string TokenizerImpl::token_to_piece(TokenId id) const {
  check_id(id);
  return piece(id);
}

std::string TokenizerImpl::decode(const std::vector<TokenId>& ids, bool skip_special) const {
  std::string s;
  TokenId last = -1;
  size_t last_at = 0;
  bool first = true;
  for (TokenId id : ids) {
    check_id(id);
    if (skip_special && is_control(id)) continue;
    last = id;
    last_at = s.size();
    const auto& t = cfg_.tokens[size_t(id)];
    // NOTE: Hugging Face's WordPiece decoder leaves the first token as it is: a leading continuation
    // piece keeps its "##".
    if (first && cfg_.piece_mode == PieceMode::WordPiece && t.type == TokenType::Normal &&
        !cfg_.wpm_continuing_prefix.empty() &&
        t.text.compare(0, cfg_.wpm_continuing_prefix.size(), cfg_.wpm_continuing_prefix) == 0) {
      s += cfg_.wpm_cleanup ? clean_up_tokenization(t.text) : t.text;
    } else {
      s += piece(id);
    }
    first = false;
  }
  // BPEDecoder: the last token's end-of-word suffix becomes "" instead of a space.
  if (last >= 0 && !cfg_.bpe_decoder_suffix.empty() && cfg_.piece_mode == PieceMode::Raw &&
      cfg_.tokens[size_t(last)].type == TokenType::Normal &&
      cfg_.tokens[size_t(last)].text.find(cfg_.bpe_decoder_suffix) != std::string::npos) {
    s.resize(last_at);
    s += replace_all(cfg_.tokens[size_t(last)].text, cfg_.bpe_decoder_suffix, "");
  }
  if (cfg_.decode_strip_leading_space && !s.empty() && s[0] == ' ') s.erase(0, 1);
  if (!utf8_valid(s)) s = utf8_lossy(s);
  if (cfg_.clean_up_spaces) s = clean_up_tokenization(std::move(s));
  return s;
}

}  // namespace

std::string clean_up_tokenization(std::string s) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."},     {" ?", "?"},     {" !", "!"},     {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"},   {" 's", "'s"},   {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) s = replace_all(s, from, to);
  return s;
}

std::unique_ptr<Tokenizer> make_tokenizer(TokenizerConfig cfg) {
  return std::make_unique<TokenizerImpl>(std::move(cfg));
}

void MergeList::emplace_back(std::string_view a, std::string_view b) {
  if (text_.size() + a.size() + b.size() > UINT32_MAX) fail("BPE merges: more than 4 GiB of merge text");
  text_ += a;
  const auto a_end = static_cast<uint32_t>(text_.size());
  text_ += b;
  ends_.push_back({a_end, static_cast<uint32_t>(text_.size())});
}

void add_eog_by_text(TokenizerConfig& cfg) {
  static const char* const kEog[] = {
      "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
      "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
      "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"};
  for (size_t i = 0; i < cfg.tokens.size(); ++i) {
    const auto& t = cfg.tokens[i];
    if (t.type != TokenType::Control && t.type != TokenType::UserDefined) continue;
    for (const char* e : kEog)
      if (t.text == e) cfg.eog.push_back(TokenId(i));
  }
}

}  // namespace ignis::text
