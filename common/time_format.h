#pragma once
// RFC 3339 timestamps in UTC, as the Kubernetes API writes them: metav1.Time with whole
// seconds ("2023-11-14T22:13:20Z") and metav1.MicroTime with microseconds
// ("2023-11-14T22:13:20.123456Z"). The one place the programs write either.

#include <string>

#include "common/clock.h"

namespace gleaner {

std::string rfc3339(WallTime t);
std::string rfc3339_micro(WallTime t);

}  // namespace gleaner
