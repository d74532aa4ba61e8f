// ignis template: render a model's chat template over a conversation and print the prompt exactly.
//
// The template comes from --chat-template-file, else from the model (GGUF tokenizer.chat_template or
// tokenizer_config.json's chat_template); a model without one falls back to ChatML with a warning.
// bos_token and eos_token are the model's. Output is the rendered prompt, byte for byte, with no
// trailing newline added.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace ignis::cli {
namespace {

using ordered_json = nlohmann::ordered_json;

struct TemplateOptions {
  std::string model;
  std::string template_file;
  std::string messages_file;
  std::string tools_file;
  bool no_generation_prompt = false;
  std::string kwargs = "{}";
};

std::string read_text(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("{}: cannot open {}", path, what);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

ordered_json parse_json(const std::string& text, const std::string& where) {
  try {
    return ordered_json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail("{}: invalid JSON: {}", where, e.what());
  }
}

std::string token_or_empty(const text::Tokenizer& tok, text::TokenId id) {
  return id >= 0 && id < tok.n_vocab() ? tok.token_text(id) : std::string();
}

int run_template(const TemplateOptions& o) {
  text::ChatTemplateInputs in;
  ordered_json messages = parse_json(read_text(o.messages_file, "messages file"), o.messages_file);
  if (messages.is_object() && messages.contains("messages")) messages = messages["messages"];
  if (!messages.is_array()) fail("{}: expected a JSON array of messages", o.messages_file);
  in.messages = std::move(messages);
  if (!o.tools_file.empty()) {
    in.tools = parse_json(read_text(o.tools_file, "tools file"), o.tools_file);
    if (!in.tools.is_array()) fail("{}: expected a JSON array of tools", o.tools_file);
  }
  in.extra = parse_json(o.kwargs, "--kwargs");
  if (!in.extra.is_object()) fail("--kwargs: expected a JSON object, got {}", in.extra.type_name());
  in.add_generation_prompt = !o.no_generation_prompt;

  auto tok = text::Tokenizer::from_path(o.model);
  std::string source, origin = o.model;
  if (!o.template_file.empty()) {
    origin = o.template_file;
    source = read_text(o.template_file, "chat template file");
  } else {
    source = tok->chat_template();
    if (source.empty()) {
      std::fprintf(stderr, "warning: %s has no chat template; using ChatML\n", o.model.c_str());
      source = text::ChatTemplate::chatml_source();
    }
  }
  in.bos_token = token_or_empty(*tok, tok->bos());
  in.eos_token = token_or_empty(*tok, tok->eos());

  std::unique_ptr<text::ChatTemplate> tmpl;
  try {
    tmpl = std::make_unique<text::ChatTemplate>(source);
  } catch (const Error& e) {
    fail("{}: {}", origin, e.what());
  }
  const std::string prompt = tmpl->render(in);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  return 0;
}

Action setup_template(CLI::App& sub) {
  auto o = std::make_shared<TemplateOptions>();
  sub.add_option("-m,--model", o->model, "model: a .gguf, or a folder / file with Hugging Face tokenizer files")
      ->required();
  sub.add_option("--chat-template-file", o->template_file, "use this Jinja template instead of the model's");
  sub.add_option("--messages", o->messages_file, "JSON file: an array of {role, content, ...} messages")
      ->required();
  sub.add_option("--tools", o->tools_file, "JSON file: an array of tool definitions");
  sub.add_flag("--no-generation-prompt", o->no_generation_prompt, "render without add_generation_prompt");
  sub.add_option("--kwargs", o->kwargs, "JSON object of extra template variables, e.g. '{\"enable_thinking\": false}'");
  return [o]() { return run_template(*o); };
}

Command reg{"template", "Render a model's chat template over a conversation", setup_template};

}  // namespace
}  // namespace ignis::cli
