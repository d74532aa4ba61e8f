// Hugging Face tokenizer files against llama.cpp's vectors (which Hugging Face produced):
// qwen2 vocab.json + merges.txt, Llama 3.2 encoder.json + vocab.bpe, Llama 3 tiktoken, and
// tokenizer.json files assembled from them the way their published tokenizer.json files are.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "text/tokenizer.h"
#include "tokenizer_test_util.h"

namespace ignis::text {
namespace {

using namespace testing;
using nlohmann::json;

void expect_vectors(const Tokenizer& tok, const std::string& vectors_base, const std::string& label) {
  const auto vectors = read_vectors(vectors_base);
  ASSERT_FALSE(vectors.empty());
  int failed = 0;
  for (const auto& [text, expected] : vectors) {
    const auto got = tok.encode(text, false, false);
    if (got != expected) {
      ++failed;
      ADD_FAILURE() << label << ": input '" << text << "'\n  expected " << ids_str(expected) << "\n  got      "
                    << ids_str(got);
    }
  }
  EXPECT_EQ(failed, 0) << label << ": " << failed << " of " << vectors.size() << " vectors differ";
}

const std::string kQwenDir = shared_path("hf-tokenizers/qwen2");
const std::string kLlama32Dir = shared_path("hf-tokenizers/llama3.2-gpt2-format");
const std::string kVec = shared_path("tokenizer-vectors/ggml-vocab-");

TEST(HfVectors, Qwen2VocabMerges) {
  if (!exists(kQwenDir)) GTEST_SKIP();
  auto tok = Tokenizer::from_path(kQwenDir);
  expect_vectors(*tok, kVec + "qwen2.gguf", "qwen2 vocab.json+merges.txt");
  EXPECT_EQ(tok->encode("<|im_start|>user", false, true)[0], 151644);
  EXPECT_TRUE(tok->is_eog(151645));
}

TEST(HfVectors, Llama32Gpt2Format) {
  if (!exists(kLlama32Dir)) GTEST_SKIP();
  auto tok = Tokenizer::from_path(kLlama32Dir);
  expect_vectors(*tok, kVec + "llama-bpe.gguf", "llama3.2 encoder.json+vocab.bpe");
  EXPECT_EQ(tok->encode("hi", true, false).front(), 128000);
}

TEST(HfVectors, Llama3Tiktoken) {
  const std::string p = shared_path("hf-tokenizers/llama3/tokenizer.model.tiktoken");
  if (!exists(p)) GTEST_SKIP();
  auto tok = Tokenizer::from_path(p);
  expect_vectors(*tok, kVec + "llama-bpe.gguf", "llama3 tiktoken");
  EXPECT_EQ(tok->encode("<|start_header_id|>", false, true), std::vector<TokenId>{128006});
  EXPECT_TRUE(tok->is_eog(128009));
}

// The published Qwen2 tokenizer.json: NFC, Split(Qwen2 regex, Isolated), ByteLevel without regex.
json qwen2_tokenizer_json(bool pair_merges) {
  json vocab = json::parse(slurp(kQwenDir + "/vocab.json"));
  json merges = json::array();
  std::ifstream in(kQwenDir + "/merges.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    const size_t sp = line.find(' ', 1);
    if (pair_merges) merges.push_back(json::array({line.substr(0, sp), line.substr(sp + 1)}));
    else merges.push_back(line);
  }
  json j;
  j["version"] = "1.0";
  j["added_tokens"] = json::array({{{"id", 151643}, {"content", "<|endoftext|>"}, {"special", true}},
                                   {{"id", 151644}, {"content", "<|im_start|>"}, {"special", true}},
                                   {{"id", 151645}, {"content", "<|im_end|>"}, {"special", true}}});
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       json::array({{{"type", "Split"},
                     {"pattern", {{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
                     {"behavior", "Isolated"},
                     {"invert", false}},
                    {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}})}};
  j["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  j["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab},
                {"merges", merges}};
  return j;
}

std::string write_temp(const std::string& name, const json& j) {
  const auto dir = std::filesystem::temp_directory_path() / "ignis_tokenizer_test";
  std::filesystem::create_directories(dir);
  const std::string p = (dir / name).string();
  std::ofstream(p) << j.dump();
  return p;
}

TEST(HfVectors, Qwen2TokenizerJsonStringMerges) {
  if (!exists(kQwenDir)) GTEST_SKIP();
  auto tok = Tokenizer::from_path(write_temp("qwen2_str.json", qwen2_tokenizer_json(false)));
  expect_vectors(*tok, kVec + "qwen2.gguf", "qwen2 tokenizer.json (\"a b\" merges)");
}

TEST(HfVectors, Qwen2TokenizerJsonPairMerges) {
  if (!exists(kQwenDir)) GTEST_SKIP();
  auto tok = Tokenizer::from_path(write_temp("qwen2_pair.json", qwen2_tokenizer_json(true)));
  expect_vectors(*tok, kVec + "qwen2.gguf", "qwen2 tokenizer.json ([a, b] merges)");
}

// The NFC normalizer runs: a decomposed "e" + U+0301 encodes like the composed U+00E9, and
// differently without it.
TEST(HfVectors, Qwen2TokenizerJsonNfc) {
  if (!exists(kQwenDir)) GTEST_SKIP();
  json j = qwen2_tokenizer_json(false);
  auto tok = Tokenizer::from_path(write_temp("qwen2_nfc.json", j));
  EXPECT_EQ(tok->encode("caf\x65\xCC\x81", false, false), tok->encode("caf\xC3\xA9", false, false));
  j["normalizer"] = nullptr;
  auto raw = Tokenizer::from_path(write_temp("qwen2_nonfc.json", j));
  EXPECT_NE(raw->encode("caf\x65\xCC\x81", false, false), raw->encode("caf\xC3\xA9", false, false));
}

// Llama 3's tokenizer.json: Split(Llama 3 regex) + ByteLevel, BPE with ignore_merges, and a
// TemplateProcessing that adds <|begin_of_text|>.
TEST(HfVectors, Llama3TokenizerJsonIgnoreMerges) {
  if (!exists(kLlama32Dir)) GTEST_SKIP();
  json vocab = json::parse(slurp(kLlama32Dir + "/encoder.json"));
  json merges = json::array();
  std::ifstream in(kLlama32Dir + "/vocab.bpe");
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line.rfind("#version", 0) != 0) merges.push_back(line);
  json j;
  j["added_tokens"] = json::array({{{"id", 128000}, {"content", "<|begin_of_text|>"}, {"special", true}},
                                   {{"id", 128001}, {"content", "<|end_of_text|>"}, {"special", true}}});
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       json::array({{{"type", "Split"},
                     {"pattern", {{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
                     {"behavior", "Isolated"}},
                    {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       json::array({{{"type", "ByteLevel"}},
                    {{"type", "TemplateProcessing"},
                     {"single", json::array({{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                                             {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                     {"special_tokens", {{"<|begin_of_text|>", {{"id", "<|begin_of_text|>"}, {"ids", {128000}}, {"tokens", {"<|begin_of_text|>"}}}}}}}})}};
  j["decoder"] = {{"type", "ByteLevel"}};
  j["model"] = {{"type", "BPE"}, {"ignore_merges", true}, {"vocab", vocab}, {"merges", merges}};
  auto tok = Tokenizer::from_path(write_temp("llama3.json", j));
  expect_vectors(*tok, kVec + "llama-bpe.gguf", "llama3 tokenizer.json");
  const auto with_bos = tok->encode("Hello", true, false);
  ASSERT_EQ(with_bos.size(), 2u);
  EXPECT_EQ(with_bos[0], 128000);
  EXPECT_EQ(tok->decode(with_bos, true), "Hello");

  // Without ignore_merges some vectors come out differently: the flag is honoured.
  j["model"]["ignore_merges"] = false;
  auto plain = Tokenizer::from_path(write_temp("llama3_nomerge.json", j));
  int differ = 0;
  for (const auto& [text, expected] : read_vectors(kVec + "llama-bpe.gguf")) differ += plain->encode(text, false, false) != expected;
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace ignis::text
