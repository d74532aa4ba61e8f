// tokenizer.json components beyond byte-level BPE, checked against reference outputs:
// - WordPiece + BertNormalizer + BertPreTokenizer + BertProcessing (a BERT tokenizer.json built
//   from the bge vocabulary) against llama.cpp's bert-bge vectors;
// - SentencePiece-style BPE (byte_fallback, Prepend/Replace normalizers or a Metaspace
//   pre-tokenizer, Replace/ByteFallback/Fuse/Strip decoders) built from Llama 2's vocabulary the
//   way Hugging Face's converter does, against the python3-sentencepiece goldens.
#include <gtest/gtest.h>

#include <filesystem>
#include <algorithm>
#include <fstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "text/tokenizer.h"
#include "tokenizer_test_util.h"

namespace ignis::text {
namespace {

using namespace testing;
using nlohmann::json;

std::string write_temp(const std::string& name, const json& j) {
  const auto dir = std::filesystem::temp_directory_path() / "ignis_tokenizer_test";
  std::filesystem::create_directories(dir);
  const std::string p = (dir / name).string();
  std::ofstream(p) << j.dump();
  return p;
}

TEST(HfJson, BertWordPiece) {
  const std::string gguf_path = shared_path("tokenizer-vectors/ggml-vocab-bert-bge.gguf");
  if (!exists(gguf_path)) GTEST_SKIP();
  // GGUF spells word starts with U+2581 and continuations bare; tokenizer.json uses "##".
  auto f = gguf::GgufFile::open(gguf_path);
  const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  const auto types = f->get_int_array("tokenizer.ggml.token_type");
  json vocab = json::object();
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string t = tokens[i];
    if (types[i] == 1) t = t.rfind("\xE2\x96\x81", 0) == 0 ? t.substr(3) : "##" + t;
    if (!vocab.contains(t)) vocab[t] = i;
  }
  json j;
  j["added_tokens"] = json::array({{{"id", 0}, {"content", "[PAD]"}, {"special", true}},
                                   {{"id", 100}, {"content", "[UNK]"}, {"special", true}},
                                   {{"id", 101}, {"content", "[CLS]"}, {"special", true}},
                                   {{"id", 102}, {"content", "[SEP]"}, {"special", true}},
                                   {{"id", 103}, {"content", "[MASK]"}, {"special", true}}});
  j["normalizer"] = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                     {"strip_accents", nullptr}, {"lowercase", true}};
  j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  j["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 102}}, {"cls", {"[CLS]", 101}}};
  j["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
  j["model"] = {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                {"max_input_chars_per_word", 100}, {"vocab", vocab}};
  auto tok = Tokenizer::from_path(write_temp("bert.json", j));
  int failed = 0;
  const auto vectors = read_vectors(shared_path("tokenizer-vectors/ggml-vocab-bert-bge.gguf"));
  for (const auto& [text, expected] : vectors) {
    const auto got = tok->encode(text, false, false);
    if (got != expected) {
      ++failed;
      ADD_FAILURE() << "'" << text << "'\n  expected " << ids_str(expected) << "\n  got      " << ids_str(got);
    }
  }
  EXPECT_EQ(failed, 0);
  const auto ids = tok->encode("Hello World", true, false);
  EXPECT_EQ(ids, (std::vector<TokenId>{101, 7592, 2088, 102}));
  EXPECT_EQ(tok->decode(ids, true), "hello world");
}

// Llama 2's vocabulary (from the llama-spm GGUF, which carries the SentencePiece scores) as a
// Hugging Face BPE model, the way HF's converter builds it: a merge (l, r) for every split of a
// piece into two pieces, ordered by the merged piece's score (highest first), then by the ids.
json llama2_bpe_model() {
  auto f = gguf::GgufFile::open(shared_path("tokenizer-vectors/ggml-vocab-llama-spm.gguf"));
  const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  const auto scores = f->get_float_array("tokenizer.ggml.scores");
  const auto types = f->get_int_array("tokenizer.ggml.token_type");
  std::unordered_map<std::string, int> ids;
  json vocab = json::object();
  for (size_t i = 0; i < tokens.size(); ++i) {
    ids.emplace(tokens[i], int(i));
    vocab[tokens[i]] = i;
  }
  struct M {
    float score;
    int l, r;
  };
  std::vector<M> ms;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (types[i] != 1) continue;
    const std::string& t = tokens[i];
    for (size_t k = 1; k < t.size(); ++k) {
      if ((uint8_t(t[k]) & 0xC0) == 0x80) continue;
      auto l = ids.find(t.substr(0, k)), r = ids.find(t.substr(k));
      if (l != ids.end() && r != ids.end()) ms.push_back({scores[i], l->second, r->second});
    }
  }
  std::stable_sort(ms.begin(), ms.end(), [](const M& a, const M& b) {
    return a.score != b.score ? a.score > b.score : std::make_pair(a.l, a.r) < std::make_pair(b.l, b.r);
  });
  json merges = json::array();
  for (const M& m : ms) merges.push_back(json::array({tokens[size_t(m.l)], tokens[size_t(m.r)]}));
  return {{"type", "BPE"}, {"unk_token", "<unk>"}, {"fuse_unk", true}, {"byte_fallback", true},
          {"vocab", vocab}, {"merges", merges}};
}

json llama2_added() {
  return json::array({{{"id", 0}, {"content", "<unk>"}, {"special", true}},
                      {{"id", 1}, {"content", "<s>"}, {"special", true}},
                      {{"id", 2}, {"content", "</s>"}, {"special", true}}});
}

json spm_decoder() {
  return {{"type", "Sequence"},
          {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                                    {{"type", "ByteFallback"}},
                                    {{"type", "Fuse"}},
                                    {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
}

// skip_leading_space: Hugging Face's Metaspace does not prepend U+2581 to text that already starts
// with a space (SentencePiece always does), so those inputs are not comparable.
void expect_sentencepiece_golden(const Tokenizer& tok, const std::string& label, bool skip_leading_space = false) {
  const auto golden = json::parse(slurp(std::string(IGNIS_TEST_DATA) + "/text/sentencepiece_golden.json"));
  const json* cases = nullptr;
  for (const auto& m : golden["models"])
    if (m["model"] == "hf-tokenizers/llama2/tokenizer.model") cases = &m["cases"];
  ASSERT_NE(cases, nullptr);
  int failed = 0;
  for (const auto& c : *cases) {
    const std::string text = c["text"].get<std::string>();
    if (skip_leading_space && !text.empty() && text[0] == ' ') continue;
    const auto expected = c["ids"].get<std::vector<int>>();
    const auto got = tok.encode(text, false, false);
    if (got != expected) {
      ++failed;
      ADD_FAILURE() << label << ": '" << text << "'\n  expected " << ids_str(expected) << "\n  got      " << ids_str(got);
    }
    EXPECT_EQ(tok.decode(expected, true), c["decoded"].get<std::string>()) << label << ": " << text;
  }
  EXPECT_EQ(failed, 0) << label;
}

TEST(HfJson, Llama2LegacyNormalizerBpe) {
  if (!exists(shared_path("tokenizer-vectors/ggml-vocab-llama-spm.gguf"))) GTEST_SKIP();
  json j;
  j["added_tokens"] = llama2_added();
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
                                                  {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}})}};
  j["pre_tokenizer"] = nullptr;
  j["decoder"] = spm_decoder();
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  j["model"] = llama2_bpe_model();
  auto tok = Tokenizer::from_path(write_temp("llama2_legacy.json", j));
  expect_sentencepiece_golden(*tok, "llama2 tokenizer.json (Prepend+Replace)");
  EXPECT_EQ(tok->encode("Hello", true, false), (std::vector<TokenId>{1, 15043}));
}

