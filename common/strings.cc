#include "common/strings.h"

namespace gleaner {

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  const size_t start = text.find_first_not_of(kSpace);
  if (start == std::string_view::npos) return {};
  return text.substr(start, text.find_last_not_of(kSpace) - start + 1);
}

std::string join_below(std::string_view parent, std::string_view separator,
                       std::string_view child) {
  std::string out;
  if (parent.empty()) return out.assign(child);
  out.reserve(parent.size() + separator.size() + child.size());
  return out.append(parent).append(separator).append(child);
}

}  // namespace gleaner
