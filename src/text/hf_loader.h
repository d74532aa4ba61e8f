// Loaders for tokenizer files other than GGUF: Hugging Face tokenizer.json, the GPT-2 style pair
// vocab.json + merges.txt (or encoder.json + vocab.bpe), SentencePiece .model files, tiktoken
// BPE files, and a folder holding any of them plus tokenizer_config.json.
// Each throws ignis::Error naming the file and the field on bad input.
#pragma once

#include <memory>
#include <string>

#include "text/tokenizer.h"
#include "text/vocab.h"

namespace ignis::text {

// `config_path`: a tokenizer_config.json to apply ("" for none).
std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::string& path, const std::string& config_path);
std::unique_ptr<Tokenizer> load_hf_folder(const std::string& dir);
// vocab.json + merges.txt (or encoder.json + vocab.bpe): byte-level BPE with the GPT-2 split
// unless `cfg` already holds a pre-tokenizer.
void load_vocab_merges(const std::string& vocab_path, const std::string& merges_path, TokenizerConfig* cfg);
std::unique_ptr<Tokenizer> load_sentencepiece_model(const std::string& path);
void load_sentencepiece_config(const std::string& path, TokenizerConfig* cfg);
std::unique_ptr<Tokenizer> load_tiktoken(const std::string& path);
void load_tiktoken_config(const std::string& path, TokenizerConfig* cfg);
// Applies tokenizer_config.json: added tokens, bos/eos, add_bos/add_eos, chat_template.
void apply_tokenizer_config(const std::string& path, TokenizerConfig* cfg);

}  // namespace ignis::text