TEST(HfJson, Llama2MetaspaceBpe) {
  if (!exists(shared_path("tokenizer-vectors/ggml-vocab-llama-spm.gguf"))) GTEST_SKIP();
  json j;
  j["added_tokens"] = llama2_added();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}, {"split", false}};
  j["decoder"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}, {"split", false}};
  j["model"] = llama2_bpe_model();
  auto tok = Tokenizer::from_path(write_temp("llama2_metaspace.json", j));
  expect_sentencepiece_golden(*tok, "llama2 tokenizer.json (Metaspace)", true);
  // HF Metaspace: " Hello" -> "▁Hello" (no second U+2581).
  EXPECT_EQ(tok->encode(" Hello", false, false), (std::vector<TokenId>{15043}));
}

TEST(HfJson, SplitBehaviours) {
  // Character vocabulary plus merges "e -", "- f" and "- -": a merge can only happen inside a
  // pre-token, so the tokens show where each behaviour cut "the-final--countdown" (the pieces
  // follow Hugging Face's SplitDelimiterBehavior documentation).
  json vocab = json::object();
  const std::string alphabet = "thefinalcoudw-";
  for (size_t i = 0; i < alphabet.size(); ++i) vocab[std::string(1, alphabet[i])] = i;
  vocab["e-"] = 100;
  vocab["-f"] = 101;
  vocab["--"] = 102;
  auto run = [&](const char* behavior, bool invert) {
    json j;
    j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}};
    j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"e -", "- f", "- -"})}};
    auto tok = Tokenizer::from_path(write_temp(std::string("split_") + behavior + (invert ? "_inv" : "") + ".json", j));
    std::string merged;
    for (TokenId id : tok->encode("the-final--countdown", false, false))
      if (tok->token_text(id).size() > 1) merged += (merged.empty() ? "" : " ") + tok->token_text(id);
    return merged;
  };
  EXPECT_EQ(run("Isolated", false), "");                  // the | - | final | - | - | countdown
  EXPECT_EQ(run("MergedWithPrevious", false), "e-");      // the- | final- | - | countdown
  EXPECT_EQ(run("MergedWithNext", false), "-f");          // the | -final | - | -countdown
  EXPECT_EQ(run("Contiguous", false), "--");              // the | - | final | -- | countdown
  EXPECT_EQ(run("Removed", false), "");                   // the | final | countdown
  EXPECT_EQ(run("Isolated", true), "");                   // pattern keeps the words
}

