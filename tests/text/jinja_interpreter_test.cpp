// Jinja interpreter semantics vs Python's Jinja2: the snippets in tests/data/chat/snippets.json
// (operators, Python repr and float printing, filters, tests, loops, macros, scoping, whitespace
// control, errors) must render exactly as scripts/ref/render_templates.py recorded with jinja2.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/chat_template.h"

namespace {

using ignis::text::ChatTemplate;
using ignis::text::ChatTemplateInputs;
using json = nlohmann::ordered_json;

json read_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return json::parse(ss.str());
}

// Renders like the reference script: messages from the variables, the rest as extra kwargs.
std::string render(const std::string& source, json vars) {
  ChatTemplateInputs in;
  if (vars.contains("messages")) {
    in.messages = vars["messages"];
    vars.erase("messages");
  }
  in.add_generation_prompt = false;
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  in.now = "2026-01-15 10:30:00";
  in.extra = vars;
  return ChatTemplate(source).render(in);
}

TEST(JinjaInterpreter, SnippetsMatchJinja2) {
  const std::string data = std::string(IGNIS_TEST_DATA) + "/chat/";
  json snippets = read_json(data + "snippets.json");
  json goldens = read_json(data + "snippets.golden.json");
  ASSERT_EQ(snippets.size(), goldens.size()) << "regenerate with scripts/ref/render_templates.py";
  size_t ok = 0;
  for (size_t k = 0; k < snippets.size(); ++k) {
    const std::string t = snippets[k]["t"];
    const json& want = goldens[k];
    std::string got, error;
    bool threw = false;
    try {
      got = render(t, snippets[k].value("v", json::object()));
    } catch (const ignis::Error& e) {
      threw = true;
      error = e.what();
    }
    if (want.contains("output")) {
      EXPECT_FALSE(threw) << "snippet " << k << " " << t << "\nraised: " << error;
      EXPECT_EQ(got, want["output"].get<std::string>()) << "snippet " << k << " " << t;
      ok += !threw && got == want["output"].get<std::string>();
    } else {
      EXPECT_TRUE(threw) << "snippet " << k << " " << t << "\njinja2 raised " << want["error"] << ", ignis rendered "
                         << json(got).dump();
      if (want["error_type"] == "TemplateError") {
        EXPECT_EQ(error, want["error"].get<std::string>()) << "snippet " << k;
      } else if (threw) {
        // Every other error names the template line it comes from.
        EXPECT_NE(error.find("chat template line "), std::string::npos) << error;
      }
      ok += threw;
    }
  }
  std::printf("jinja snippets matching jinja2: %zu/%zu\n", ok, snippets.size());
}

TEST(JinjaInterpreter, SyntaxErrorNamesTheLine) {
  try {
    ChatTemplate t("line one\n{% if x %}\n{{ 1 + }}\n{% endif %}");
    FAIL() << "expected a syntax error";
  } catch (const ignis::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("chat template line 3:", 0), 0u) << e.what();
  }
}

TEST(JinjaInterpreter, RuntimeErrorNamesTheLine) {
  ChatTemplate t("a\nb\n{{ 'x' + 1 }}");
  try {
    t.render(ChatTemplateInputs{});
    FAIL() << "expected a runtime error";
  } catch (const ignis::Error& e) {
    EXPECT_EQ(std::string(e.what()), "chat template line 3: can only concatenate str (not \"int\") to str");
  }
}

TEST(JinjaInterpreter, RaiseExceptionKeepsTheTemplatesMessage) {
  ChatTemplate t("{% if messages[0].role != 'user' %}{{ raise_exception('Roles must alternate!') }}{% endif %}");
  ChatTemplateInputs in;
  in.messages = json::parse(R"([{"role": "system", "content": "x"}])");
  try {
    t.render(in);
    FAIL() << "expected raise_exception";
  } catch (const ignis::Error& e) {
    EXPECT_EQ(std::string(e.what()), "Roles must alternate!");
  }
}

TEST(JinjaInterpreter, DeepNestingAndHugeRangeFailCleanly) {
  std::string deep(5000, '(');
  EXPECT_THROW(ChatTemplate("{{ " + deep + " }}"), ignis::Error);
  std::string nested;
  for (int k = 0; k < 3000; ++k) nested += "{% if true %}";
  EXPECT_THROW(ChatTemplate{nested}, ignis::Error);
  ChatTemplate big("{{ range(100000000) | length }}");
  EXPECT_THROW(big.render(ChatTemplateInputs{}), ignis::Error);
  ChatTemplate recursive("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_THROW(recursive.render(ChatTemplateInputs{}), ignis::Error);
}

TEST(JinjaInterpreter, CyclesAndDeepInputFailCleanly) {
  ChatTemplate cyclic("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}");
  EXPECT_THROW(cyclic.render(ChatTemplateInputs{}), ignis::Error);
  ChatTemplateInputs in;
  json deep = json::array();
  for (int k = 0; k < 2000; ++k) deep = json::array({deep});
  in.messages = json::array({json{{"role", "user"}, {"content", deep}}});
  EXPECT_THROW(ChatTemplate("{{ messages }}").render(in), ignis::Error);
}

TEST(JinjaInterpreter, ChatmlFallbackRenders) {
  ChatTemplate t(ChatTemplate::chatml_source());
  ChatTemplateInputs in;
  in.messages = json::parse(R"([{"role": "user", "content": "hi"}])");
  EXPECT_EQ(t.render(in), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  in.add_generation_prompt = false;
  EXPECT_EQ(t.render(in), "<|im_start|>user\nhi<|im_end|>\n");
}

}  // namespace
