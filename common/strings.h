#pragma once
// Small string helpers shared by the parsers of kernel files, resctrl schemata and
// Kubernetes selectors.

#include <string>
#include <string_view>

namespace gleaner {

// `text` without leading and trailing whitespace (space, tab, CR, LF, VT, FF).
std::string_view trim(std::string_view text);

// `parent` + `separator` + `child`, or `child` alone under an empty parent: a cgroup path
// below the root ("" + "kubepods"), a config key below the top level.
std::string join_below(std::string_view parent, std::string_view separator, std::string_view child);

}  // namespace gleaner
