// Tokenizer metadata for convert from a tokenizer.json folder (Llama 3 style), from a SentencePiece
// tokenizer.model folder (Llama 2 / Mistral style, checked against llama.cpp's converted vocab GGUF and
// python3-sentencepiece goldens), and bad tokenizer files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "format/gguf.h"
#include "format/hf_convert.h"
#include "hf_model_util.h"
#include "hf_test_util.h"
#include "model/model.h"
#include "text/tokenizer.h"

using ignis::hf::HfConfig;
using ignis::hf::read_hf_vocab;

namespace {

HfConfig config(int64_t n_vocab) {
  HfConfig c;
  c.path = "config.json";
  c.model_type = "llama";
  c.n_vocab = n_vocab;
  c.bos_token_id = 0;
  return c;
}

// A Llama 3 shaped tokenizer.json: byte-level BPE, its split regex, merges as pairs, added specials.
const char* kTokenizerJson = R"({
  "added_tokens": [
    {"id": 6, "content": "<|begin_of_text|>", "special": true},
    {"id": 7, "content": "<|eot_id|>", "special": true},
    {"id": 8, "content": "<tool>", "special": false}],
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġa": 4, "c": 5},
            "merges": [["a", "b"], ["Ġ", "a"]]}
})";

const char* kConfig = R"({"bos_token": "<|begin_of_text|>", "eos_token": {"content": "<|eot_id|>"},
  "add_bos_token": true, "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})";

}  // namespace

TEST(HfVocab, TokenizerJsonLlama3) {
  auto dir = ignis::test::temp_dir("vocab_tj");
  ignis::test::write_text(dir + "/tokenizer.json", kTokenizerJson);
  ignis::test::write_text(dir + "/tokenizer_config.json", kConfig);
  auto v = read_hf_vocab(dir, config(10));
  EXPECT_EQ(v.model, "gpt2");
  EXPECT_EQ(v.pre, "llama-bpe");
  EXPECT_EQ(v.tokens, (std::vector<std::string>{"a", "b", "ab", "Ġ", "Ġa", "c", "<|begin_of_text|>", "<|eot_id|>",
                                                "<tool>", "[PAD9]"}));
  EXPECT_EQ(v.types, (std::vector<int32_t>{1, 1, 1, 1, 1, 1, 3, 3, 4, 5}));
  EXPECT_EQ(v.merges, (std::vector<std::string>{"a b", "Ġ a"}));
  EXPECT_EQ(v.bos, 6);
  EXPECT_EQ(v.eos, 7);
  EXPECT_EQ(v.pad, -1);
  EXPECT_EQ(v.add_bos, 1);
  EXPECT_EQ(v.add_eos, -1);
  EXPECT_EQ(v.chat_template, "D");
}

