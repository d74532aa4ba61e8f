// Small helpers shared by the file loaders: whole-file reads and JSON parsing with errors that
// name the file, and vocabulary growth for added tokens.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/vocab.h"

namespace ignis::text {

std::string read_text_file(const std::string& path);
nlohmann::json read_json_file(const std::string& path);
// A JSON object of token -> id (vocab.json, encoder.json), in file order.
std::vector<std::pair<std::string, int64_t>> read_vocab_json(const std::string& path);
void ensure_token(TokenizerConfig* cfg, TokenId id, const std::string& source);
void add_added_token(TokenizerConfig* cfg, const AddedToken& a, const std::string& source);
// Llama 3's special tokens: <|begin_of_text|> (128000) ... <|reserved_special_token_N|> up to
// 128255, with bos/eos/eot set as Meta's tokenizer does.
void add_llama3_specials(TokenizerConfig* cfg);

}  // namespace ignis::text
