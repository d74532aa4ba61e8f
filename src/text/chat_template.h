// Chat templates: Hugging Face Jinja chat templates rendered by ignis's own Jinja interpreter.
//
// A ChatTemplate is parsed once from template source (syntax errors throw ignis::Error naming the line)
// and is immutable afterwards: render() is const and thread-safe. Rendering follows transformers'
// apply_chat_template: trim_blocks and lstrip_blocks on, the variables messages, tools, documents,
// add_generation_prompt, bos_token, eos_token plus any extra kwargs (enable_thinking, ...),
// raise_exception() raising ignis::Error with the template's own message, strftime_now, tojson as HF defines.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace ignis::text {

// JSON is ordered_json so that objects keep their key order: tojson must print tool schemas and
// arguments in the order the caller gave them, as Python's dicts do. (A nlohmann::json converts
// implicitly, but has already sorted its keys.)
struct ChatTemplateInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;      // null when absent (templates test `tools is defined`/`tools`)
  nlohmann::ordered_json documents;  // null when absent
  bool add_generation_prompt = true;
  std::string bos_token;
  std::string eos_token;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // extra kwargs, e.g. {"enable_thinking": false}
  // The clock strftime_now() reads, "YYYY-MM-DD HH:MM:SS"; empty: $IGNIS_FIXED_NOW if set, else local time.
  std::string now;
};

class ChatTemplate {
 public:
  // Throws ignis::Error "chat template line N: ..." on a syntax error (unknown tags, filters and tests
  // included, as jinja2 rejects them when compiling).
  explicit ChatTemplate(const std::string& source);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // Throws ignis::Error: the template's own message when it calls raise_exception(), otherwise
  // "chat template line N: ..." (undefined values used, type errors, ...).
  std::string render(const ChatTemplateInputs& in) const;

  // ChatML, the fallback for models that ship no template.
  static const char* chatml_source();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ignis::text
