// tokenizer.json details beyond the model itself, on small hand-written tokenizer.json files:
// - added tokens' `normalized` flag (Hugging Face tokenizers' AddedVocabulary: non-normalized
//   added tokens are taken out of the raw text first, the rest is normalized, then normalized
//   added tokens, whose content is normalized too, are taken out of the normalized text);
// - decoders: BPEDecoder's suffix, WordPiece's prefix and cleanup, and a clear error for decoders
//   that are not supported;
// - tokenizer_config.json's clean_up_tokenization_spaces (transformers' clean_up_tokenization).
// There is no Hugging Face `tokenizers` package on Debian, so the expectations are worked out by
// hand from those libraries' documented behaviour; each one says how.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

namespace ignis::text {
namespace {

using nlohmann::json;

std::filesystem::path temp_dir(const std::string& sub) {
  const auto dir = std::filesystem::temp_directory_path() / "ignis_tokenizer_gaps_test" / sub;
  std::filesystem::create_directories(dir);
  return dir;
}

std::string write_json(const std::filesystem::path& p, const json& j) {
  std::ofstream(p) << j.dump();
  return p.string();
}

std::string stream_all(const Tokenizer& tok, const std::vector<TokenId>& ids) {
  StreamDecoder sd(tok);
  std::string s;
  for (TokenId id : ids) s += sd.push(id);
  return s + sd.flush();
}

// Character-level BPE (no merges) with a Lowercase normalizer and no pre-tokenizer, so every
// normal character is its own token: a=0 b=1 c=2 e=3 h=4 l=5 o=6 x=7 <=8 >=9.
json lowercase_bpe(const json& added) {
  json vocab = json::object();
  const std::string chars = "abcehlox<>";
  for (size_t i = 0; i < chars.size(); ++i) vocab[std::string(1, chars[i])] = i;
  json j;
  j["normalizer"] = {{"type", "Lowercase"}};
  j["pre_tokenizer"] = nullptr;
  j["decoder"] = nullptr;
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}};
  j["added_tokens"] = added;
  return j;
}

json added(int id, const std::string& content, bool special, bool normalized) {
  return {{"id", id},          {"content", content}, {"special", special}, {"normalized", normalized},
          {"lstrip", false},   {"rstrip", false},    {"single_word", false}};
}

TEST(HfGaps, NormalizedAddedTokenMatchesNormalizedText) {
  const auto dir = temp_dir("normalized");
  // "Hello" normalized=true: its pattern is the normalized content "hello", matched in the
  // lowercased text, so "HELLO", "Hello" and "hello" all give it.
  const json j = lowercase_bpe(json::array({added(10, "Hello", false, true), added(11, "<X>", true, false)}));
  auto tok = Tokenizer::from_path(write_json(dir / "tokenizer.json", j));
  EXPECT_EQ(tok->encode("HELLO", false, true), (std::vector<TokenId>{10}));
  EXPECT_EQ(tok->encode("hello", false, true), (std::vector<TokenId>{10}));
  EXPECT_EQ(tok->encode("xHeLLox", false, true), (std::vector<TokenId>{7, 10, 7}));
  // "<X>" normalized=false: matched in the raw text before lowercasing...
  EXPECT_EQ(tok->encode("HELLO<X>hello", false, true), (std::vector<TokenId>{10, 11, 10}));
  // ...so "<x>" (lowercase in the raw text) is plain text: <, x, >.
  EXPECT_EQ(tok->encode("<x>", false, true), (std::vector<TokenId>{8, 7, 9}));
  // Without parse_special the special "<X>" is text, lowercased to <, x, >; the normalized
  // non-special "Hello" still matches.
  EXPECT_EQ(tok->encode("<X>HELLO", false, false), (std::vector<TokenId>{8, 7, 9, 10}));
}

TEST(HfGaps, NonNormalizedAddedTokenMatchesRawTextOnly) {
  const auto dir = temp_dir("raw");
  // The same "Hello" with normalized=false is matched case-sensitively in the raw text;
  // anything else is lowercased and goes to the model character by character.
  const json j = lowercase_bpe(json::array({added(10, "Hello", false, false)}));
  auto tok = Tokenizer::from_path(write_json(dir / "tokenizer.json", j));
  EXPECT_EQ(tok->encode("Hello", false, false), (std::vector<TokenId>{10}));
  EXPECT_EQ(tok->encode("HELLO", false, false), (std::vector<TokenId>{4, 3, 5, 5, 6}));
  EXPECT_EQ(tok->encode("hello", false, false), (std::vector<TokenId>{4, 3, 5, 5, 6}));
}

TEST(HfGaps, RawAddedTokensAreTakenOutBeforeNormalizedOnes) {
  const auto dir = temp_dir("order");
  // "ab" normalized=true, "bc" normalized=false, input "abc": the raw pass takes "bc" first, so
  // what is left is "a" -> [a, bc], although "ab" starts further left.
  const json j = lowercase_bpe(json::array({added(10, "ab", false, true), added(11, "bc", false, false)}));
  auto tok = Tokenizer::from_path(write_json(dir / "tokenizer.json", j));
  EXPECT_EQ(tok->encode("abc", false, false), (std::vector<TokenId>{0, 11}));
  // "ABC": the raw "bc" does not match the uppercase text; lowercased, "ab" matches, then c.
  EXPECT_EQ(tok->encode("ABC", false, false), (std::vector<TokenId>{10, 2}));
}

