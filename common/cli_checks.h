#pragma once
// CLI11 checks on flags with plain messages, shared by the binaries: numbers, and the log
// level and format names. For numbers: CLI::PositiveNumber and
// CLI::NonNegativeNumber print the double range's limits ("not in range 0.000000 to
// 179769313486231570814527...") where a user wants "must be above 0". A refused value
// fails the parse, so the binary exits 2 naming the flag ("--tick-ms: "0" must be above 0").

#include <charconv>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace gleaner {

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

// The names common/log's init_logging accepts, so that a wrong one fails the parse naming
// the flag ("--log-level: loud not in {trace,debug,...}") instead of at start-up.
inline const CLI::Validator kLogLevel = CLI::IsMember(
    std::vector<std::string>{"trace", "debug", "info", "warn", "error", "critical", "off"});
inline const CLI::Validator kLogFormat = CLI::IsMember(std::vector<std::string>{"text", "json"});

}  // namespace gleaner
