// Tokenizer metadata for `ignis convert`: Hugging Face tokenizer files -> tokenizer.ggml.* values.
// See hf_convert.h. This reads vocabularies and special-token settings as data; the tokenizer
// algorithms live in src/text.

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "format/hf_convert.h"

namespace ignis::hf {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;
constexpr size_t kMaxSpModelBytes = 64u << 20;  // real tokenizer.model files are < 5 MB

// The split regexes of the byte-level BPE tokenizers ignis knows, keyed by llama.cpp's pre-tokenizer name.
const char* const kQwen2Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
const char* const kLlama3Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const std::exception& e) {
    std::string msg = e.what();
    fail("{}: invalid JSON: {}", path, msg.substr(0, 200));
  }
}

struct Added {
  int64_t id;
  std::string content;
  bool special;
  const std::string* source;  // the file it came from (for messages)
};

// Finds the Split regex inside a tokenizer.json pre_tokenizer (possibly inside a Sequence).
void find_split_patterns(const json& pt, std::vector<std::string>* out) {
  if (!pt.is_object()) return;
  if (pt.value("type", "") == "Split" && pt.contains("pattern") && pt["pattern"].is_object()) {
    const json& p = pt["pattern"];
    if (p.contains("Regex") && p["Regex"].is_string()) out->push_back(p["Regex"].get<std::string>());
  }
  if (pt.contains("pretokenizers") && pt["pretokenizers"].is_array())
    for (const auto& s : pt["pretokenizers"]) find_split_patterns(s, out);
}

std::string pre_from_tokenizer_json(const json& tj, const std::string& path) {
  std::vector<std::string> pats;
  if (tj.contains("pre_tokenizer")) find_split_patterns(tj["pre_tokenizer"], &pats);
  if (pats.empty()) {
    if (tj.contains("pre_tokenizer") && tj["pre_tokenizer"].is_object() &&
        tj["pre_tokenizer"].value("type", "") == "ByteLevel")
      return "gpt-2";
    fail("{}: pre_tokenizer has no Split regex that ignis recognizes", path);
  }
  if (pats[0] == kQwen2Split) return "qwen2";
  if (pats[0] == kLlama3Split) return "llama-bpe";
  fail("{}: pre_tokenizer regex \"{}\" is not one ignis can name (qwen2, llama-bpe)", path, pats[0].substr(0, 80));
}

