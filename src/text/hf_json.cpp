// Hugging Face tokenizer.json: model (BPE, WordPiece), normalizer, pre-tokenizer, added tokens,
// post-processor and decoder, mapped onto a TokenizerConfig.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/file_util.h"
#include "text/hf_loader.h"
#include "text/unicode.h"

namespace ignis::text {

using nlohmann::json;

namespace {

struct Ctx {
  std::string path;
  bool byte_level = false;  // a ByteLevel pre-tokenizer or decoder: vocabulary is byte-level
};

std::string str(const json& j, const char* key, const Ctx& c, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string())
    fail("{}: {}.{} is missing or not a string", c.path, where, key);
  return j[key].get<std::string>();
}

bool flag(const json& j, const char* key, bool def) {
  return j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : def;
}

std::string type_of(const json& j, const Ctx& c, const std::string& where) {
  if (!j.is_object()) fail("{}: {} is not an object", c.path, where);
  return str(j, "type", c, where);
}

// {"String": "x"} or {"Regex": "x"} -> a regex pattern.
std::string pattern_of(const json& j, const Ctx& c, const std::string& where, bool* is_regex) {
  if (j.is_object() && j.contains("Regex") && j["Regex"].is_string()) {
    *is_regex = true;
    return j["Regex"].get<std::string>();
  }
  if (j.is_object() && j.contains("String") && j["String"].is_string()) {
    *is_regex = false;
    return j["String"].get<std::string>();
  }
  fail("{}: {}.pattern must be {{\"String\": ...}} or {{\"Regex\": ...}}", c.path, where);
}

SplitBehavior behavior_of(const json& j, const Ctx& c, const std::string& where) {
  const std::string b = j.is_string() ? j.get<std::string>() : "";
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  fail("{}: {}.behavior '{}' is not a split behaviour", c.path, where, b);
}

void add_normalizer(const json& j, const Ctx& c, const std::string& where, Normalizer* out) {
  if (j.is_null()) return;
  const std::string t = type_of(j, c, where);
  NormalizerStep s;
  if (t == "Sequence") {
    if (!j.contains("normalizers") || !j["normalizers"].is_array())
      fail("{}: {}.normalizers is not an array", c.path, where);
    for (size_t i = 0; i < j["normalizers"].size(); ++i)
      add_normalizer(j["normalizers"][i], c, where + ".normalizers[" + std::to_string(i) + "]", out);
    return;
  }
  if (t == "NFC") s.kind = NormalizerStep::NFC;
  else if (t == "NFD") s.kind = NormalizerStep::NFD;
  else if (t == "NFKC") s.kind = NormalizerStep::NFKC;
  else if (t == "NFKD") s.kind = NormalizerStep::NFKD;
  else if (t == "Lowercase") s.kind = NormalizerStep::Lowercase;
  else if (t == "StripAccents") s.kind = NormalizerStep::StripAccents;
  else if (t == "Strip") {
    s.kind = NormalizerStep::Strip;
    s.left = flag(j, "strip_left", true);
    s.right = flag(j, "strip_right", true);
  } else if (t == "Prepend") {
    s.kind = NormalizerStep::Prepend;
    s.content = str(j, "prepend", c, where);
  } else if (t == "Append") {
    s.kind = NormalizerStep::Append;
    s.content = str(j, "append", c, where);
  } else if (t == "Replace") {
    bool re = false;
    const std::string p = pattern_of(j["pattern"], c, where, &re);
    s.content = str(j, "content", c, where);
    if (re) {
      s.kind = NormalizerStep::ReplaceRegex;
      s.regex = std::make_shared<Regex>(p, c.path + ": " + where);
    } else {
      s.kind = NormalizerStep::Replace;
      s.pattern = p;
    }
  } else if (t == "BertNormalizer") {
    s.kind = NormalizerStep::BertClean;
    s.clean_text = flag(j, "clean_text", true);
    s.chinese_chars = flag(j, "handle_chinese_chars", true);
    s.lowercase = flag(j, "lowercase", true);
    s.strip_accents = flag(j, "strip_accents", s.lowercase);  // null follows lowercase
  } else {
    fail("{}: normalizer type '{}' at {} is not supported", c.path, t, where);
  }
  out->add(std::move(s));
}

PreStep::Prepend prepend_scheme(const json& j) {
  if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
    const std::string s = j["prepend_scheme"].get<std::string>();
    if (s == "first") return PreStep::First;
    if (s == "never") return PreStep::Never;
    return PreStep::Always;
  }
  return flag(j, "add_prefix_space", true) ? PreStep::Always : PreStep::Never;
}

