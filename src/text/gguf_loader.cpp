// Tokenizer::from_gguf: the tokenizer.ggml.* metadata of a GGUF (model or vocab-only file).
#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "format/gguf.h"
#include "text/pre_types.h"
#include "text/unicode.h"
#include "text/vocab.h"

namespace ignis::text {

namespace {

TokenId opt_id(const gguf::GgufFile& f, const char* key) {
  auto v = f.opt_int(key);
  if (!v) return -1;
  // Converters write -1 as uint32 0xFFFFFFFF for "no such token".
  if (*v == -1 || *v == int64_t(UINT32_MAX)) return -1;
  if (*v < -1 || *v > INT32_MAX) fail("{}: metadata key {} has value {}, not a token id", f.path(), key, *v);
  return TokenId(*v);
}

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(uint8_t(c)));
  return s;
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::GgufFile& f) {
  TokenizerConfig cfg;
  cfg.source = f.path();
  const std::string model = f.get_string("tokenizer.ggml.model");
  if (model == "llama") cfg.kind = ModelKind::Spm;
  else if (model == "gpt2") cfg.kind = ModelKind::Bpe;
  else if (model == "bert") cfg.kind = ModelKind::Wpm;
  else fail("{}: tokenizer.ggml.model '{}' is not supported (supported: llama, gpt2, bert)", f.path(), model);

  // The texts go straight into the entries (no vector of them first: 4.9 MB of fresh memory for
  // Qwen2.5's vocabulary, MergeList's NOTE).
  const size_t n = f.array_size("tokenizer.ggml.tokens");
  cfg.tokens.resize(n);
  {
    size_t i = 0;
    f.for_each_string("tokenizer.ggml.tokens", [&](std::string_view text) { cfg.tokens[i++].text = text; });
  }
  std::vector<float> scores;
  if (f.has("tokenizer.ggml.scores")) {
    scores = f.get_float_array("tokenizer.ggml.scores");
    if (scores.size() != n)
      fail("{}: tokenizer.ggml.scores has {} entries, tokenizer.ggml.tokens has {}", f.path(), scores.size(), n);
  }
  std::vector<int64_t> types;
  if (f.has("tokenizer.ggml.token_type")) {
    types = f.get_int_array("tokenizer.ggml.token_type");
    if (types.size() != n)
      fail("{}: tokenizer.ggml.token_type has {} entries, tokenizer.ggml.tokens has {}", f.path(), types.size(), n);
  }
  for (size_t i = 0; i < n; ++i) {
    TokenEntry& t = cfg.tokens[i];
    t.score = scores.empty() ? 0.0f : scores[i];
    const int64_t ty = types.empty() ? 1 : types[i];
    if (ty < 0 || ty > 6)
      fail("{}: tokenizer.ggml.token_type[{}] is {}, expected 0..6", f.path(), i, ty);
    t.type = ty == 0 ? TokenType::Normal : TokenType(ty);
  }

  cfg.bos = opt_id(f, "tokenizer.ggml.bos_token_id");
  cfg.eos = opt_id(f, "tokenizer.ggml.eos_token_id");
  cfg.unk = opt_id(f, "tokenizer.ggml.unknown_token_id");
  cfg.sep = opt_id(f, "tokenizer.ggml.seperator_token_id");
  if (cfg.sep < 0) cfg.sep = opt_id(f, "tokenizer.ggml.separator_token_id");
  cfg.pad = opt_id(f, "tokenizer.ggml.padding_token_id");
  cfg.eot = opt_id(f, "tokenizer.ggml.eot_token_id");
  cfg.eom = opt_id(f, "tokenizer.ggml.eom_token_id");
  if (auto t = f.opt_string("tokenizer.chat_template")) cfg.chat_template = *t;

  switch (cfg.kind) {
    case ModelKind::Spm:
      cfg.add_bos = true;
      cfg.add_space_prefix = true;
      cfg.escape_whitespace = true;
      cfg.piece_mode = PieceMode::SpaceMarker;
      if (cfg.unk < 0) cfg.unk = 0;
      break;
    case ModelKind::Bpe: {
      cfg.piece_mode = PieceMode::Raw;
      cfg.byte_level = true;
      set_gguf_pre_tokenizer(f.opt_string("tokenizer.ggml.pre").value_or(""), f.path(), &cfg);
      // Byte-level vocabularies: normal tokens are spelled in GPT-2's printable alphabet.
      std::string raw;
      for (auto& t : cfg.tokens) {
        if (t.type != TokenType::Normal && t.type != TokenType::Unused) continue;
        if (byte_level_decode(t.text, &raw)) t.text = raw;
      }
      cfg.merges.reserve(f.array_size("tokenizer.ggml.merges"));
      std::string a, b;
      size_t i = 0;
      f.for_each_string("tokenizer.ggml.merges", [&](std::string_view m) {
        const size_t sp = m.find(' ', 1);
        if (sp == std::string_view::npos)
          fail("{}: tokenizer.ggml.merges[{}] '{}' is not two tokens separated by a space", f.path(), i, m);
        if (!byte_level_decode(m.substr(0, sp), &a)) a = m.substr(0, sp);
        if (!byte_level_decode(m.substr(sp + 1), &b)) b = m.substr(sp + 1);
        cfg.merges.emplace_back(a, b);
        ++i;
      });
      break;
    }
    case ModelKind::Wpm: {
      cfg.add_bos = true;  // [CLS] ... [SEP]
      cfg.has_template = true;
      // [CLS] is llama.cpp's BOS for WordPiece vocabularies.
      if (TokenId cls = opt_id(f, "tokenizer.ggml.cls_token_id"); cls >= 0) cfg.bos = cls;
      if (cfg.bos >= 0) cfg.template_prefix = {cfg.bos};
      if (cfg.sep >= 0) cfg.template_suffix = {cfg.sep};
      NormalizerStep ns;
      ns.kind = NormalizerStep::BertClean;
      ns.lowercase = true;
      ns.strip_accents = true;  // BertNormalizer: strip_accents follows lowercase
      cfg.normalizer.add(ns);
      PreStep ps;
      ps.kind = PreStep::Bert;
      cfg.pretokenizer.add(ps);
      cfg.wpm_word_prefix = "\xE2\x96\x81";
      cfg.piece_mode = PieceMode::WordPiece;
      cfg.decode_strip_leading_space = true;
      break;
    }
  }
  if (auto v = f.opt_bool("tokenizer.ggml.add_bos_token")) cfg.add_bos = *v;
  if (auto v = f.opt_bool("tokenizer.ggml.add_eos_token")) cfg.add_eos = *v;
  if (cfg.kind == ModelKind::Spm) {
    if (auto v = f.opt_bool("tokenizer.ggml.add_space_prefix")) cfg.add_space_prefix = *v;
    cfg.decode_strip_leading_space = cfg.add_space_prefix;
  }
  if (cfg.kind == ModelKind::Wpm && !cfg.add_bos) cfg.template_prefix.clear();

  // Control, user-defined and unknown tokens are matched in the raw text before the model.
  const std::string name = lower(f.opt_string("general.name").value_or(""));
  const bool phi3 = name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos;
  for (size_t i = 0; i < n; ++i) {
    const TokenEntry& t = cfg.tokens[i];
    if (t.type != TokenType::Control && t.type != TokenType::UserDefined && t.type != TokenType::Unknown)
      continue;
    if (t.text.empty()) continue;
    AddedToken a;
    a.id = TokenId(i);
    a.content = t.text;
    a.special = t.type != TokenType::UserDefined;
    if (phi3) a.rstrip = t.text != "<unk>" && t.text != "<s>" && t.text != "<|endoftext|>";
    cfg.added.push_back(std::move(a));
  }
  add_eog_by_text(cfg);
  return make_tokenizer(std::move(cfg));
}

}  // namespace ignis::text
