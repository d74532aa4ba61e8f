// tiktoken BPE files ("<base64 token> <rank>" per line), as Meta ships Llama 3's tokenizer.
// tiktoken has no merge list: two adjacent parts merge when their concatenation is a token, the
// lowest-ranked concatenation first; that is the same as merges (a, b) ranked by rank(a + b).
#include <sstream>

#include "core/error.h"
#include "text/file_util.h"
#include "text/hf_loader.h"
#include "text/pre_types.h"
#include "text/token_map.h"

namespace ignis::text {

namespace {

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool b64_decode(std::string_view in, std::string* out) {
  out->clear();
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const int v = b64_value(c);
    if (v < 0) return false;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      *out += char((acc >> bits) & 0xFF);
    }
  }
  return true;
}

}  // namespace

void add_llama3_specials(TokenizerConfig* cfg) {
  static const char* const kNamed[] = {
      "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
      "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
      "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"};
  const TokenId base = 128000;
  for (int i = 0; i < 256; ++i) {
    AddedToken a;
    a.id = base + i;
    a.content = i < 11 ? kNamed[i] : "<|reserved_special_token_" + std::to_string(i - 8) + "|>";
    a.special = true;
    add_added_token(cfg, a, cfg->source);
  }
  cfg->bos = base;
  cfg->eos = base + 1;
  cfg->eot = base + 9;
  cfg->eom = base + 8;
  cfg->add_bos = true;
}

void load_tiktoken_config(const std::string& path, TokenizerConfig* cfg) {
  const std::string text = read_text_file(path);
  cfg->source = path;
  cfg->kind = ModelKind::Bpe;
  cfg->piece_mode = PieceMode::Raw;
  cfg->byte_level = true;
  std::istringstream in(text);
  std::string line, tok;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    long rank = -1;
    if (sp != std::string::npos) {
      try {
        rank = std::stol(line.substr(sp + 1));
      } catch (const std::exception&) {
        rank = -1;
      }
    }
    if (sp == std::string::npos || rank < 0 || !b64_decode(std::string_view(line).substr(0, sp), &tok))
      fail("{}:{}: expected '<base64 token> <rank>'", path, line_no);
    ensure_token(cfg, TokenId(rank), path);
    cfg->tokens[size_t(rank)] = {tok, 0.0f, TokenType::Normal};
  }
  const size_t n = cfg->tokens.size();
  if (n != 128000)
    fail("{}: tiktoken vocabulary of {} tokens is not one this reader knows (Llama 3: 128000)", path, n);
  // Llama 3: its split pattern; whole pre-tokens found in the vocabulary are taken as is.
  set_gguf_pre_tokenizer("llama-bpe", path, cfg);
  const TokenMap map(cfg->tokens, false);
  for (size_t i = 0; i < n; ++i) {
    const std::string& t = cfg->tokens[i].text;
    for (size_t k = 1; k < t.size(); ++k) {
      const std::string_view l = std::string_view(t).substr(0, k), r = std::string_view(t).substr(k);
      if (map_find(map, l) >= 0 && map_find(map, r) >= 0) cfg->merges.emplace_back(std::string(l), std::string(r));
    }
  }
  add_llama3_specials(cfg);
}

std::unique_ptr<Tokenizer> load_tiktoken(const std::string& path) {
  TokenizerConfig cfg;
  load_tiktoken_config(path, &cfg);
  add_eog_by_text(cfg);
  return make_tokenizer(std::move(cfg));
}

}  // namespace ignis::text
