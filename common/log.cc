#include "common/log.h"

#include <memory>
#include <string>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace gleaner {

namespace {

// %j: the message as the inside of a JSON string (quotes, backslashes and control
// characters escaped; bytes that are not UTF-8 as \u00XX of their value, so every line
// stays valid JSON).
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*tm*/,
              spdlog::memory_buf_t& dest) override {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto* p = reinterpret_cast<const unsigned char*>(msg.payload.data());
    const auto* end = p + msg.payload.size();
    for (; p < end; ++p) {
      const unsigned char c = *p;
      if (c == '"' || c == '\\') {
        dest.push_back('\\');
        dest.push_back(static_cast<char>(c));
      } else if (c < 0x20 || c >= 0x80) {
        // Control characters, and every byte above 0x7f as its value: valid JSON whatever
        // the bytes (UTF-8 text shows as its bytes).
        const char esc[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        dest.append(esc, esc + sizeof(esc));
      } else {
        dest.push_back(static_cast<char>(c));
      }
    }
  }
  [[nodiscard]] std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

}  // namespace

Status init_logging(std::string_view level, std::string_view format) {
  if (format != "text" && format != "json") {
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown log format \"" + std::string(format) + "\" (expected text or json)");
  }
  auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") {
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown log level \"" + std::string(level) +
                          "\" (expected trace, debug, info, warn, error, off)");
  }
  // Logs go to stderr so that subcommands such as `calc` keep stdout for their JSON.
  auto logger = spdlog::get("gleaner");
  if (!logger) logger = spdlog::stderr_color_mt("gleaner");
  spdlog::set_default_logger(logger);
  spdlog::set_level(parsed);
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<JsonMessageFlag>('j').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","msg":"%j"})");
    spdlog::set_formatter(std::move(formatter));
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ %v");
  }
  return ok_status();
}

}  // namespace gleaner
