// SentencePiece .model files: a protobuf ModelProto read with a small bounds-checked wire-format
// reader (no protobuf dependency). Only the fields the BPE encoder needs are read:
//   ModelProto { repeated SentencePiece pieces = 1; TrainerSpec trainer_spec = 2;
//                NormalizerSpec normalizer_spec = 3; }
//   SentencePiece { string piece = 1; float score = 2; Type type = 3; }
//   TrainerSpec { ModelType model_type = 3; bool byte_fallback = 35; int32 unk_id = 40,
//                 bos_id = 41, eos_id = 42, pad_id = 43; }
//   NormalizerSpec { string name = 1; bool add_dummy_prefix = 3; bool remove_extra_whitespaces = 4;
//                    bool escape_whitespaces = 5; }
#include <cstring>

#include "core/error.h"
#include "text/file_util.h"
#include "text/hf_loader.h"

namespace ignis::text {

namespace {

class Reader {
 public:
  Reader(std::string_view data, const std::string& path) : d_(data), path_(path) {}
  bool done() const { return pos_ >= d_.size(); }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= d_.size()) fail("{}: truncated protobuf varint at byte {}", path_, pos_);
      const uint8_t b = uint8_t(d_[pos_++]);
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("{}: malformed protobuf varint at byte {}", path_, pos_);
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    if (n > d_.size() - pos_) fail("{}: protobuf field of {} bytes runs past the end", path_, n);
    std::string_view s = d_.substr(pos_, size_t(n));
    pos_ += size_t(n);
    return s;
  }
  uint32_t fixed32() {
    if (d_.size() - pos_ < 4) fail("{}: truncated protobuf fixed32", path_);
    uint32_t v;
    std::memcpy(&v, d_.data() + pos_, 4);
    pos_ += 4;
    return v;
  }
  void skip(uint32_t wire) {
    switch (wire) {
      case 0: varint(); break;
      case 1:
        if (d_.size() - pos_ < 8) fail("{}: truncated protobuf fixed64", path_);
        pos_ += 8;
        break;
      case 2: bytes(); break;
      case 5: fixed32(); break;
      default: fail("{}: unsupported protobuf wire type {} at byte {}", path_, wire, pos_);
    }
  }

 private:
  std::string_view d_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

void load_sentencepiece_config(const std::string& path, TokenizerConfig* cfg) {
  const std::string data = read_text_file(path);
  cfg->source = path;
  cfg->kind = ModelKind::Spm;
  cfg->piece_mode = PieceMode::SpaceMarker;
  int model_type = 1;  // UNIGRAM is protobuf's default
  bool add_dummy_prefix = true, remove_extra_ws = true, escape_ws = true;
  std::string norm_name;
  int64_t unk = 0, bos = 1, eos = 2, pad = -1;
  Reader r(data, path);
  while (!r.done()) {
    const uint64_t key = r.varint();
    const uint32_t field = uint32_t(key >> 3), wire = uint32_t(key & 7);
    if (field == 1 && wire == 2) {
      Reader p(r.bytes(), path);
      TokenEntry t;
      while (!p.done()) {
        const uint64_t k = p.varint();
        const uint32_t f = uint32_t(k >> 3), w = uint32_t(k & 7);
        if (f == 1 && w == 2) t.text = std::string(p.bytes());
        else if (f == 2 && w == 5) {
          const uint32_t bits = p.fixed32();
          std::memcpy(&t.score, &bits, 4);
        } else if (f == 3 && w == 0) {
          const uint64_t ty = p.varint();
          if (ty < 1 || ty > 6) fail("{}: piece {} has unknown type {}", path, cfg->tokens.size(), ty);
          t.type = TokenType(ty);
        } else {
          p.skip(w);
        }
      }
      cfg->tokens.push_back(std::move(t));
    } else if (field == 2 && wire == 2) {
      Reader t(r.bytes(), path);
      while (!t.done()) {
        const uint64_t k = t.varint();
        const uint32_t f = uint32_t(k >> 3), w = uint32_t(k & 7);
        if (w != 0) {
          t.skip(w);
          continue;
        }
        const int64_t v = int64_t(t.varint());
        const int32_t v32 = int32_t(uint32_t(v));
        switch (f) {
          case 3: model_type = int(v); break;
          case 35: cfg->byte_fallback = v != 0; break;
          case 40: unk = v32; break;
          case 41: bos = v32; break;
          case 42: eos = v32; break;
          case 43: pad = v32; break;
          default: break;
        }
      }
    } else if (field == 3 && wire == 2) {
      Reader n(r.bytes(), path);
      while (!n.done()) {
        const uint64_t k = n.varint();
        const uint32_t f = uint32_t(k >> 3), w = uint32_t(k & 7);
        if (f == 1 && w == 2) norm_name = std::string(n.bytes());
        else if (f == 3 && w == 0) add_dummy_prefix = n.varint() != 0;
        else if (f == 4 && w == 0) remove_extra_ws = n.varint() != 0;
        else if (f == 5 && w == 0) escape_ws = n.varint() != 0;
        else n.skip(w);
      }
    } else {
      r.skip(wire);
    }
  }
  if (cfg->tokens.empty()) fail("{}: no pieces (is this a SentencePiece model?)", path);
  if (model_type != 2)
    fail("{}: SentencePiece model type {} is not supported (only BPE, type 2)", path, model_type);
  if (!norm_name.empty() && norm_name != "identity")
    fail("{}: SentencePiece normalizer '{}' is not supported (only identity)", path, norm_name);
  if (remove_extra_ws)
    fail("{}: SentencePiece remove_extra_whitespaces is not supported", path);
  const auto n = int64_t(cfg->tokens.size());
  auto id = [&](int64_t v) { return v >= 0 && v < n ? TokenId(v) : TokenId(-1); };
  cfg->unk = id(unk);
  cfg->bos = id(bos);
  cfg->eos = id(eos);
  cfg->pad = id(pad);
  cfg->add_bos = true;
  cfg->add_eos = false;
  cfg->add_space_prefix = add_dummy_prefix;
  cfg->escape_whitespace = escape_ws;
  cfg->decode_strip_leading_space = add_dummy_prefix;
  for (size_t i = 0; i < cfg->tokens.size(); ++i) {
    const TokenEntry& t = cfg->tokens[i];
    if (t.type != TokenType::Control && t.type != TokenType::UserDefined && t.type != TokenType::Unknown)
      continue;
    AddedToken a;
    a.id = TokenId(i);
    a.content = t.text;
    a.special = t.type != TokenType::UserDefined;
    cfg->added.push_back(std::move(a));
  }
}

std::unique_ptr<Tokenizer> load_sentencepiece_model(const std::string& path) {
  TokenizerConfig cfg;
  load_sentencepiece_config(path, &cfg);
  add_eog_by_text(cfg);
  return make_tokenizer(std::move(cfg));
}

}  // namespace ignis::text
