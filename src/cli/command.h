// Subcommand registry for the ignis executable.
//
// Each subcommand lives in its own file (run.cpp, tokenize.cpp, ...) and registers itself with a
// static Command object: `static Command reg{"run", "Generate text", setup_run};`. setup() adds the
// subcommand's flags to its CLI11 App and returns the function to call when it is chosen; that
// function returns the process exit code. main() catches ignis::Error and prints it as one line.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace ignis::cli {

using Action = std::function<int()>;
using Setup = std::function<Action(CLI::App& sub)>;

struct Command {
  Command(std::string name, std::string help, Setup setup);
};

struct CommandEntry {
  std::string name;
  std::string help;
  Setup setup;
};
std::vector<CommandEntry>& commands();

}  // namespace ignis::cli
