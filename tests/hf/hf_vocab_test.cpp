// Tokenizer metadata for convert from a tokenizer.json folder (Llama 3 style) and bad tokenizer files.
#include <gtest/gtest.h>

#include "core/error.h"
#include "format/hf_convert.h"
#include "hf_test_util.h"

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
