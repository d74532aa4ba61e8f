// Pre-tokenizers for GGUF's tokenizer.ggml.pre names: the split regexes of each model family's
// tokenizer.json (the names and groupings are the ones llama.cpp's converter writes).
#include "text/pre_types.h"

#include <initializer_list>

#include "core/error.h"

namespace ignis::text {

namespace {

const char* const kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen35 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kSeedCoder =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kBailing =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
const char* const kMiniCpm5 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kGpt2Short = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char* const kCjk = "[\xE4\xB8\x80-\xE9\xBE\xA5\xE0\xA0\x80-\xE4\xB8\x80\xEA\xB0\x80-\xED\x9F\xBF]+";
const char* const kDeepseekLatin =
    "\\s?[A-Za-z\xC2\xB5\xC3\x80-\xC3\x96\xC3\x98-\xC3\xB6\xC3\xB8-\xC6\xBA\xC6\xBC-\xC6\xBF\xC7\x84-"
    "\xCA\x93\xCA\x95-\xCA\xAF\xCD\xB0-\xCD\xB3\xCD\xB6\xCD\xB7\xCD\xBB-\xCD\xBD\xCD\xBF\xCE\x86\xCE"
    "\x88-\xCE\x8A\xCE\x8C\xCE\x8E-\xCE\xA1\xCE\xA3-\xCF\xB5\xCF\xB7-\xD2\x81\xD2\x8A-\xD4\xAF\xD4"
    "\xB1-\xD5\x96\xE1\x82\xA0-\xE1\x83\x85\xE1\x8E\xA0-\xE1\x8F\xB5\xE1\x8F\xB8-\xE1\x8F\xBD\xE1"
    "\xB2\x90-\xE1\xB2\xBA\xE1\xB2\xBD-\xE1\xB2\xBF\xE1\xB4\x80-\xE1\xB4\xAB\xE1\xB5\xAB-\xE1\xB5"
    "\xB7\xE1\xB5\xB9-\xE1\xB6\x9A\xE1\xB8\x80-\xE1\xBC\x95\xE1\xBC\x98-\xE1\xBC\x9D\xE1\xBC\xA0-"
    "\xE1\xBD\x85\xE1\xBD\x88-\xE1\xBD\x8D\xE1\xBD\x90-\xE1\xBD\x97\xE1\xBD\x99\xE1\xBD\x9B\xE1\xBD"
    "\x9D\xE1\xBD\x9F-\xE1\xBD\xBD\xE1\xBE\x80-\xE1\xBE\xB4\xE1\xBE\xB6-\xE1\xBE\xBC\xE1\xBE\xBE\xE1"
    "\xBF\x82-\xE1\xBF\x84\xE1\xBF\x86-\xE1\xBF\x8C\xE1\xBF\x90-\xE1\xBF\x93\xE1\xBF\x96-\xE1\xBF\x9B"
    "\xE1\xBF\xA0-\xE1\xBF\xAC\xE1\xBF\xB2-\xE1\xBF\xB4\xE1\xBF\xB6-\xE1\xBF\xBC\xE2\x84\x82\xE2\x84"
    "\x87\xE2\x84\x8A-\xE2\x84\x93\xE2\x84\x95\xE2\x84\x99-\xE2\x84\x9D\xE2\x84\xA4\xE2\x84\xA6\xE2"
    "\x84\xA8\xE2\x84\xAA-\xE2\x84\xAD\xE2\x84\xAF-\xE2\x84\xB4\xE2\x84\xB9\xE2\x84\xBC-\xE2\x84\xBF"
    "\xE2\x85\x85-\xE2\x85\x89\xE2\x85\x8E\xE2\x86\x83\xE2\x86\x84\xE2\xB0\x80-\xE2\xB1\xBB\xE2\xB1"
    "\xBE-\xE2\xB3\xA4\xE2\xB3\xAB-\xE2\xB3\xAE\xE2\xB3\xB2\xE2\xB3\xB3\xEA\x99\x80-\xEA\x99\xAD\xEA"
    "\x9A\x80-\xEA\x9A\x9B\xEA\x9C\xA2-\xEA\x9D\xAF\xEA\x9D\xB1-\xEA\x9E\x87\xEA\x9E\x8B-\xEA\x9E\x8E"
    "\xEA\xAD\xB0-\xEA\xAE\xBF\xEF\xAC\x80-\xEF\xAC\x86\xEF\xAC\x93-\xEF\xAC\x97\xEF\xBC\xA1-\xEF\xBC"
    "\xBA\xEF\xBD\x81-\xEF\xBD\x9A\xF0\x90\x90\x80-\xF0\x90\x91\x8F\xF0\x90\x92\xB0-\xF0\x90\x93\x93"
    "\xF0\x90\x93\x98-\xF0\x90\x93\xBB\xF0\x90\xB2\x80-\xF0\x90\xB2\xB2\xF0\x90\xB3\x80-\xF0\x90\xB3"
    "\xB2\xF0\x91\xA2\xA0-\xF0\x91\xA3\x9F\xF0\x9E\xA4\x80-\xF0\x9E\xA5\x83]+";
const char* const kDeepseekPunct =
    "\\s?[!-/:-~\xEF\xBC\x81-\xEF\xBC\x8F\xEF\xBC\x9A-\xEF\xBD\x9E\xE2\x80\x98-\xE2\x80\x9F\xE3\x80"
    "\x80-\xE3\x80\x82]+";

struct Family {
  std::initializer_list<const char*> names;
  std::initializer_list<const char*> regexes;
  bool ignore_merges = false;
  bool add_bos = false;
  bool nfc = false;  // the family's tokenizer.json normalizes to NFC (Qwen2's does)
};

const Family kFamilies[] = {
    {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
      "jina-v5-nano"},
     {kLlama3}, true, true},
    {{"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, {kLlama3}},
    {{"deepseek-llm"}, {"[\r\n]", kDeepseekLatin, kDeepseekPunct, "\\s+$", kCjk, "\\p{N}+"}},
    {{"deepseek-coder"}, {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"}},
    {{"deepseek-v3", "hunyuan-dense", "joyai-llm"},
     {"\\p{N}{1,3}",
      "[\xE4\xB8\x80-\xE9\xBE\xA5\xE3\x81\x80-\xE3\x82\x9F\xE3\x82\xA0-\xE3\x83\xBF]+",
      R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
    {{"falcon"},
     {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2Short, "[0-9][0-9][0-9]"}},
    {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
     {"\\p{N}", kGpt2Short}},
    {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
      "mellum", "modern-bert", "mpt", "olmo", "jais", "trillion", "granite-docling", "exaone4",
      "jina-v1-en", "jina-v2-code", "roberta-bpe"},
     {kGpt2Short}},
    {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan",
      "solar-open"},
     {kQwen2}, false, false, true},
    {{"grok-2"}, {kQwen2}},
    {{"qwen35"}, {kQwen35}, false, false, true},
    {{"poro-chat", "bloom", "gpt3-finnish"}, {R"( ?[^(\s|.,!?…。，、।۔،)]+)"}},
    {{"viking"}, {R"( ?[^(\s|.,!?…。，、।۔،)]+)", "\\p{N}"}},
    {{"tekken"}, {kTekken}, true, true},
    {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {kGpt4o}},
    {{"seed-coder"}, {kSeedCoder}},
    {{"bailingmoe", "bailingmoe2", "llada-moe"}, {kBailing}},
    {{"minicpm5"}, {"\\p{N}{1,3}", kMiniCpm5}, true},
    {{"superbpe"}, {"\\p{N}+", R"((?=(\d{3})+(?!\d)))"}},
    {{"chameleon"},
     {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
      R"([\p{P}!-/:-@\[-`{-~])", kGpt2Short},
     false, true},
    {{"default"},
     {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Short, "\\p{N}+", "[0-9][0-9][0-9]"}},
};

}  // namespace

std::vector<std::string> gguf_pre_tokenizer_names() {
  std::vector<std::string> names;
  for (const Family& f : kFamilies)
    for (const char* n : f.names) names.emplace_back(n);
  return names;
}

void set_gguf_pre_tokenizer(const std::string& pre, const std::string& source,
                            TokenizerConfig* cfg) {
  const std::string name = pre.empty() ? "default" : pre;
  for (const Family& f : kFamilies) {
    for (const char* n : f.names) {
      if (name != n) continue;
      for (const char* re : f.regexes) {
        PreStep st;
        st.kind = PreStep::Split;
        st.regex = std::make_shared<Regex>(re, source + ": tokenizer.ggml.pre " + name);
        cfg->pretokenizer.add(std::move(st));
      }
      cfg->ignore_merges = f.ignore_merges;
      if (f.nfc && cfg->normalizer.empty()) {
        NormalizerStep n;
        n.kind = NormalizerStep::NFC;
        cfg->normalizer.add(n);
      }
      if (f.add_bos) cfg->add_bos = true;
      return;
    }
  }
  fail("{}: unknown pre-tokenizer '{}' (tokenizer.ggml.pre)", source, name);
}

}  // namespace ignis::text
