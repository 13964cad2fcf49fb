#include "common/time_format.h"

#include <chrono>

#include <fmt/chrono.h>

namespace gleaner {
namespace {

// fmt formats a time_point in local time (fmt 9); the API's times are UTC, so the
// calendar fields come from fmt::gmtime. Times before the epoch round down, as Go's do.
std::string seconds_part(WallTime t) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(t);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}",
                     fmt::gmtime(std::chrono::system_clock::to_time_t(secs)));
}

}  // namespace

std::string rfc3339(WallTime t) {
  return seconds_part(t) + "Z";
}

std::string rfc3339_micro(WallTime t) {
  const auto since = t - std::chrono::floor<std::chrono::seconds>(t);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(since).count();
  return seconds_part(t) + fmt::format(".{:06}Z", us);
}

}  // namespace gleaner
