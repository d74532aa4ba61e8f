// GPT-2 style vocab.json + merges.txt (and encoder.json + vocab.bpe), tokenizer_config.json,
// added_tokens.json, and the Hugging Face folder loader (see hf_loader.h).
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/file_util.h"
#include "text/hf_loader.h"
#include "text/pre_types.h"
#include "text/unicode.h"

namespace ignis::text {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open file", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("{}: read error", path);
  return ss.str();
}

json read_json_file(const std::string& path) {
  const std::string text = read_text_file(path);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail("{}: invalid JSON: {}", path, e.what());
  }
}

// Ensures token `id` exists (the vocabulary grows with unused placeholders).
void ensure_token(TokenizerConfig* cfg, TokenId id, const std::string& source) {
  if (id < 0 || id > 10'000'000) fail("{}: token id {} is out of range", source, id);
  if (size_t(id) >= cfg->tokens.size()) {
    TokenEntry e;
    e.type = TokenType::Unused;
    cfg->tokens.resize(size_t(id) + 1, e);
  }
}

void add_added_token(TokenizerConfig* cfg, const AddedToken& a, const std::string& source) {
  ensure_token(cfg, a.id, source);
  TokenEntry& t = cfg->tokens[size_t(a.id)];
  t.text = a.content;
  t.type = a.special ? TokenType::Control : TokenType::UserDefined;
  for (auto& x : cfg->added)
    if (x.id == a.id) {
      x = a;
      return;
    }
  cfg->added.push_back(a);
}

static TokenId find_token(const TokenizerConfig& cfg, const std::string& text) {
  for (const auto& a : cfg.added)
    if (a.content == text) return a.id;
  for (size_t i = 0; i < cfg.tokens.size(); ++i)
    if (cfg.tokens[i].text == text) return TokenId(i);
  return -1;
}

static std::string token_content(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return {};
}

namespace {

// NOTE: vocab.json holds ~150k entries; a SAX pass avoids building a DOM (std::map per key),
// which was most of the load time.
struct VocabSax : nlohmann::json_sax<json> {
  std::vector<std::pair<std::string, int64_t>> entries;
  std::string key_, error;
  int depth = 0;
  bool top_is_object = false;
  bool null() override { return bad("null"); }
  bool boolean(bool) override { return bad("a boolean"); }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override { return value(int64_t(v)); }
  bool number_float(number_float_t, const string_t&) override { return bad("a float"); }
  bool string(string_t&) override { return bad("a string"); }
  bool binary(binary_t&) override { return bad("binary"); }
  bool start_object(std::size_t) override {
    if (depth++ > 0) return bad("an object");
    top_is_object = true;
    return true;
  }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    --depth;
    return true;
  }
  bool start_array(std::size_t) override { return bad("an array"); }
  bool end_array() override { return true; }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) override {
    error = e.what();
    return false;
  }
  bool value(int64_t v) {
    if (depth != 1) return bad("a number");
    entries.emplace_back(std::move(key_), v);
    return true;
  }
  bool bad(const char* what) {
    error = std::string("expected token -> id pairs, found ") + what + (key_.empty() ? "" : " for '" + key_ + "'");
    return false;
  }
};

}  // namespace

std::vector<std::pair<std::string, int64_t>> read_vocab_json(const std::string& path) {
  const std::string text = read_text_file(path);
  VocabSax sax;
  const bool ok = json::sax_parse(text, &sax);
  if (!ok || !sax.top_is_object) fail("{}: {}", path, sax.error.empty() ? "expected a JSON object of token -> id" : sax.error);
  return std::move(sax.entries);
}