void add_pre(const json& j, Ctx& c, const std::string& where, PreTokenizer* out) {
  if (j.is_null()) return;
  const std::string t = type_of(j, c, where);
  PreStep s;
  if (t == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array())
      fail("{}: {}.pretokenizers is not an array", c.path, where);
    for (size_t i = 0; i < j["pretokenizers"].size(); ++i)
      add_pre(j["pretokenizers"][i], c, where + ".pretokenizers[" + std::to_string(i) + "]", out);
    return;
  }
  if (t == "Split") {
    bool re = false;
    const std::string p = pattern_of(j["pattern"], c, where, &re);
    s.kind = PreStep::Split;
    s.regex = std::make_shared<Regex>(re ? p : regex_escape(p), c.path + ": " + where);
    s.behavior = behavior_of(j["behavior"], c, where);
    s.invert = flag(j, "invert", false);
  } else if (t == "ByteLevel") {
    c.byte_level = true;
    s.kind = PreStep::ByteLevel;
    s.add_prefix_space = flag(j, "add_prefix_space", false);
    if (flag(j, "use_regex", true)) s.regex = std::make_shared<Regex>(kGpt2Pattern, c.path + ": " + where);
  } else if (t == "Metaspace") {
    s.kind = PreStep::Metaspace;
    s.replacement = j.contains("replacement") && j["replacement"].is_string() ? j["replacement"].get<std::string>() : "\xE2\x96\x81";
    s.prepend = prepend_scheme(j);
    s.split = flag(j, "split", true);
  } else if (t == "Digits") {
    s.kind = PreStep::Digits;
    s.individual_digits = flag(j, "individual_digits", false);
  } else if (t == "Whitespace") {
    s.kind = PreStep::Whitespace;
  } else if (t == "WhitespaceSplit") {
    s.kind = PreStep::WhitespaceSplit;
  } else if (t == "Punctuation") {
    s.kind = PreStep::Punctuation;
    s.behavior = j.contains("behavior") ? behavior_of(j["behavior"], c, where) : SplitBehavior::Isolated;
  } else if (t == "BertPreTokenizer") {
    s.kind = PreStep::Bert;
  } else {
    fail("{}: pre-tokenizer type '{}' at {} is not supported", c.path, t, where);
  }
  out->add(std::move(s));
}

// Sets piece_mode / decode_strip_leading_space from the decoder.
void apply_decoder(const json& j, Ctx& c, TokenizerConfig* cfg) {
  if (j.is_null()) return;
  const std::string t = type_of(j, c, "decoder");
  if (t == "ByteLevel") {
    c.byte_level = true;
    cfg->piece_mode = PieceMode::Raw;
  } else if (t == "Metaspace") {
    cfg->piece_mode = PieceMode::SpaceMarker;
    cfg->decode_strip_leading_space = prepend_scheme(j) != PreStep::Never;
  } else if (t == "WordPiece") {
    cfg->piece_mode = PieceMode::WordPiece;
    cfg->wpm_continuing_prefix = j.contains("prefix") && j["prefix"].is_string() ? j["prefix"].get<std::string>() : "##";
    cfg->wpm_cleanup = flag(j, "cleanup", true);
    cfg->decode_strip_leading_space = true;
  } else if (t == "BPEDecoder") {
    cfg->piece_mode = PieceMode::Raw;
    cfg->bpe_decoder_suffix = j.contains("suffix") && j["suffix"].is_string() ? j["suffix"].get<std::string>() : "</w>";
  } else if (t == "Sequence") {
    if (!j.contains("decoders") || !j["decoders"].is_array()) fail("{}: decoder.decoders is not an array", c.path);
    for (const auto& d : j["decoders"]) {
      const std::string dt = type_of(d, c, "decoder.decoders[]");
      if (dt == "Replace") {
        bool re = false;
        const std::string p = d.contains("pattern") ? pattern_of(d["pattern"], c, "decoder.decoders[]", &re) : "";
        if (re || p != "\xE2\x96\x81" || !d.contains("content") || d["content"] != " ")
          fail("{}: decoder Replace '{}' -> {} is not supported (only U+2581 -> \" \")", c.path, p,
               d.contains("content") ? d["content"].dump() : "nothing");
        cfg->piece_mode = PieceMode::SpaceMarker;
      } else if (dt == "Strip") {
        // NOTE: the form Hugging Face's files use (Llama, Mistral): after Fuse, drop one leading space.
        const int start = d.value("start", 0), stop = d.value("stop", 0);
        if (d.value("content", std::string(" ")) != " " || start > 1 || start < 0 || stop != 0)
          fail("{}: decoder Strip (content {}, start {}, stop {}) is not supported (only one leading space)", c.path,
               d.contains("content") ? d["content"].dump() : "\" \"", start, stop);
        if (start > 0) cfg->decode_strip_leading_space = true;
      } else if (dt == "ByteLevel" || dt == "Metaspace" || dt == "WordPiece" || dt == "BPEDecoder") {
        apply_decoder(d, c, cfg);
      } else if (dt != "ByteFallback" && dt != "Fuse") {  // these two are how every decode works
        fail("{}: decoder type '{}' in decoder.decoders is not supported", c.path, dt);
      }
    }
  } else if (t == "Replace" || t == "Strip" || t == "ByteFallback" || t == "Fuse") {
    apply_decoder(json{{"type", "Sequence"}, {"decoders", json::array({j})}}, c, cfg);
  } else {
    fail("{}: decoder type '{}' is not supported", c.path, t);
  }
}

