// Tokenizer metadata for `ignis convert`: Hugging Face tokenizer files -> tokenizer.ggml.* values.
// See hf_convert.h. This reads vocabularies and special-token settings as data; the tokenizer
// algorithms live in src/text.

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

constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;

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
  } else if (fs::exists(dir + "/tokenizer.model")) {
    fail("{}/tokenizer.model: SentencePiece tokenizers are not supported by convert (tokenizer.json or "
         "vocab.json + merges.txt)", dir);
  } else {
    fail("{}: no tokenizer.json or vocab.json + merges.txt", dir);
  }

  // tokenizer_config.json's added_tokens_decoder says which added tokens are special.
  if (tc.contains("added_tokens_decoder") && tc["added_tokens_decoder"].is_object()) {
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
      added.push_back({id, a["content"].get<std::string>(), a.value("special", false), &tc_path});
    }
  }

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
  auto opt_flag = [&](const char* key) {
    if (!tc.contains(key) || tc[key].is_null()) return -1;
    if (!tc[key].is_boolean()) fail("{}: key {} is not a boolean", tc_path, key);
    return tc[key].get<bool>() ? 1 : 0;
  };
  v.add_bos = opt_flag("add_bos_token");
  v.add_eos = opt_flag("add_eos_token");
  // As llama.cpp's converter: without add_*_token in tokenizer_config.json, the post-processor's template
  // decides (Llama 3's tokenizer.json prepends <|begin_of_text|> this way).
  if (have_template) {
    if (v.add_bos < 0) v.add_bos = v.bos >= 0 && template_first == v.tokens[v.bos];
    if (v.add_eos < 0) v.add_eos = v.eos >= 0 && template_last == v.tokens[v.eos];
  }
  if (tc.contains("chat_template")) {
    const json& ct = tc["chat_template"];
    if (ct.is_string()) {
      v.chat_template = ct.get<std::string>();
    } else if (ct.is_array()) {
      for (const auto& e : ct)
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
          v.chat_template = e["template"].get<std::string>();
    } else if (!ct.is_null()) {
      fail("{}: key chat_template is not a string", tc_path);
    }
  }
  if (v.chat_template.empty() && fs::exists(dir + "/chat_template.jinja")) {
    std::ifstream in(dir + "/chat_template.jinja");
    std::stringstream ss;
    ss << in.rdbuf();
    v.chat_template = ss.str();
  }
  return v;
}

}  // namespace ignis::hf
