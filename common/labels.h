#pragma once
// Kubernetes labels and the one requirement every selector is made of (a label
// selector's matchExpressions, a node affinity term, a PropagationPolicy's cluster
// labelSelector, ack-slo-config's nodeSelector): key, operator, values.

#include <compare>
#include <map>
#include <set>
#include <string>

namespace gleaner {

using Labels = std::map<std::string, std::string>;

enum class LabelOp { kIn, kNotIn, kExists, kDoesNotExist };

struct LabelRequirement {
  std::string key;
  LabelOp op = LabelOp::kExists;
  std::set<std::string> values;  // In / NotIn

  // As Kubernetes: a label set without `key` matches NotIn and DoesNotExist.
  [[nodiscard]] bool matches(const Labels& labels) const;
  auto operator<=>(const LabelRequirement&) const = default;
};

}  // namespace gleaner
