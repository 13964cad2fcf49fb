#include "common/log.h"

#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace gleaner {

Status init_logging(std::string_view level) {
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
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ %v");
  return ok_status();
}

}  // namespace gleaner