void load_vocab_merges(const std::string& vocab_path, const std::string& merges_path,
                       TokenizerConfig* cfg) {
  const auto vocab = read_vocab_json(vocab_path);
  cfg->source = vocab_path;
  cfg->kind = ModelKind::Bpe;
  cfg->piece_mode = PieceMode::Raw;
  cfg->byte_level = true;
  std::string raw;
  for (const auto& [text, id] : vocab) {
    if (id < 0 || id > INT32_MAX) fail("{}: token '{}' has id {}", vocab_path, text, id);
    ensure_token(cfg, TokenId(id), vocab_path);
    TokenEntry& t = cfg->tokens[size_t(id)];
    t.type = TokenType::Normal;
    t.text = byte_level_decode(text, &raw) ? raw : text;
  }
  const std::string merges = read_text_file(merges_path);
  std::istringstream in(merges);
  std::string line, a, b;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t sp = line.find(' ', 1);
    if (sp == std::string::npos)
      fail("{}:{}: expected two tokens separated by a space", merges_path, line_no);
    const std::string l = line.substr(0, sp), r = line.substr(sp + 1);
    cfg->merges.emplace_back(byte_level_decode(l, &a) ? a : l, byte_level_decode(r, &b) ? b : r);
  }
  if (cfg->pretokenizer.empty()) {
    PreStep st;
    st.kind = PreStep::ByteLevel;
    st.regex = std::make_shared<Regex>(kGpt2Pattern, "GPT-2 pre-tokenizer");
    cfg->pretokenizer.add(std::move(st));
  }
}

void apply_tokenizer_config(const std::string& path, TokenizerConfig* cfg) {
  const json c = read_json_file(path);
  if (!c.is_object()) fail("{}: expected a JSON object", path);
  if (c.contains("added_tokens_decoder")) {
    const json& d = c["added_tokens_decoder"];
    if (!d.is_object()) fail("{}: added_tokens_decoder is not an object", path);
    for (auto it = d.begin(); it != d.end(); ++it) {
      AddedToken a;
      try {
        a.id = TokenId(std::stol(it.key()));
      } catch (const std::exception&) {
        fail("{}: added_tokens_decoder key '{}' is not a token id", path, it.key());
      }
      const json& v = it.value();
      a.content = token_content(v);
      if (a.content.empty()) fail("{}: added_tokens_decoder[{}] has no content", path, it.key());
      a.special = v.value("special", false);
      a.lstrip = v.value("lstrip", false);
      a.rstrip = v.value("rstrip", false);
      a.single_word = v.value("single_word", false);
      // tokenizer.json's `normalized` stays (transformers fills this file from it).
      for (const auto& x : cfg->added)
        if (x.id == a.id) a.normalized = x.normalized;
      add_added_token(cfg, a, path);
    }
  }
  auto special_id = [&](const char* key) -> TokenId {
    if (!c.contains(key) || c[key].is_null()) return -2;
    const std::string content = token_content(c[key]);
    if (content.empty()) return -2;
    const TokenId id = find_token(*cfg, content);
    if (id < 0) fail("{}: {} '{}' is not in the vocabulary", path, key, content);
    return id;
  };
  if (TokenId id = special_id("bos_token"); id != -2) cfg->bos = id;
  if (TokenId id = special_id("eos_token"); id != -2) cfg->eos = id;
  if (TokenId id = special_id("unk_token"); id != -2) cfg->unk = id;
  if (TokenId id = special_id("pad_token"); id != -2) cfg->pad = id;
  if (c.contains("add_bos_token") && c["add_bos_token"].is_boolean()) {
    cfg->add_bos = c["add_bos_token"].get<bool>();
    cfg->has_template = false;
  }
  if (c.contains("add_eos_token") && c["add_eos_token"].is_boolean()) {
    cfg->add_eos = c["add_eos_token"].get<bool>();
    cfg->has_template = false;
  }
  if (c.contains("clean_up_tokenization_spaces") && c["clean_up_tokenization_spaces"].is_boolean())
    cfg->clean_up_spaces = c["clean_up_tokenization_spaces"].get<bool>();
  if (c.contains("chat_template")) {
    const json& t = c["chat_template"];
    if (t.is_string()) {
      cfg->chat_template = t.get<std::string>();
    } else if (t.is_array()) {  // [{name, template}, ...]: the default one
      for (const auto& e : t)
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template") &&
            e["template"].is_string())
          cfg->chat_template = e["template"].get<std::string>();
    }
  }
}