// tokenizer_config.json's "bos_token" etc.: a string, an {"content": ...} object, or null.
std::string special_string(const json& tc, const char* key) {
  if (!tc.contains(key)) return "";
  const json& v = tc[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

// tokenizer.json's post_processor: the TemplateProcessing "single" template (possibly inside a Sequence)
// says which special tokens wrap a sequence. Returns the names of the leading and trailing specials.
void template_specials(const json& pp, std::string* first, std::string* last, bool* found) {
  if (!pp.is_object()) return;
  if (pp.value("type", "") == "Sequence" && pp.contains("processors") && pp["processors"].is_array()) {
    for (const auto& p : pp["processors"]) template_specials(p, first, last, found);
    return;
  }
  if (pp.value("type", "") != "TemplateProcessing" || !pp.contains("single") || !pp["single"].is_array()) return;
  const json& single = pp["single"];
  auto special = [](const json& piece) -> std::string {
    if (piece.is_object() && piece.contains("SpecialToken") && piece["SpecialToken"].is_object() &&
        piece["SpecialToken"].contains("id") && piece["SpecialToken"]["id"].is_string())
      return piece["SpecialToken"]["id"].get<std::string>();
    return "";
  };
  if (!single.empty()) {
    *found = true;
    *first = special(single.front());
    *last = special(single.back());
  }
}

// --- SentencePiece tokenizer.model -------------------------------------------------------------------

struct SpPiece {
  std::string piece;
  float score = 0.0f;
  int32_t type = kNormal;  // sentencepiece_model.proto's SentencePiece.Type (same numbers as GGUF's)
};

// A bounds-checked reader of protobuf wire format; every problem names `where`.
class PbReader {
 public:
  PbReader(const uint8_t* p, size_t n, const std::string& where) : p_(p), end_(p + n), where_(where) {}
  bool done() const { return p_ == end_; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) fail("{}: truncated protobuf varint", where_);
      uint8_t b = *p_++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("{}: protobuf varint longer than 10 bytes", where_);
  }
  // Reads a field key; returns the field number, sets the wire type.
  uint64_t key(int* wire) {
    uint64_t k = varint();
    *wire = int(k & 7);
    return k >> 3;
  }
  PbReader bytes() {
    uint64_t n = varint();
    if (n > uint64_t(end_ - p_)) fail("{}: protobuf field of {} bytes runs past the end of the file", where_, n);
    PbReader sub(p_, size_t(n), where_);
    p_ += n;
    return sub;
  }
  float fixed32_float() {
    if (end_ - p_ < 4) fail("{}: truncated protobuf fixed32", where_);
    uint32_t u = uint32_t(p_[0]) | uint32_t(p_[1]) << 8 | uint32_t(p_[2]) << 16 | uint32_t(p_[3]) << 24;
    p_ += 4;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  void skip(int wire) {
    switch (wire) {
      case 0: varint(); return;
      case 1: advance(8); return;
      case 2: bytes(); return;
      case 5: advance(4); return;
      default: fail("{}: protobuf wire type {} is not valid here", where_, wire);
    }
  }
  std::string str() const { return std::string(reinterpret_cast<const char*>(p_), size_t(end_ - p_)); }

 private:
  void advance(size_t n) {
    if (size_t(end_ - p_) < n) fail("{}: truncated protobuf field", where_);
    p_ += n;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  const std::string& where_;
};

// ModelProto.pieces (field 1): SentencePiece {1: piece, 2: score (float), 3: type}; other fields skipped.
std::vector<SpPiece> read_sp_pieces(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) fail("{}: cannot open: {}", path, ec.message());
  if (size > kMaxSpModelBytes) fail("{}: larger than {} MB, not a SentencePiece model", path, kMaxSpModelBytes >> 20);
  std::ifstream in(path, std::ios::binary);
  std::string data(size_t(size), '\0');
  if (!in || !in.read(data.data(), static_cast<std::streamsize>(data.size()))) fail("{}: cannot read", path);
  std::vector<SpPiece> out;
  PbReader r(reinterpret_cast<const uint8_t*>(data.data()), data.size(), path);
  while (!r.done()) {
    int wire = 0;
    uint64_t field = r.key(&wire);
    if (field != 1 || wire != 2) {
      r.skip(wire);
      continue;
    }
    PbReader pr = r.bytes();
    SpPiece sp;
    bool has_piece = false;
    while (!pr.done()) {
      int w = 0;
      uint64_t f = pr.key(&w);
      if (f == 1 && w == 2) {
        sp.piece = pr.bytes().str();
        has_piece = true;
      } else if (f == 2 && w == 5) {
        sp.score = pr.fixed32_float();
      } else if (f == 3 && w == 0) {
        uint64_t t = pr.varint();
        if (t < 1 || t > 6) fail("{}: piece {} has type {}, not a SentencePiece type (1..6)", path, out.size(), t);
        sp.type = int32_t(t);
      } else {
        pr.skip(w);
      }
    }
    if (!has_piece) fail("{}: piece {} has no text", path, out.size());
    out.push_back(std::move(sp));
  }
  if (out.empty()) fail("{}: no pieces (not a SentencePiece model)", path);
  return out;
}

// llama.cpp's list of added-token texts that are control tokens even when not marked special.
// Calls fn(id, entry) for every entry of tokenizer_config.json's added_tokens_decoder (an object keyed by
// the decimal id); an entry that is not a non-negative id with a string "content" is an error.
template <class Fn>
void for_each_added_token(const json& tc, const std::string& tc_path, const Fn& fn) {
  if (!tc.contains("added_tokens_decoder") || !tc["added_tokens_decoder"].is_object()) return;
  for (auto it = tc["added_tokens_decoder"].begin(); it != tc["added_tokens_decoder"].end(); ++it) {
    int64_t id = -1;
    try {
      size_t pos = 0;
      id = std::stoll(it.key(), &pos);
      if (pos != it.key().size()) id = -1;
    } catch (const std::exception&) {
    }
    const json& a = it.value();
    if (id < 0 || !a.is_object() || !a.contains("content") || !a["content"].is_string())
      fail("{}: added_tokens_decoder entry {} is not an id with a content", tc_path, it.key());
    fn(id, a);
  }
}

bool looks_special(const std::string& t) {
  auto wrapped = [&](const char* a, const char* b) {
    size_t na = std::strlen(a), nb = std::strlen(b);
    return t.size() >= na + nb && t.compare(0, na, a) == 0 && t.compare(t.size() - nb, nb, b) == 0;
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wrapped("<|", "|>") ||
         wrapped("<\xef\xbd\x9c", "\xef\xbd\x9c>") || wrapped("<unused", ">");
}

std::string chat_template_of(const json& tc, const std::string& tc_path, const std::string& dir) {
  std::string out;
  if (tc.contains("chat_template")) {
    const json& ct = tc["chat_template"];
    if (ct.is_string()) {
      out = ct.get<std::string>();
    } else if (ct.is_array()) {
      for (const auto& e : ct)
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
          out = e["template"].get<std::string>();
    } else if (!ct.is_null()) {
      fail("{}: key chat_template is not a string", tc_path);
    }
  }
  if (out.empty() && fs::exists(dir + "/chat_template.jinja")) {
    std::ifstream in(dir + "/chat_template.jinja");
    std::stringstream ss;
    ss << in.rdbuf();
    out = ss.str();
  }
  return out;
}

int opt_flag(const json& tc, const std::string& tc_path, const char* key) {
  if (!tc.contains(key) || tc[key].is_null()) return -1;
  if (!tc[key].is_boolean()) fail("{}: key {} is not a boolean", tc_path, key);
  return tc[key].get<bool>() ? 1 : 0;
}

// NOTE: laid out as llama.cpp's converter (_create_vocab_sentencepiece + SpecialVocab) does, so the GGUF
// equals one converted by llama.cpp: vocab_size slots of "[PADi]" / score -10000 / UNUSED, then the
// model's pieces with their scores and types (USER_DEFINED pieces of the model count as NORMAL, as
// there), then added_tokens.json (USER_DEFINED, score -1000), then tokenizer_config.json's
// added_tokens_decoder (CONTROL when special or looking special, else USER_DEFINED with "\u2581" as
// space; score -1000). Special ids come from config.json as there, else from tokenizer_config.json's
// token strings. A piece or added id outside vocab_size is an error (llama.cpp drops it with a warning).
HfVocab read_spm_vocab(const std::string& dir, const HfConfig& cfg, const json& tc, const std::string& tc_path) {
  const std::string path = dir + "/tokenizer.model";
  std::vector<SpPiece> pieces = read_sp_pieces(path);
  if (int64_t(pieces.size()) > cfg.n_vocab)
    fail("{}: {} pieces, more than vocab_size {} in {}", path, pieces.size(), cfg.n_vocab, cfg.path);
  HfVocab v;
  v.model = "llama";
  v.pre = "default";
  const size_t n = size_t(cfg.n_vocab);
  v.tokens.resize(n);
  for (size_t i = 0; i < n; ++i) v.tokens[i] = "[PAD" + std::to_string(i) + "]";
  v.scores.assign(n, -10000.0f);
  v.types.assign(n, kUnused);
  for (size_t i = 0; i < pieces.size(); ++i) {
    v.tokens[i] = pieces[i].piece;
    v.scores[i] = pieces[i].score;
    const int32_t t = pieces[i].type;
    v.types[i] = (t == kUnknown || t == kControl || t == kUnused || t == kByte) ? t : kNormal;
  }
  const std::string ap = dir + "/added_tokens.json";
  if (fs::exists(ap)) {
    json aj = read_json(ap);
    if (!aj.is_object()) fail("{}: not a JSON object", ap);
    for (auto it = aj.begin(); it != aj.end(); ++it) {
      if (!it.value().is_number_integer()) fail("{}: token {} has no integer id", ap, it.key());
      int64_t id = it.value().get<int64_t>();
      if (id < 0 || id >= cfg.n_vocab)
        fail("{}: added token {} has id {}, outside [0, vocab_size {})", ap, it.key(), id, cfg.n_vocab);
      v.tokens[size_t(id)] = it.key();
      v.scores[size_t(id)] = -1000.0f;
      v.types[size_t(id)] = kUserDefined;
    }
  }
  for_each_added_token(tc, tc_path, [&](int64_t id, const json& a) {
    if (id >= cfg.n_vocab)
      fail("{}: added token {} has id {}, outside [0, vocab_size {})", tc_path, a["content"].get<std::string>(), id,
           cfg.n_vocab);
    std::string content = a["content"].get<std::string>();
    if (a.value("special", false) || looks_special(content)) {
      v.types[size_t(id)] = kControl;
    } else {
      for (size_t p = content.find("\xe2\x96\x81"); p != std::string::npos; p = content.find("\xe2\x96\x81", p + 1))
        content.replace(p, 3, " ");
      v.types[size_t(id)] = kUserDefined;
    }
    v.scores[size_t(id)] = -1000.0f;
    v.tokens[size_t(id)] = content;
  });
  auto by_text = [&](const char* key) -> int64_t {
    std::string s = special_string(tc, key);
    if (s.empty()) return -1;
    for (size_t i = 0; i < n; ++i)
      if (v.tokens[i] == s && v.types[i] != kUnused) return int64_t(i);
    fail("{}: {} \"{}\" is not in the vocabulary", tc_path, key, s);
  };
  auto in_range = [&](const std::optional<int64_t>& id) { return id && *id >= 0 && *id < cfg.n_vocab; };
  v.bos = in_range(cfg.bos_token_id) ? *cfg.bos_token_id : by_text("bos_token");
  // llama.cpp's SpecialVocab takes config.json's eos_token_id only when it is a single id.
  std::optional<int64_t> eos;
  if (cfg.eos_token_ids.size() == 1) eos = cfg.eos_token_ids[0];
  v.eos = in_range(eos) ? *eos : by_text("eos_token");
  v.pad = in_range(cfg.pad_token_id) ? *cfg.pad_token_id : by_text("pad_token");
  v.unk = by_text("unk_token");
  v.add_bos = opt_flag(tc, tc_path, "add_bos_token");
  v.add_eos = opt_flag(tc, tc_path, "add_eos_token");
  v.chat_template = chat_template_of(tc, tc_path, dir);
  return v;
}

}  // namespace

HfVocab read_hf_vocab(const std::string& dir, const HfConfig& cfg) {
  HfVocab v;
  std::map<std::string, int64_t> vocab;  // token -> id
  std::vector<Added> added;
  std::string template_first, template_last;  // from tokenizer.json's post_processor
  bool have_template = false;
  const std::string tj_path = dir + "/tokenizer.json";
  const std::string tc_path = dir + "/tokenizer_config.json";
  const std::string ap = dir + "/added_tokens.json";
  json tc = fs::exists(tc_path) ? read_json(tc_path) : json::object();
  if (!tc.is_object()) fail("{}: not a JSON object", tc_path);
  if (!fs::exists(tj_path) && !(fs::exists(dir + "/vocab.json") && fs::exists(dir + "/merges.txt")) &&
      fs::exists(dir + "/tokenizer.model"))
    return read_spm_vocab(dir, cfg, tc, tc_path);

  auto add_vocab_entry = [&](const std::string& path, const std::string& tok, const json& id) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= cfg.n_vocab)
      fail("{}: token {} has id {}, outside [0, vocab_size {})", path, tok, id.dump(), cfg.n_vocab);
    vocab[tok] = id.get<int64_t>();
  };

  if (fs::exists(tj_path)) {
    json tj = read_json(tj_path);
    if (!tj.is_object() || !tj.contains("model") || !tj["model"].is_object())
      fail("{}: key model is missing", tj_path);
    const json& m = tj["model"];
    if (m.value("type", "BPE") != "BPE")
      fail("{}: model.type {} is not supported by convert (BPE)", tj_path, m.value("type", ""));
    if (!m.contains("vocab") || !m["vocab"].is_object()) fail("{}: key model.vocab is missing", tj_path);
    for (auto it = m["vocab"].begin(); it != m["vocab"].end(); ++it) add_vocab_entry(tj_path, it.key(), it.value());
    if (!m.contains("merges") || !m["merges"].is_array()) fail("{}: key model.merges is missing", tj_path);
    for (const auto& mg : m["merges"]) {
      if (mg.is_string()) v.merges.push_back(mg.get<std::string>());
      else if (mg.is_array() && mg.size() == 2 && mg[0].is_string() && mg[1].is_string())
        v.merges.push_back(mg[0].get<std::string>() + " " + mg[1].get<std::string>());
      else fail("{}: key model.merges holds an entry that is not a merge", tj_path);
    }
    if (tj.contains("added_tokens") && tj["added_tokens"].is_array())
      for (const auto& a : tj["added_tokens"]) {
        if (!a.is_object() || !a.contains("id") || !a.contains("content") || !a["content"].is_string())
          fail("{}: key added_tokens holds an entry without id and content", tj_path);
        added.push_back({a["id"].is_number_integer() ? a["id"].get<int64_t>() : -1, a["content"].get<std::string>(),
                         a.value("special", false), &tj_path});
      }
    v.pre = pre_from_tokenizer_json(tj, tj_path);
    if (tj.contains("post_processor")) template_specials(tj["post_processor"], &template_first, &template_last, &have_template);
  } else if (fs::exists(dir + "/vocab.json") && fs::exists(dir + "/merges.txt")) {
    const std::string vp = dir + "/vocab.json";
    json vj = read_json(vp);
    if (!vj.is_object()) fail("{}: not a JSON object", vp);
    for (auto it = vj.begin(); it != vj.end(); ++it) add_vocab_entry(vp, it.key(), it.value());
    std::ifstream mf(dir + "/merges.txt");
    if (!mf) fail("{}/merges.txt: cannot open", dir);
    std::string line;
    while (std::getline(mf, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line.rfind("#version", 0) == 0) continue;
      if (line.find(' ') == std::string::npos) fail("{}/merges.txt: line \"{}\" is not a merge", dir, line.substr(0, 40));
      v.merges.push_back(line);
    }
    const std::string cls = tc.value("tokenizer_class", "");
    if (cls == "Qwen2Tokenizer" || cls == "Qwen2TokenizerFast") v.pre = "qwen2";
    else if (cls == "GPT2Tokenizer" || cls == "GPT2TokenizerFast" || cls.empty()) v.pre = "gpt-2";
    else fail("{}: tokenizer_class {} is not supported with vocab.json + merges.txt", tc_path, cls);
    if (fs::exists(ap)) {
      json aj = read_json(ap);
      if (!aj.is_object()) fail("{}: not a JSON object", ap);
      for (auto it = aj.begin(); it != aj.end(); ++it) {
        if (!it.value().is_number_integer()) fail("{}: token {} has no integer id", ap, it.key());
        added.push_back({it.value().get<int64_t>(), it.key(), false, &ap});
      }
    }
  } else {
    fail("{}: no tokenizer.json or vocab.json + merges.txt (or SentencePiece tokenizer.model)", dir);
  }

  // tokenizer_config.json's added_tokens_decoder says which added tokens are special.
  for_each_added_token(tc, tc_path, [&](int64_t id, const json& a) {
    added.push_back({id, a["content"].get<std::string>(), a.value("special", false), &tc_path});
  });

  v.tokens.assign(static_cast<size_t>(cfg.n_vocab), std::string());
  v.types.assign(static_cast<size_t>(cfg.n_vocab), kUnused);
  std::vector<bool> set(static_cast<size_t>(cfg.n_vocab), false);
  for (const auto& [tok, id] : vocab) {
    v.tokens[id] = tok;
    v.types[id] = kNormal;
    set[id] = true;
  }
  for (const auto& a : added) {
    if (a.id < 0 || a.id >= cfg.n_vocab)
      fail("{}: added token {} has id {}, outside [0, vocab_size {})", *a.source, a.content, a.id, cfg.n_vocab);
    // Later sources (added_tokens_decoder) refine earlier ones; `special` only ever turns on.
    const bool was_special = set[a.id] && v.types[a.id] == kControl;
    v.tokens[a.id] = a.content;
    v.types[a.id] = (a.special || was_special) ? kControl : kUserDefined;
    set[a.id] = true;
  }
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (!set[i]) v.tokens[i] = "[PAD" + std::to_string(i) + "]";

  std::map<std::string, int64_t> by_text;
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (set[i]) by_text.emplace(v.tokens[i], static_cast<int64_t>(i));
  auto special_id = [&](const char* key, const std::optional<int64_t>& fallback) -> int64_t {
    std::string s = special_string(tc, key);
    if (!s.empty()) {
      auto it = by_text.find(s);
      if (it == by_text.end()) fail("{}: {} \"{}\" is not in the vocabulary", tc_path, key, s);
      return it->second;
    }
    if (fallback && *fallback < cfg.n_vocab) return *fallback;
    return -1;
  };
  v.bos = special_id("bos_token", cfg.bos_token_id);
  v.eos = special_id("eos_token",
                     cfg.eos_token_ids.empty() ? std::nullopt : std::optional<int64_t>(cfg.eos_token_ids[0]));
  v.pad = special_id("pad_token", cfg.pad_token_id);
  v.unk = special_id("unk_token", std::nullopt);
  v.add_bos = opt_flag(tc, tc_path, "add_bos_token");
  v.add_eos = opt_flag(tc, tc_path, "add_eos_token");
  // As llama.cpp's converter: without add_*_token in tokenizer_config.json, the post-processor's template
  // decides (Llama 3's tokenizer.json prepends <|begin_of_text|> this way).
  if (have_template) {
    if (v.add_bos < 0) v.add_bos = v.bos >= 0 && template_first == v.tokens[v.bos];
    if (v.add_eos < 0) v.add_eos = v.eos >= 0 && template_last == v.tokens[v.eos];
  }
  v.chat_template = chat_template_of(tc, tc_path, dir);
  return v;
}

}  // namespace ignis::hf
