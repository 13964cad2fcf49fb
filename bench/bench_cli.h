#pragma once
// Command-line handling shared by the benchmarks (CLI11): number checks with plain
// messages, and the usage exit code 2 that bench/run and shells expect.

#include <charconv>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace gleaner::bench {

// Accepts a decimal number (integer or not) that is above 0, or at least 0.
inline CLI::Validator number_check(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec != std::errc() || ptr != end) return "\"" + text + "\" is not a number";
        if (zero_allowed ? value < 0 : value <= 0) {
          return "\"" + text + "\" must be " + (zero_allowed ? "0 or more" : "above 0");
        }
        return {};
      },
      zero_allowed ? "NUMBER>=0" : "NUMBER>0");
}
inline const CLI::Validator kPositive = number_check(false);
inline const CLI::Validator kNonNegative = number_check(true);

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