// added_tokens.json (content -> id) of slow tokenizers; special_tokens_map.json says which are
// special. Tokens spelled like <|...|> count as special too.
static void apply_added_tokens_json(const std::string& path, const std::string& special_map,
                                    TokenizerConfig* cfg) {
  const json j = read_json_file(path);
  if (!j.is_object()) fail("{}: expected a JSON object of token -> id", path);
  std::vector<std::string> specials;
  if (!special_map.empty()) {
    const json m = read_json_file(special_map);
    if (m.is_object())
      for (auto it = m.begin(); it != m.end(); ++it) {
        if (it.value().is_array())
          for (const auto& e : it.value()) specials.push_back(token_content(e));
        else
          specials.push_back(token_content(it.value()));
      }
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number_integer()) fail("{}: token '{}' has a non-integer id", path, it.key());
    AddedToken a;
    a.id = it.value().get<TokenId>();
    a.content = it.key();
    a.special = std::find(specials.begin(), specials.end(), a.content) != specials.end() ||
                (a.content.rfind("<|", 0) == 0 && a.content.size() > 4 &&
                 a.content.compare(a.content.size() - 2, 2, "|>") == 0);
    add_added_token(cfg, a, path);
  }
}

static void set_split_pre(TokenizerConfig* cfg, const char* pre, const std::string& source) {
  cfg->pretokenizer = PreTokenizer();
  set_gguf_pre_tokenizer(pre, source, cfg);
}

std::unique_ptr<Tokenizer> load_hf_folder(const std::string& dir) {
  auto at = [&](const char* name) { return (fs::path(dir) / name).string(); };
  auto has = [&](const char* name) {
    std::error_code ec;
    return fs::is_regular_file(at(name), ec);
  };
  const std::string config = has("tokenizer_config.json") ? at("tokenizer_config.json") : "";
  if (has("tokenizer.json")) return load_hf_tokenizer_json(at("tokenizer.json"), config);
  TokenizerConfig cfg;
  if (has("vocab.json") && has("merges.txt")) {
    load_vocab_merges(at("vocab.json"), at("merges.txt"), &cfg);
    bool qwen = false;
    if (!config.empty()) {
      const json c = read_json_file(config);
      qwen = c.is_object() && c.value("tokenizer_class", "").find("Qwen2") != std::string::npos;
    }
    if (has("added_tokens.json")) {
      apply_added_tokens_json(at("added_tokens.json"),
                              has("special_tokens_map.json") ? at("special_tokens_map.json") : "", &cfg);
      for (const auto& a : cfg.added) qwen = qwen || a.content == "<|im_start|>";
    }
    if (qwen) set_split_pre(&cfg, "qwen2", dir);  // Qwen2Tokenizer: NFC, then Qwen2's split
  } else if (has("encoder.json") && has("vocab.bpe")) {
    load_vocab_merges(at("encoder.json"), at("vocab.bpe"), &cfg);
    // Llama 3's 128000-token base vocabulary in GPT-2 format: Llama 3's split and
    // ignore_merges, and its 256 reserved special tokens after the base vocabulary.
    if (cfg.tokens.size() == 128000) {
      set_split_pre(&cfg, "llama-bpe", dir);
      add_llama3_specials(&cfg);
    }
  } else if (has("tokenizer.model")) {
    load_sentencepiece_config(at("tokenizer.model"), &cfg);
  } else {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string p = e.path().string();
      if (p.size() > 9 && p.compare(p.size() - 9, 9, ".tiktoken") == 0) {
        load_tiktoken_config(p, &cfg);
        break;
      }
    }
    if (cfg.tokens.empty())
      fail("{}: no tokenizer files (tokenizer.json, vocab.json + merges.txt, encoder.json + "
           "vocab.bpe, tokenizer.model or *.tiktoken)", dir);
  }
  cfg.source = dir;
  if (!config.empty()) apply_tokenizer_config(config, &cfg);
  add_eog_by_text(cfg);
  return make_tokenizer(std::move(cfg));
}

}  // namespace ignis::text