TEST(HfJson, AddedTokenOptions) {
  json vocab = json::object();
  const std::string alphabet = "abc ";
  for (size_t i = 0; i < alphabet.size(); ++i) vocab[std::string(1, alphabet[i])] = i;
  json j;
  j["added_tokens"] = json::array({{{"id", 10}, {"content", "<L>"}, {"special", false}, {"lstrip", true}},
                                   {{"id", 11}, {"content", "<R>"}, {"special", false}, {"rstrip", true}},
                                   {{"id", 12}, {"content", "ab"}, {"special", false}, {"single_word", true}},
                                   {{"id", 13}, {"content", "<S>"}, {"special", true}}});
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}};
  auto tok = Tokenizer::from_path(write_temp("added.json", j));
  using V = std::vector<TokenId>;
  EXPECT_EQ(tok->encode("a  <L>b", false, false), (V{0, 10, 1}));     // lstrip eats the spaces before
  EXPECT_EQ(tok->encode("a<R>  b", false, false), (V{0, 11, 1}));     // rstrip eats the spaces after
  EXPECT_EQ(tok->encode("ab c", false, false), (V{12, 3, 2}));        // a whole word
  EXPECT_EQ(tok->encode("cab", false, false), (V{2, 0, 1}));          // inside a word: not matched
  EXPECT_EQ(tok->encode("<S>", false, true), (V{13}));                // special: only when asked
  EXPECT_NE(tok->encode("<S>", false, false), (V{13}));
  EXPECT_EQ(tok->decode({0, 13, 1}), "a<S>b");
  EXPECT_EQ(tok->decode({0, 13, 1}, true), "ab");
}

TEST(HfJson, FolderWithTokenizerConfig) {
  const std::string qwen = shared_path("hf-tokenizers/qwen2");
  const std::string cfg = shared_path("hf-tokenizers/qwen3/tokenizer_config.json");
  if (!exists(qwen) || !exists(cfg)) GTEST_SKIP();
  const auto dir = std::filesystem::temp_directory_path() / "ignis_tokenizer_test" / "qwen_folder";
  std::filesystem::create_directories(dir);
  for (const char* f : {"vocab.json", "merges.txt"}) {
    std::filesystem::remove(dir / f);
    std::filesystem::create_symlink(qwen + "/" + f, dir / f);
  }
  std::filesystem::remove(dir / "tokenizer_config.json");
  std::filesystem::create_symlink(cfg, dir / "tokenizer_config.json");
  auto tok = Tokenizer::from_path(dir.string());
  const auto c = json::parse(slurp(cfg));
  EXPECT_EQ(tok->chat_template(), c["chat_template"].get<std::string>());
  EXPECT_EQ(tok->token_text(tok->eos()), c["eos_token"].get<std::string>());
  EXPECT_TRUE(tok->is_eog(151645));  // <|im_end|>
  EXPECT_FALSE(tok->add_bos());
  EXPECT_EQ(tok->encode("<|im_start|>user\nHi<|im_end|>", true, true),
            (std::vector<TokenId>{151644, 872, 198, 13048, 151645}));
  // The folder is Qwen2Tokenizer-shaped (added tokens from the config): NFC applies.
  EXPECT_EQ(tok->encode("caf\x65\xCC\x81", false, false), tok->encode("caf\xC3\xA9", false, false));
}

