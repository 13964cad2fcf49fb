#include "common/labels.h"

#include <algorithm>
#include <charconv>

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
    case LabelOp::kGt:
    case LabelOp::kLt: {
      if (!present || values.size() != 1) return false;
      auto have = label_integer(it->second);
      auto bound = label_integer(*values.begin());
      if (!have || !bound) return false;
      return op == LabelOp::kGt ? *have > *bound : *have < *bound;
    }
  }
  return false;
}

std::optional<int64_t> label_integer(std::string_view text) {
  // from_chars takes a leading '-' but not '+'; ParseInt takes either, once ("+-1" fails).
  if (text.starts_with('+')) {
    text.remove_prefix(1);
    if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;
  }
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string LabelRequirement::to_string() const {
  switch (op) {
    case LabelOp::kExists:
      return key;
    case LabelOp::kDoesNotExist:
      return "!" + key;
    case LabelOp::kGt:
    case LabelOp::kLt:
      return key + (op == LabelOp::kGt ? ">" : "<") + (values.empty() ? "" : *values.begin());
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
