#include "common/labels.h"

#include <algorithm>

namespace gleaner {

bool LabelRequirement::matches(const Labels& labels) const {
  auto it = labels.find(key);
  const bool present = it != labels.end();
  switch (op) {
    case LabelOp::kIn:
      return present && values.contains(it->second);
    case LabelOp::kNotIn:
      return !present || !values.contains(it->second);
    case LabelOp::kExists:
      return present;
    case LabelOp::kDoesNotExist:
      return !present;
  }
  return false;
}

std::string LabelRequirement::to_string() const {
  switch (op) {
    case LabelOp::kExists:
      return key;
    case LabelOp::kDoesNotExist:
      return "!" + key;
    case LabelOp::kIn:
    case LabelOp::kNotIn:
      break;
  }
  if (values.size() == 1) return key + (op == LabelOp::kIn ? "=" : "!=") + *values.begin();
  std::string out = key + (op == LabelOp::kIn ? " in (" : " notin (");
  bool first = true;
  for (const auto& v : values) {
    out += (first ? "" : ",") + v;
    first = false;
  }
  return out + ")";
}

bool terms_match(const std::vector<std::vector<LabelRequirement>>& terms, const Labels& labels) {
  return std::any_of(terms.begin(), terms.end(), [&](const std::vector<LabelRequirement>& term) {
    return !term.empty() && std::all_of(term.begin(), term.end(), [&](const LabelRequirement& r) {
      return r.matches(labels);
    });
  });
}

}  // namespace gleaner
