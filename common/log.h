#pragma once
// Logging goes through spdlog; this sets the process-wide level and pattern once.

#include <string_view>

#include "common/result.h"

namespace gleaner {

// level: trace, debug, info, warn, error, off. format: "text" (time, level letter,
// message) or "json" (one object per line: time, level, msg, for log collectors).
// Unknown names are an error.
Status init_logging(std::string_view level, std::string_view format = "text");

}  // namespace gleaner
