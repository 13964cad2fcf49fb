#pragma once
// Command-line handling shared by the benchmarks (CLI11): number checks with plain
// messages (common/cli_checks.h), and the usage exit code 2 that bench/run and shells expect.

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "common/cli_checks.h"

namespace gleaner::bench {

// The number checks of every binary (common/cli_checks.h), under the names the
// benchmarks use.
using gleaner::kNonNegative;
using gleaner::kPositive;
using gleaner::number_check;

// A numeric option (or positional) above 0 / at least 0 whose default shows in --help.
template <typename T>
CLI::Option* positive_option(CLI::App& app, const std::string& name, T& value,
                             const std::string& help) {
  return app.add_option(name, value, help)->check(kPositive)->capture_default_str();
}
template <typename T>
CLI::Option* non_negative_option(CLI::App& app, const std::string& name, T& value,
                                 const std::string& help) {
  return app.add_option(name, value, help)->check(kNonNegative)->capture_default_str();
}

// Parses the command line. Returns the exit code when the program should stop: 0 after
// --help, 2 after a usage error (the message names the option); nullopt to go on.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
}

// "prefix" followed by n: names of generated nodes and jobs. Appending avoids g++ 12's
// false -Wrestrict on `"literal" + std::to_string(n)`.
inline std::string numbered(const char* prefix, int64_t n) {
  std::string out(prefix);
  out += std::to_string(n);
  return out;
}

}  // namespace gleaner::bench