// Without add_bos_token, the post-processor's template decides (Llama 3's tokenizer.json).
TEST(HfVocab, AddBosFromPostProcessor) {
  auto dir = ignis::test::temp_dir("vocab_pp");
  std::string tj = kTokenizerJson;
  tj.insert(tj.rfind('}'), R"(, "post_processor": {"type": "Sequence", "processors": [
    {"type": "ByteLevel"}, {"type": "TemplateProcessing",
     "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]}]})");
  ignis::test::write_text(dir + "/tokenizer.json", tj);
  ignis::test::write_text(dir + "/tokenizer_config.json", R"({"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"})");
  auto v = read_hf_vocab(dir, config(10));
  EXPECT_EQ(v.add_bos, 1);
  EXPECT_EQ(v.add_eos, 0);
  ignis::test::write_text(dir + "/tokenizer_config.json", R"({"bos_token": "<tool>", "eos_token": "<|eot_id|>"})");
  EXPECT_EQ(read_hf_vocab(dir, config(10)).add_bos, 0);
}

TEST(HfVocab, BadTokenizerFiles) {
  auto dir = ignis::test::temp_dir("vocab_bad");
  auto expect = [&](const std::string& tj, const std::string& tc, int64_t n_vocab, const std::string& want) {
    ignis::test::write_text(dir + "/tokenizer.json", tj);
    ignis::test::write_text(dir + "/tokenizer_config.json", tc);
    try {
      read_hf_vocab(dir, config(n_vocab));
      FAIL() << "no error, expected: " << want;
    } catch (const ignis::Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  expect(kTokenizerJson, kConfig, 8, "tokenizer.json: added token <tool> has id 8, outside [0, vocab_size 8)");
  expect(kTokenizerJson, kConfig, 5, "tokenizer.json: token c has id 5, outside [0, vocab_size 5)");
  expect(R"({"model":{"type":"Unigram","vocab":[]}})", "{}", 10, "model.type Unigram is not supported");
  expect(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[3]}})", "{}", 10, "model.merges holds an entry that is not a merge");
  expect(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\w+"}}})",
         "{}", 10, "pre_tokenizer regex \"\\w+\" is not one ignis can name");
  expect(kTokenizerJson, R"({"bos_token": "<s>"})", 10, "tokenizer_config.json: bos_token \"<s>\" is not in the vocabulary");
  expect(kTokenizerJson, R"({"add_bos_token": "yes"})", 10, "tokenizer_config.json: key add_bos_token is not a boolean");
  expect(kTokenizerJson, R"({"added_tokens_decoder": {"x": {"content": "q"}}})", 10,
         "added_tokens_decoder entry x is not an id with a content");
  expect("{", "{}", 10, "tokenizer.json: invalid JSON");
}

// --- SentencePiece tokenizer.model ----------------------------------------------------------------

namespace {

namespace fs = std::filesystem;

const std::string kShared = IGNIS_SHARED_DIR;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A folder holding `model` as tokenizer.model plus the given tokenizer_config.json ("" = none).
std::string spm_folder(const std::string& name, const std::string& model, const std::string& tc) {
  auto dir = ignis::test::temp_dir(name);
  fs::copy_file(model, dir + "/tokenizer.model");
  if (!tc.empty()) ignis::test::write_text(dir + "/tokenizer_config.json", tc);
  return dir;
}

HfConfig spm_config(int64_t n_vocab) {
  HfConfig c = config(n_vocab);
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  return c;
}

// The vocabulary as a GGUF (the tokenizer.* keys convert writes), opened as ignis opens a model.
std::unique_ptr<ignis::gguf::GgufFile> vocab_gguf(const ignis::hf::HfVocab& v) {
  ignis::gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("tokenizer.ggml.model", v.model);
  w.set_string("tokenizer.ggml.pre", v.pre);
  w.set_string_array("tokenizer.ggml.tokens", v.tokens);
  w.set_f32_array("tokenizer.ggml.scores", v.scores);
  w.set_i32_array("tokenizer.ggml.token_type", v.types);
  if (v.bos >= 0) w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(v.bos));
  if (v.eos >= 0) w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(v.eos));
  if (v.unk >= 0) w.set_u32("tokenizer.ggml.unknown_token_id", uint32_t(v.unk));
  if (v.add_bos >= 0) w.set_bool("tokenizer.ggml.add_bos_token", v.add_bos == 1);
  if (v.add_eos >= 0) w.set_bool("tokenizer.ggml.add_eos_token", v.add_eos == 1);
  auto bytes = w.to_bytes();
  return ignis::gguf::GgufFile::from_memory(bytes.data(), bytes.size(), "vocab.gguf");
}

}  // namespace

// Llama 2's tokenizer.model converts to exactly the vocabulary llama.cpp's converter wrote into
// ggml-vocab-llama-spm.gguf: tokens, scores, token types, special ids and flags.
TEST(HfVocabSentencePiece, Llama2EqualsLlamaCppConvertedVocab) {
  const std::string model = kShared + "/hf-tokenizers/llama2/tokenizer.model";
  const std::string ref_path = kShared + "/tokenizer-vectors/ggml-vocab-llama-spm.gguf";
  if (!fs::exists(model) || !fs::exists(ref_path)) GTEST_SKIP() << "needs " << model << " and " << ref_path;
  auto dir = spm_folder("vocab_spm_llama2", model,
                        R"({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": true,
                            "add_eos_token": false})");
  auto v = read_hf_vocab(dir, spm_config(32000));
  auto ref = ignis::gguf::GgufFile::open(ref_path);
  EXPECT_EQ(v.model, ref->get_string("tokenizer.ggml.model"));
  EXPECT_EQ(v.pre, ref->get_string("tokenizer.ggml.pre"));
  EXPECT_EQ(v.tokens, ref->get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(v.scores, ref->get_float_array("tokenizer.ggml.scores"));
  auto ref_types = ref->get_int_array("tokenizer.ggml.token_type");
  EXPECT_EQ(std::vector<int64_t>(v.types.begin(), v.types.end()), ref_types);
  EXPECT_EQ(v.bos, ref->get_int("tokenizer.ggml.bos_token_id"));
  EXPECT_EQ(v.eos, ref->get_int("tokenizer.ggml.eos_token_id"));
  EXPECT_EQ(v.unk, ref->get_int("tokenizer.ggml.unknown_token_id"));
  EXPECT_EQ(v.add_bos, ref->get_bool("tokenizer.ggml.add_bos_token") ? 1 : 0);
  EXPECT_EQ(v.add_eos, ref->get_bool("tokenizer.ggml.add_eos_token") ? 1 : 0);
  EXPECT_TRUE(v.merges.empty());
}