// TemplateProcessing / BertProcessing / RobertaProcessing -> prefix and suffix ids.
void apply_post(const json& j, const Ctx& c, TokenizerConfig* cfg) {
  if (j.is_null()) return;
  const std::string t = type_of(j, c, "post_processor");
  if (t == "Sequence") {
    if (j.contains("processors") && j["processors"].is_array())
      for (const auto& p : j["processors"]) apply_post(p, c, cfg);
    return;
  }
  if (t == "TemplateProcessing") {
    if (!j.contains("single") || !j["single"].is_array()) fail("{}: post_processor.single is not an array", c.path);
    const json& specials = j.contains("special_tokens") ? j["special_tokens"] : json::object();
    cfg->has_template = true;
    cfg->template_prefix.clear();
    cfg->template_suffix.clear();
    bool seen_seq = false;
    for (const auto& piece : j["single"]) {
      if (piece.contains("Sequence")) {
        seen_seq = true;
        continue;
      }
      if (!piece.contains("SpecialToken")) fail("{}: post_processor.single has an unknown piece", c.path);
      const std::string name = str(piece["SpecialToken"], "id", c, "post_processor.single[].SpecialToken");
      if (!specials.contains(name) || !specials[name].contains("ids") || !specials[name]["ids"].is_array())
        fail("{}: post_processor special token '{}' has no ids", c.path, name);
      for (const auto& id : specials[name]["ids"]) {
        if (!id.is_number_integer()) fail("{}: post_processor special token '{}' has a non-integer id", c.path, name);
        (seen_seq ? cfg->template_suffix : cfg->template_prefix).push_back(id.get<TokenId>());
      }
    }
  } else if (t == "BertProcessing" || t == "RobertaProcessing") {
    auto pair_id = [&](const char* key) {
      if (!j.contains(key) || !j[key].is_array() || j[key].size() != 2 || !j[key][1].is_number_integer())
        fail("{}: post_processor.{} must be [token, id]", c.path, key);
      return j[key][1].get<TokenId>();
    };
    cfg->has_template = true;
    cfg->template_prefix = {pair_id("cls")};
    cfg->template_suffix = {pair_id("sep")};
  }
  // ByteLevel post-processing only adjusts offsets.
}

std::string model_text(const std::string& s, bool byte_level) {
  std::string raw;
  return byte_level && byte_level_decode(s, &raw) ? raw : s;
}

