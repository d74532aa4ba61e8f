// Chat templates vs Python's Jinja2: every template in ../shared/chat-templates rendered over the
// conversations in tests/data/chat/conversations.json must match the goldens that
// scripts/ref/render_templates.py wrote with jinja2 configured as transformers does, byte for byte.
// Where jinja2 raised, ignis must raise too, with the same message for raise_exception().
#include <gtest/gtest.h>

#include <cstdio>
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

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

json read_json(const std::string& path) { return json::parse(read_file(path)); }

std::string first_difference(const std::string& got, const std::string& want) {
  size_t k = 0;
  while (k < got.size() && k < want.size() && got[k] == want[k]) ++k;
  auto ctx = [&](const std::string& s) { return json(s.substr(k > 40 ? k - 40 : 0, 100)).dump(); };
  return "first difference at byte " + std::to_string(k) + "\n  got:  " + ctx(got) + "\n  want: " + ctx(want);
}

TEST(ChatTemplateGolden, AllTemplatesMatchJinja2) {
  const std::string shared = std::string(IGNIS_SHARED_DIR) + "/chat-templates/";
  const std::string data = std::string(IGNIS_TEST_DATA) + "/chat/";
  json index = read_json(data + "goldens/index.json");
  json convs = read_json(data + "conversations.json");
  ASSERT_GE(index["templates"].size(), 100u);
  ASSERT_GE(convs.size(), 8u);
  if (read_file(shared + index["templates"][0]["path"].get<std::string>()).empty())
    GTEST_SKIP() << "no " << shared;

  size_t n_templates = 0, templates_ok = 0, n_cases = 0, cases_ok = 0;
  for (const auto& t : index["templates"]) {
    const std::string id = t["id"], path = t["path"];
    json golden = read_json(data + "goldens/" + id + ".json");
    std::string source = read_file(shared + path);
    ASSERT_FALSE(source.empty()) << path;
    ++n_templates;
    bool all_ok = true;
    std::unique_ptr<ChatTemplate> tmpl;
    std::string parse_error;
    try {
      tmpl = std::make_unique<ChatTemplate>(source);
    } catch (const ignis::Error& e) {
      parse_error = e.what();
    }
    for (const auto& c : convs) {
      const std::string name = c["name"];
      const json& want = golden.at(name);
      ++n_cases;
      ChatTemplateInputs in;
      in.messages = c["messages"];
      if (c.contains("tools")) in.tools = c["tools"];
      if (c.contains("documents")) in.documents = c["documents"];
      in.add_generation_prompt = c.value("add_generation_prompt", true);
      if (c.contains("kwargs")) in.extra = c["kwargs"];
      in.bos_token = index["bos_token"];
      in.eos_token = index["eos_token"];
      in.now = index["fixed_now"];
      std::string got, error;
      bool threw = !parse_error.empty();
      error = parse_error;
      if (!threw) {
        try {
          got = tmpl->render(in);
        } catch (const ignis::Error& e) {
          threw = true;
          error = e.what();
        }
      }
      bool ok;
      if (want.contains("output")) {
        ok = !threw && got == want["output"].get<std::string>();
        if (!ok)
          ADD_FAILURE() << path << " x " << name << ": "
                        << (threw ? "raised: " + error : first_difference(got, want["output"]));
      } else {
        // jinja2 raised: ignis must raise; raise_exception() messages must be the template's own.
        ok = threw && (want["error_type"] != "TemplateError" || error == want["error"].get<std::string>());
        if (!ok)
          ADD_FAILURE() << path << " x " << name << ": jinja2 raised " << want["error_type"].get<std::string>()
                        << " \"" << want["error"].get<std::string>() << "\", ignis "
                        << (threw ? "raised \"" + error + "\"" : "rendered");
      }
      cases_ok += ok;
      all_ok = all_ok && ok;
    }
    templates_ok += all_ok;
  }
  std::printf("chat templates matching jinja2: %zu/%zu templates, %zu/%zu renders\n", templates_ok, n_templates,
              cases_ok, n_cases);
  EXPECT_EQ(templates_ok, n_templates);
}

}  // namespace
