// `ignis template` end to end: the prompt printed for GGUF models (their own template, bos and eos;
// ChatML with a warning when they have none) must equal what jinja2 rendered in
// tests/data/chat/cli_goldens.json (scripts/ref/render_templates.py), byte for byte.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

struct CliResult {
  int rc;
  std::string out, err;
};

CliResult run_ignis(const std::string& args, const fs::path& dir) {
  const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
  std::string cmd = std::string(std::getenv("IGNIS_BIN")) + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(out), read_file(err)};
}

class TemplateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::getenv("IGNIS_BIN")) GTEST_SKIP() << "IGNIS_BIN not set";
    if (!fs::exists(std::string(IGNIS_SHARED_DIR) + "/models/stories260K.gguf")) GTEST_SKIP() << "no shared data";
    dir_ = fs::temp_directory_path() / ("ignis_template_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(TemplateCli, PrintsThePromptJinja2Renders) {
  const std::string data = std::string(IGNIS_TEST_DATA) + "/chat/";
  json goldens = json::parse(read_file(data + "cli_goldens.json"));
  json convs = json::parse(read_file(data + "conversations.json"));
  ASSERT_GE(goldens.size(), 4u);
  for (const auto& g : goldens) {
    json messages;
    for (const auto& c : convs)
      if (c["name"] == g["conversation"]) messages = c["messages"];
    ASSERT_TRUE(messages.is_array());
    const std::string msgs = (dir_ / "messages.json").string();
    write_file(msgs, messages.dump());
    std::string args = "template -m " + std::string(IGNIS_SHARED_DIR) + "/" + g["model"].get<std::string>() +
                       " --messages " + msgs + (g["add_generation_prompt"].get<bool>() ? "" : " --no-generation-prompt");
    CliResult r = run_ignis(args, dir_);
    SCOPED_TRACE(args);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out, g["output"].get<std::string>());
    const bool warned = r.err.find("no chat template; using ChatML") != std::string::npos;
    EXPECT_EQ(warned, g["fallback"].get<bool>()) << r.err;
  }
}

TEST_F(TemplateCli, TemplateFileToolsAndKwargs) {
  const std::string tmpl = (dir_ / "t.jinja").string(), msgs = (dir_ / "m.json").string(),
                    tools = (dir_ / "tools.json").string();
  write_file(tmpl,
             "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}\n{% endfor %}"
             "{{ tools | tojson }}|{{ enable_thinking }}|{{ add_generation_prompt }}{{ eos_token }}\n");
  write_file(msgs, R"([{"role": "user", "content": "hi"}])");
  write_file(tools, R"([{"name": "f", "b": 1, "a": 2}])");
  CliResult r = run_ignis("template -m " + std::string(IGNIS_SHARED_DIR) + "/models/stories260K.gguf --chat-template-file " +
                        tmpl + " --messages " + msgs + " --tools " + tools +
                        " --kwargs '{\"enable_thinking\": false}' --no-generation-prompt",
                    dir_);
  ASSERT_EQ(r.rc, 0) << r.err;
  // The template's own trailing newline is dropped, as jinja2 does; key order is kept.
  EXPECT_EQ(r.out, "<s>user:hi\n[{\"name\": \"f\", \"b\": 1, \"a\": 2}]|False|False</s>");
  EXPECT_EQ(r.err, "");
}

TEST_F(TemplateCli, BadInputsGiveOneLineErrors) {
  const std::string model = std::string(IGNIS_SHARED_DIR) + "/models/stories260K.gguf";
  const std::string bad = (dir_ / "bad.json").string(), tmpl = (dir_ / "bad.jinja").string();
  write_file(bad, "[{\"role\": ");
  CliResult r = run_ignis("template -m " + model + " --messages " + bad, dir_);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("bad.json: invalid JSON"), std::string::npos) << r.err;

  write_file(bad, R"([{"role": "user", "content": "x"}])");
  write_file(tmpl, "ok\n{% if x %}\n{{ 1 + }}");
  r = run_ignis("template -m " + model + " --messages " + bad + " --chat-template-file " + tmpl, dir_);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("bad.jinja: chat template line 3:"), std::string::npos) << r.err;

  write_file(tmpl, "{{ raise_exception('Only user messages, please') }}");
  r = run_ignis("template -m " + model + " --messages " + bad + " --chat-template-file " + tmpl, dir_);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "error: Only user messages, please\n");

  r = run_ignis("template -m " + model + " --messages " + bad + " --kwargs '[1]'", dir_);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("--kwargs: expected a JSON object"), std::string::npos) << r.err;
}

}  // namespace
