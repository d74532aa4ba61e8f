// Jinja lexer: template source -> tokens, with Jinja2's whitespace control.
//
// Mirrors jinja2.lexer as Hugging Face configures it: newlines normalized to "\n", one trailing newline
// dropped (keep_trailing_newline=False), `-` / `+` markers, trim_blocks (first newline after a block or
// comment tag removed) and lstrip_blocks (spaces before a block or comment tag at the start of a line
// removed), {% raw %} blocks passed through as text. Stateless apart from its input; not shared.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ignis::text::jinja {

enum class Tok : uint8_t { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };

struct Token {
  Tok type;
  std::string text;  // Text: the data; Name/Op: the spelling; String: the decoded value
  int line = 1;
  int64_t ival = 0;
  double fval = 0;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws RenderError (with line) on malformed input: unterminated tags, strings or comments.
std::vector<Token> tokenize(const std::string& source, const LexOptions& opts);

}  // namespace ignis::text::jinja
