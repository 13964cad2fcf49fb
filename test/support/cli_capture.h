#pragma once
// Runs a subcommand in-process, as the binary's main() would after parsing, with stdout and
// stderr captured: the exit code it set, and what it printed.

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/cli_main.h"

namespace gleaner::testing {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

// `app` has the subcommand registered; `args` start with the subcommand's name.
inline CliRun run_subcommand(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"gleaner"};
  for (const auto& a : args)
    argv.push_back(a.c_str());
  std::ostringstream out;
  std::ostringstream err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  set_exit_code(-1);
  app.parse(static_cast<int>(argv.size()), argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return {exit_code(), out.str(), err.str()};
}

}  // namespace gleaner::testing