// Each tokenizer.model of shared/ (Llama 2, Mistral v1, v2, v3, v7), converted, tokenizes the golden texts
// as python3-sentencepiece does with the original file.
TEST(HfVocabSentencePiece, ConvertedVocabEncodesAsSentencePiece) {
  const auto golden = nlohmann::json::parse(slurp(std::string(IGNIS_TEST_DATA) + "/text/sentencepiece_golden.json"));
  int checked = 0;
  for (const auto& m : golden["models"]) {
    const std::string model = kShared + "/" + m["model"].get<std::string>();
    if (!fs::exists(model)) continue;
    ++checked;
    auto dir = spm_folder("vocab_spm_golden", model, "");
    auto v = read_hf_vocab(dir, spm_config(int64_t(1) << 15));  // every file has 32000 or 32768 pieces
    auto tok = ignis::text::Tokenizer::from_gguf(*vocab_gguf(v));
    int failed = 0;
    for (const auto& c : m["cases"]) {
      const auto expected = c["ids"].get<std::vector<int>>();
      const auto got = tok->encode(c["text"].get<std::string>(), false, false);
      if (std::vector<int>(got.begin(), got.end()) != expected) ++failed;
    }
    EXPECT_EQ(failed, 0) << model;
  }
  if (checked == 0) GTEST_SKIP() << "shared/hf-tokenizers not present";
}

// added_tokens.json and tokenizer_config.json's added_tokens_decoder as llama.cpp's converter reads them:
// control when special or looking special ("<|...|>"), else user-defined with U+2581 read as a space.
TEST(HfVocabSentencePiece, AddedTokensAndPadding) {
  const std::string model = kShared + "/hf-tokenizers/llama2/tokenizer.model";
  if (!fs::exists(model)) GTEST_SKIP() << "needs " << model;
  auto dir = spm_folder("vocab_spm_added", model,
                        R"({"added_tokens_decoder": {"32001": {"content": "<|im_end|>", "special": false},
                                                      "32002": {"content": "\u2581tool\u2581x", "special": false},
                                                      "2": {"content": "</s>", "special": true}}})");
  ignis::test::write_text(dir + "/added_tokens.json", R"({"<extra>": 32000})");
  auto v = read_hf_vocab(dir, spm_config(32004));
  ASSERT_EQ(v.tokens.size(), 32004u);
  EXPECT_EQ(v.tokens[32000], "<extra>");
  EXPECT_EQ(v.types[32000], 4);
  EXPECT_EQ(v.scores[32000], -1000.0f);
  EXPECT_EQ(v.tokens[32001], "<|im_end|>");
  EXPECT_EQ(v.types[32001], 3);
  EXPECT_EQ(v.tokens[32002], " tool x");
  EXPECT_EQ(v.types[32002], 4);
  EXPECT_EQ(v.tokens[32003], "[PAD32003]");
  EXPECT_EQ(v.types[32003], 5);
  EXPECT_EQ(v.scores[32003], -10000.0f);
  EXPECT_EQ(v.types[2], 3);
  EXPECT_EQ(v.scores[2], -1000.0f);
  EXPECT_EQ(v.types[0], 2);   // <unk>: the model's UNKNOWN type
  EXPECT_EQ(v.types[3], 6);   // <0x00>: a byte piece
  EXPECT_EQ(v.bos, 1);
  EXPECT_EQ(v.eos, 2);
}