// Normalizers, pre-tokenizers and BPE options on a character vocabulary: a merge only happens
// inside a pre-token, so the merged tokens show what each component did.
class CharVocab : public ::testing::Test {
 protected:
  json vocab_ = json::object();
  void SetUp() override {
    const std::string chars = "abcdefghijklmnopqrstuvwxyz0123456789 .,!";
    for (size_t i = 0; i < chars.size(); ++i) vocab_[std::string(1, chars[i])] = i;
  }
  std::unique_ptr<Tokenizer> make(const std::string& name, json normalizer, json pre,
                                   json merges = json::array()) {
    json j;
    j["normalizer"] = std::move(normalizer);
    j["pre_tokenizer"] = std::move(pre);
    j["model"] = {{"type", "BPE"}, {"vocab", vocab_}, {"merges", std::move(merges)}};
    return Tokenizer::from_path(write_temp(name + ".json", j));
  }
  static std::string texts(const Tokenizer& tok, const std::string& s) {
    std::string out;
    for (TokenId id : tok.encode(s, false, false)) out += (out.empty() ? "" : "|") + tok.token_text(id);
    return out;
  }
};

TEST_F(CharVocab, Normalizers) {
  json seq = {{"type", "Sequence"},
              {"normalizers", json::array({{{"type", "NFKC"}}, {{"type", "Lowercase"}}, {{"type", "Strip"}},
                                           {{"type", "Replace"}, {"pattern", {{"Regex", "[0-9]+"}}}, {"content", "#"}}})}};
  vocab_["#"] = 100;
  auto tok = make("norm", seq, nullptr);
  // U+FB01 (fi ligature) -> "fi" by NFKC; upper case lowered; outer spaces stripped; digits replaced.
  EXPECT_EQ(tok->decode(tok->encode("  \xEF\xAC\x81NE 42  ", false, false)), "fine #");
  auto nfd = make("nfd", {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "NFD"}}, {{"type", "StripAccents"}}})}}, nullptr);
  EXPECT_EQ(nfd->decode(nfd->encode("caf\xC3\xA9", false, false)), "cafe");
}

TEST_F(CharVocab, DigitsWhitespacePunctuation) {
  vocab_["12"] = 101;
  vocab_["a."] = 102;
  vocab_["ab"] = 103;
  const json merges = json::array({"1 2", "a .", "a b"});
  EXPECT_EQ(texts(*make("digits_run", nullptr, {{"type", "Digits"}, {"individual_digits", false}}, merges), "x12"), "x|12");
  EXPECT_EQ(texts(*make("digits_one", nullptr, {{"type", "Digits"}, {"individual_digits", true}}, merges), "x12"), "x|1|2");
  EXPECT_EQ(texts(*make("ws", nullptr, {{"type", "Whitespace"}}, merges), "ab a. b"), "ab|a|.|b");
  EXPECT_EQ(texts(*make("wss", nullptr, {{"type", "WhitespaceSplit"}}, merges), "ab a. b"), "ab|a.|b");
  EXPECT_EQ(texts(*make("punct", nullptr, {{"type", "Punctuation"}}, merges), "a.ab"), "a|.|ab");
  EXPECT_EQ(texts(*make("nopre", nullptr, nullptr, merges), "a.ab"), "a.|ab");
}

TEST_F(CharVocab, SubwordPrefixAndWordSuffix) {
  json j;
  json vocab = {{"a", 0}, {"##b</w>", 1}, {"ab</w>", 2}, {"b</w>", 3}, {"##b", 4}, {"a</w>", 5}};
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"a ##b</w>"})},
                {"continuing_subword_prefix", "##"}, {"end_of_word_suffix", "</w>"}};
  j["pre_tokenizer"] = {{"type", "WhitespaceSplit"}};
  auto tok = Tokenizer::from_path(write_temp("affixes.json", j));
  EXPECT_EQ(tok->encode("ab b a", false, false), (std::vector<TokenId>{2, 3, 5}));
}

}  // namespace
}  // namespace ignis::text
