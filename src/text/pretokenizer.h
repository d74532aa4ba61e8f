// Normalizers and pre-tokenizers: the stages between raw text and the tokenizer model, in the shape
// of Hugging Face tokenizers' components (llama.cpp's per-`tokenizer.ggml.pre` regex lists are
// expressed as Split steps with the Isolated behaviour).
//
// A Normalizer rewrites a text fragment; a PreTokenizer cuts a fragment into words (spans of a
// string it may rewrite). Both are immutable after construction and thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/regex.h"

namespace ignis::text {

struct NormalizerStep {
  enum Kind { NFC, NFD, NFKC, NFKD, Lowercase, Replace, ReplaceRegex, Prepend, Append, Strip,
              StripAccents, BertClean };
  Kind kind = NFC;
  std::string pattern;  // Replace: literal
  std::string content;  // Replace: replacement; Prepend/Append: text
  std::shared_ptr<Regex> regex;  // ReplaceRegex
  bool left = true, right = true;  // Strip
  // BertClean: HF BertNormalizer's options.
  bool clean_text = true, chinese_chars = true, strip_accents = false, lowercase = true;
};

class Normalizer {
 public:
  void add(NormalizerStep s) { steps_.push_back(std::move(s)); }
  bool empty() const { return steps_.empty(); }
  std::string apply(std::string_view text) const;

 private:
  std::vector<NormalizerStep> steps_;
};

// How a Split keeps what its pattern matched (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

struct PreStep {
  enum Kind { Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation, Bert };
  Kind kind = Split;
  std::shared_ptr<Regex> regex;  // Split; ByteLevel with use_regex
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;
  bool add_prefix_space = false;          // ByteLevel
  std::string replacement = "\xE2\x96\x81";  // Metaspace
  enum Prepend { Always, First, Never } prepend = Always;  // Metaspace
  bool split = true;                      // Metaspace
  bool individual_digits = false;         // Digits
};

// Words of a fragment: spans into `text` (which a step may have rewritten).
struct Words {
  std::string text;
  std::vector<Span> spans;
};

class PreTokenizer {
 public:
  void add(PreStep s) { steps_.push_back(std::move(s)); }
  bool empty() const { return steps_.empty(); }
  // `at_start`: the fragment begins the input (Metaspace's prepend_scheme "first").
  void apply(std::string text, bool at_start, Words* out) const;

 private:
  std::vector<PreStep> steps_;
};

// GPT-2's split pattern (ByteLevel's use_regex).
extern const char* const kGpt2Pattern;
// Escapes a literal for use inside a PCRE2 pattern.
std::string regex_escape(std::string_view literal);

}  // namespace ignis::text