TEST(HfVocabSentencePiece, BadModelFiles) {
  const std::string model = kShared + "/hf-tokenizers/llama2/tokenizer.model";
  auto expect = [&](const std::string& bytes, int64_t n_vocab, const std::string& want) {
    auto dir = ignis::test::temp_dir("vocab_spm_bad");
    ignis::test::write_text(dir + "/tokenizer.model", bytes);
    try {
      read_hf_vocab(dir, spm_config(n_vocab));
      FAIL() << "no error, expected: " << want;
    } catch (const ignis::Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  expect("", 10, "tokenizer.model: no pieces (not a SentencePiece model)");
  expect(std::string("\x0a\x05\x0a\x01", 4), 10, "tokenizer.model: protobuf field of 5 bytes runs past the end");
  expect(std::string("\x0a\x02\x18\x09", 4), 10, "tokenizer.model: piece 0 has type 9, not a SentencePiece type");
  expect(std::string("\x0a\x02\x10\x01", 4), 10, "tokenizer.model: piece 0 has no text");
  expect(std::string("\x0a\x03\x0a\x01\x61\x0a\x03\x0a\x01\x62", 10), 1, "tokenizer.model: 2 pieces, more than vocab_size 1");
  expect(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11), 10, "protobuf varint longer than 10 bytes");
  if (!fs::exists(model)) return;
  auto dir = spm_folder("vocab_spm_bad_added", model, "");
  ignis::test::write_text(dir + "/added_tokens.json", R"({"<x>": 40000})");
  try {
    read_hf_vocab(dir, spm_config(32000));
    FAIL() << "no error";
  } catch (const ignis::Error& e) {
    EXPECT_NE(std::string(e.what()).find("added_tokens.json: added token <x> has id 40000, outside [0, vocab_size 32000)"),
              std::string::npos) << e.what();
  }
}

// `ignis convert` of a Llama-style folder whose tokenizer is only tokenizer.model: the GGUF carries the
// SentencePiece vocabulary (model "llama", scores, types, no merges), loads as a model, and its tokenizer
// encodes as python3-sentencepiece does with the original file.
TEST(HfVocabSentencePiece, ConvertWritesALlamaTokenizer) {
  const std::string model = kShared + "/hf-tokenizers/llama2/tokenizer.model";
  const std::string mkhf = std::string(IGNIS_BINARY_DIR) + "/bin/ignis-mkhf";
  if (!fs::exists(model) || !fs::exists(ignis::test::kQwen2Tok + "/vocab.json") || !fs::exists(mkhf))
    GTEST_SKIP() << "needs " << model << ", the Qwen2 tokenizer files and ignis-mkhf";
  const std::string dir = ignis::test::make_hf_folder("spm_convert", "--arch llama --dtype f32");
  for (const char* f : {"tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json", "added_tokens.json",
                        "special_tokens_map.json"})
    fs::remove(dir + "/" + f);
  fs::copy_file(model, dir + "/tokenizer.model");
  auto cfg = nlohmann::json::parse(slurp(dir + "/config.json"));
  cfg["bos_token_id"] = 1;
  cfg["eos_token_id"] = 2;
  ignis::test::write_text(dir + "/config.json", cfg.dump(2));
  const std::string out = dir + "/../spm_convert.gguf";
  ignis::hf::convert_hf_to_gguf(dir, out, {"f32", ""});

  auto f = ignis::gguf::GgufFile::open(out);
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f->get_string("tokenizer.ggml.pre"), "default");
  EXPECT_FALSE(f->has("tokenizer.ggml.merges"));
  const int64_t n_vocab = cfg["vocab_size"].get<int64_t>();
  auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  auto scores = f->get_float_array("tokenizer.ggml.scores");
  ASSERT_EQ(int64_t(tokens.size()), n_vocab);
  ASSERT_EQ(int64_t(scores.size()), n_vocab);
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[31999], "\xe7\xbb\x99");  // the last piece of Llama 2's model (python3-sentencepiece)
  EXPECT_EQ(tokens[32000], "[PAD32000]");   // config.json's vocab_size is larger: padded as llama.cpp pads
  EXPECT_EQ(scores[32000], -10000.0f);
  EXPECT_EQ(f->get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(f->get_int("tokenizer.ggml.eos_token_id"), 2);
  auto m = ignis::model::Model::load(out);
  EXPECT_EQ(m->hparams().n_vocab, n_vocab);

  const auto golden = nlohmann::json::parse(slurp(std::string(IGNIS_TEST_DATA) + "/text/sentencepiece_golden.json"));
  auto tok = ignis::text::Tokenizer::from_gguf(*f);
  int checked = 0;
  for (const auto& mdl : golden["models"]) {
    if (mdl["model"] != "hf-tokenizers/llama2/tokenizer.model") continue;
    for (const auto& c : mdl["cases"]) {
      const auto got = tok->encode(c["text"].get<std::string>(), false, false);
      EXPECT_EQ(std::vector<int>(got.begin(), got.end()), c["ids"].get<std::vector<int>>()) << c["text"];
      ++checked;
    }
  }
  EXPECT_GT(checked, 50);
}
