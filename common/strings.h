#pragma once
// Small string helpers shared by the parsers of kernel files, resctrl schemata and
// Kubernetes selectors.

#include <string_view>

namespace gleaner {

// `text` without leading and trailing whitespace (space, tab, CR, LF, VT, FF).
std::string_view trim(std::string_view text);

}  // namespace gleaner