TEST(HfGaps, BpeDecoderSuffix) {
  const auto dir = temp_dir("bpe_decoder");
  // BPEDecoder: every token's suffix becomes " ", the last token's becomes "".
  json j;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "WhitespaceSplit"}};
  j["decoder"] = {{"type", "BPEDecoder"}, {"suffix", "</w>"}};
  j["model"] = {{"type", "BPE"},
                {"end_of_word_suffix", "</w>"},
                {"vocab", {{"hello</w>", 0}, {"wor", 1}, {"ld</w>", 2}, {"a</w>", 3}, {"<eos>", 4}}},
                {"merges", json::array()}};
  j["added_tokens"] = json::array({added(4, "<eos>", true, false)});
  auto tok = Tokenizer::from_path(write_json(dir / "tokenizer.json", j));
  // ["hello</w>", "wor", "ld</w>"] -> "hello " + "wor" + "ld".
  EXPECT_EQ(tok->decode({0, 1, 2}), "hello world");
  EXPECT_EQ(tok->decode({0}), "hello");
  EXPECT_EQ(tok->decode({0, 3}), "hello a");
  // A skipped special token is not the last token; a kept one is (and has no suffix).
  EXPECT_EQ(tok->decode({0, 4}, /*skip_special=*/true), "hello");
  EXPECT_EQ(tok->decode({0, 4}, /*skip_special=*/false), "hello <eos>");
  const std::vector<TokenId> ids = {0, 1, 2, 0, 3, 4, 3};
  EXPECT_EQ(tok->decode(ids, true), "hello world hello a a");
  EXPECT_EQ(stream_all(*tok, ids), tok->decode(ids, true));
}

// WordPiece vocabulary: [UNK]=0 hello=1 .=2 don=3 '=4 t=5 ##s=6 it=7.
json wordpiece(bool cleanup) {
  json j;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  j["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", cleanup}};
  j["model"] = {{"type", "WordPiece"},
                {"unk_token", "[UNK]"},
                {"continuing_subword_prefix", "##"},
                {"vocab", {{"[UNK]", 0}, {"hello", 1}, {".", 2}, {"don", 3}, {"'", 4}, {"t", 5}, {"##s", 6}, {"it", 7}}}};
  return j;
}

TEST(HfGaps, WordPieceDecoderCleanup) {
  const auto dir = temp_dir("wordpiece");
  auto clean = Tokenizer::from_path(write_json(dir / "clean.json", wordpiece(true)));
  auto plain = Tokenizer::from_path(write_json(dir / "plain.json", wordpiece(false)));
  // The WordPiece decoder puts " " before tokens without "##" (but the first) and drops "##";
  // cleanup then runs on each token on its own: " ." -> ".", while " '" alone matches no rule.
  EXPECT_EQ(clean->decode({1, 2}), "hello.");
  EXPECT_EQ(plain->decode({1, 2}), "hello .");
  EXPECT_EQ(clean->decode({7, 4, 6}), "it 's");
  EXPECT_EQ(clean->decode({3, 4, 5}), "don ' t");
  EXPECT_EQ(clean->encode("hello.", false, false), (std::vector<TokenId>{1, 2}));
  // The first token is left as it is, "##" included (tokenizers' WordPiece decoder skips token 0).
  EXPECT_EQ(plain->decode({6, 1}), "##s hello");
  EXPECT_EQ(plain->decode({1, 6}), "hellos");
}

TEST(HfGaps, CleanUpTokenizationSpacesFromConfig) {
  for (bool on : {true, false}) {
    const auto dir = temp_dir(on ? "cleanup_on" : "cleanup_off");
    write_json(dir / "tokenizer.json", wordpiece(false));
    write_json(dir / "tokenizer_config.json", {{"clean_up_tokenization_spaces", on}});
    auto tok = Tokenizer::from_path(dir.string());
    // transformers' clean_up_tokenization on the whole decoded text: "hello ." -> "hello.",
    // "don ' t" -> "don't" (" ' " -> "'"), "it ' s" -> "it's" (the WordPiece decoder gives
    // "it 's" from it ' ##s, then " 's" -> "'s").
    EXPECT_EQ(tok->decode({1, 2}), on ? "hello." : "hello .");
    EXPECT_EQ(tok->decode({3, 4, 5}), on ? "don't" : "don ' t");
    EXPECT_EQ(tok->decode({7, 4, 6}), on ? "it's" : "it 's");
    const std::vector<TokenId> ids = {1, 2, 3, 4, 5, 1, 1, 2, 7, 4, 6, 2};
    EXPECT_EQ(tok->decode(ids), on ? "hello. don't hello hello. it's." : "hello . don ' t hello hello . it 's .");
    EXPECT_EQ(stream_all(*tok, ids), tok->decode(ids, true));
  }
}

TEST(HfGaps, CleanUpTokenizationRules) {
  // Each rule over the whole string, in transformers' order: " ' " -> "'" runs before " n't".
  EXPECT_EQ(clean_up_tokenization("a . b ? c ! d , e ' f n't 'm 's 've 're"), "a. b? c! d, e'fn't'm's've're");
  EXPECT_EQ(clean_up_tokenization("no rule here"), "no rule here");
  EXPECT_EQ(clean_up_tokenization("x  ."), "x .");  // Python's str.replace does not rescan
}

TEST(HfGaps, UnsupportedDecodersAreErrors) {
  const auto dir = temp_dir("bad_decoder");
  json j = wordpiece(true);
  j["decoder"] = {{"type", "CTC"}};
  try {
    Tokenizer::from_path(write_json(dir / "ctc.json", j));
    FAIL() << "CTC decoder accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("decoder type 'CTC'"), std::string::npos) << e.what();
  }
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", "_"}}}, {"content", " "}}})}};
  try {
    Tokenizer::from_path(write_json(dir / "replace.json", j));
    FAIL() << "Replace _ -> ' ' accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("decoder Replace '_'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ignis::text
