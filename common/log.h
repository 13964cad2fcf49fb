#pragma once
// Logging goes through spdlog; this sets the process-wide level and pattern once.

#include <string_view>

#include "common/result.h"

namespace gleaner {

// level: trace, debug, info, warn, error, off. Unknown names are an error.
Status init_logging(std::string_view level);

}  // namespace gleaner
