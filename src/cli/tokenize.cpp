// ignis tokenize / ignis detokenize: text <-> token ids with a model's tokenizer.
//
// MODEL is any GGUF (vocab-only files too), a tokenizer.json, a SentencePiece tokenizer.model, a
// tiktoken file, or a folder of Hugging Face tokenizer files. tokenize prints one JSON array of ids
// on one line; detokenize prints the decoded text (special tokens rendered unless --skip-special).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "text/tokenizer.h"

namespace ignis::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  bool no_add_special = false;
  bool parse_special = false;
};

std::string read_all(const std::string& path) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open file", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Action setup_tokenize(CLI::App& sub) {
  auto o = std::make_shared<TokenizeOptions>();
  sub.add_option("-m,--model", o->model, "GGUF, tokenizer.json, tokenizer.model or tokenizer folder")->required();
  sub.add_option("text", o->text, "text to tokenize");
  sub.add_option("-f,--file", o->file, "read the text from a file ('-' for stdin)");
  sub.add_flag("--no-add-special", o->no_add_special, "add no BOS/EOS (or template tokens)");
  sub.add_flag("--parse-special", o->parse_special, "match special tokens written in the text");
  return [o, &sub]() {
    if (!o->file.empty() && sub.count("text")) fail("tokenize: give either TEXT or --file, not both");
    if (o->file.empty() && !sub.count("text")) fail("tokenize: give TEXT or --file");
    const std::string text = o->file.empty() ? o->text : read_all(o->file);
    auto tok = text::Tokenizer::from_path(o->model);
    const auto ids = tok->encode(text, !o->no_add_special, o->parse_special);
    std::string out = "[";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) out += ", ";
      out += std::to_string(ids[i]);
    }
    out += "]\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  };
}

struct DetokenizeOptions {
  std::string model;
  std::string ids;
  bool skip_special = false;
};

Action setup_detokenize(CLI::App& sub) {
  auto o = std::make_shared<DetokenizeOptions>();
  sub.add_option("-m,--model", o->model, "GGUF, tokenizer.json, tokenizer.model or tokenizer folder")->required();
  sub.add_option("ids", o->ids, "JSON array of token ids, e.g. [1, 15043]")->required();
  sub.add_flag("--skip-special", o->skip_special, "leave out control tokens");
  return [o]() {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(o->ids);
    } catch (const nlohmann::json::exception&) {
      fail("detokenize: IDS_JSON '{}' is not valid JSON", o->ids);
    }
    if (!j.is_array()) fail("detokenize: IDS_JSON must be a JSON array of token ids");
    std::vector<text::TokenId> ids;
    for (const auto& e : j) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > INT32_MAX)
        fail("detokenize: '{}' in IDS_JSON is not a token id", e.dump());
      ids.push_back(e.get<text::TokenId>());
    }
    auto tok = text::Tokenizer::from_path(o->model);
    const std::string s = tok->decode(ids, o->skip_special) + "\n";
    std::fwrite(s.data(), 1, s.size(), stdout);
    return 0;
  };
}

Command reg_tokenize{"tokenize", "Print the token ids of a text as a JSON array", setup_tokenize};
Command reg_detokenize{"detokenize", "Print the text of a JSON array of token ids", setup_detokenize};

}  // namespace
}  // namespace ignis::cli