void load_model(const json& m, const Ctx& c, TokenizerConfig* cfg) {
  const std::string t = m.contains("type") && m["type"].is_string() ? m["type"].get<std::string>()
                        : m.contains("merges")                      ? "BPE"
                                                                    : "";
  if (!m.contains("vocab") || !m["vocab"].is_object())
    fail("{}: model.vocab is missing or not an object (model type '{}')", c.path, t);
  if (t != "BPE" && t != "WordPiece") fail("{}: model type '{}' is not supported (BPE, WordPiece)", c.path, t);
  const json& vocab = m["vocab"];
  const bool bl = t == "BPE" && c.byte_level;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer()) fail("{}: model.vocab['{}'] is not an integer id", c.path, it.key());
    const TokenId id = it.value().get<TokenId>();
    ensure_token(cfg, id, c.path);
    cfg->tokens[size_t(id)] = {model_text(it.key(), bl), 0.0f, TokenType::Normal};
  }
  auto unk = [&]() -> TokenId {
    if (!m.contains("unk_token") || !m["unk_token"].is_string()) return -1;
    const std::string u = m["unk_token"].get<std::string>();
    if (!vocab.contains(u)) fail("{}: model.unk_token '{}' is not in model.vocab", c.path, u);
    return vocab[u].get<TokenId>();
  };
  cfg->unk = unk();
  if (t == "WordPiece") {
    cfg->kind = ModelKind::Wpm;
    cfg->wpm_continuing_prefix = m.contains("continuing_subword_prefix") && m["continuing_subword_prefix"].is_string()
                                     ? m["continuing_subword_prefix"].get<std::string>() : "##";
    cfg->wpm_max_chars = m.value("max_input_chars_per_word", 100);
    cfg->piece_mode = PieceMode::WordPiece;
    cfg->decode_strip_leading_space = true;
    return;
  }
  cfg->kind = ModelKind::Bpe;
  cfg->byte_level = bl;
  cfg->byte_fallback = flag(m, "byte_fallback", false);
  cfg->ignore_merges = flag(m, "ignore_merges", false);
  cfg->fuse_unk = flag(m, "fuse_unk", false);
  if (m.contains("continuing_subword_prefix") && m["continuing_subword_prefix"].is_string())
    cfg->continuing_subword_prefix = m["continuing_subword_prefix"].get<std::string>();
  if (m.contains("end_of_word_suffix") && m["end_of_word_suffix"].is_string())
    cfg->end_of_word_suffix = m["end_of_word_suffix"].get<std::string>();
  if (!m.contains("merges") || !m["merges"].is_array()) fail("{}: model.merges is missing or not an array", c.path);
  const json& merges = m["merges"];
  cfg->merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& e = merges[i];
    if (e.is_string()) {  // "a b"
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ', 1);
      if (sp == std::string::npos) fail("{}: model.merges[{}] '{}' is not two tokens separated by a space", c.path, i, s);
      cfg->merges.emplace_back(model_text(s.substr(0, sp), bl), model_text(s.substr(sp + 1), bl));
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {  // ["a", "b"]
      cfg->merges.emplace_back(model_text(e[0].get<std::string>(), bl), model_text(e[1].get<std::string>(), bl));
    } else {
      fail("{}: model.merges[{}] is neither \"a b\" nor [\"a\", \"b\"]", c.path, i);
    }
  }
}

}  // namespace

std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::string& path, const std::string& config_path) {
  const json j = read_json_file(path);
  if (!j.is_object() || !j.contains("model")) fail("{}: not a tokenizer.json (no model)", path);
  TokenizerConfig cfg;
  cfg.source = path;
  cfg.piece_mode = PieceMode::SpaceMarker;
  Ctx c{path};
  if (j.contains("normalizer")) add_normalizer(j["normalizer"], c, "normalizer", &cfg.normalizer);
  if (j.contains("pre_tokenizer")) add_pre(j["pre_tokenizer"], c, "pre_tokenizer", &cfg.pretokenizer);
  if (j.contains("decoder")) apply_decoder(j["decoder"], c, &cfg);
  if (c.byte_level) cfg.piece_mode = PieceMode::Raw;
  load_model(j["model"], c, &cfg);
  if (cfg.kind == ModelKind::Wpm && cfg.piece_mode != PieceMode::WordPiece) cfg.piece_mode = PieceMode::WordPiece;
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (size_t i = 0; i < j["added_tokens"].size(); ++i) {
      const json& e = j["added_tokens"][i];
      const std::string where = "added_tokens[" + std::to_string(i) + "]";
      if (!e.contains("id") || !e["id"].is_number_integer()) fail("{}: {}.id is not an integer", path, where);
      AddedToken a;
      a.id = e["id"].get<TokenId>();
      a.content = str(e, "content", c, where);
      a.special = flag(e, "special", false);
      a.lstrip = flag(e, "lstrip", false);
      a.rstrip = flag(e, "rstrip", false);
      a.single_word = flag(e, "single_word", false);
      a.normalized = flag(e, "normalized", !a.special);
      add_added_token(&cfg, a, path);
    }
  }
  if (j.contains("post_processor")) apply_post(j["post_processor"], c, &cfg);
  // Without a config, BOS/EOS are the template's first / last special tokens.
  if (!cfg.template_prefix.empty()) cfg.bos = cfg.template_prefix.front();
  if (!cfg.template_suffix.empty()) cfg.eos = cfg.template_suffix.back();
  if (!config_path.empty()) apply_tokenizer_config(config_path, &cfg);
  add_eog_by_text(cfg);
  return make_tokenizer(std::move(cfg));
}

}  // namespace ignis::text
