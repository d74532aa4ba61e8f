// ignis: one executable, one subcommand per file (see command.h).
#include <cstdio>
#include <exception>
#include <map>
#include <string_view>

#include "cli/command.h"
#include "core/error.h"

namespace ignis::cli {

std::vector<CommandEntry>& commands() {
  static std::vector<CommandEntry> all;
  return all;
}

Command::Command(std::string name, std::string help, Setup setup) {
  commands().push_back({std::move(name), std::move(help), std::move(setup)});
}

}  // namespace ignis::cli

int main(int argc, char** argv) {
  using namespace ignis::cli;
  CLI::App app{"ignis: LLM inference engine and server"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ignis 0.1.0");
  std::map<CLI::App*, Action> actions;
  std::vector<std::pair<CLI::App*, Setup*>> subs;
  for (auto& c : commands()) subs.emplace_back(app.add_subcommand(c.name, c.help), &c.setup);
  try {
    for (auto& [sub, setup] : subs) {
      Action act = (*setup)(*sub);
      actions[sub] = std::move(act);
    }
    // CLI11 2.1 accepts only one-letter short names; llama.cpp's "-hf REPO" is spelled --hf here.
    for (int i = 1; i < argc; ++i)
      if (std::string_view(argv[i]) == "-hf") argv[i] = const_cast<char*>("--hf");
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Like every other user error: one line on stderr, exit code 1.
    std::fprintf(stderr, "error: %s (see --help)\n", e.what());
    return 1;
  }
  try {
    for (auto& [sub, act] : actions)
      if (sub->parsed()) return act();
  } catch (const ignis::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
