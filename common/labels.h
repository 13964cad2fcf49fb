#pragma once
// Kubernetes labels and the one requirement every selector is made of (a label
// selector's matchExpressions, a node affinity term, a PropagationPolicy's cluster
// labelSelector, ack-slo-config's nodeSelector): key, operator, values.

#include <compare>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace gleaner {

using Labels = std::map<std::string, std::string>;

enum class LabelOp { kIn, kNotIn, kExists, kDoesNotExist };

struct LabelRequirement {
  std::string key;
  LabelOp op = LabelOp::kExists;
  std::set<std::string> values;  // In / NotIn

  // As Kubernetes: a label set without `key` matches NotIn and DoesNotExist.
  [[nodiscard]] bool matches(const Labels& labels) const;
  // The selector-string form every reader accepts: "k", "!k", "k=v", "k!=v",
  // "k in (a,b)", "k notin (a,b)" (values in order).
  [[nodiscard]] std::string to_string() const;
  auto operator<=>(const LabelRequirement&) const = default;
};

// A node affinity's nodeSelectorTerms, one list of requirements a term: any term whose every
// requirement holds. An empty term matches nothing, as Kubernetes defines NodeSelectorTerm
// ("a null or empty node selector term matches no objects").
bool terms_match(const std::vector<std::vector<LabelRequirement>>& terms, const Labels& labels);

}  // namespace gleaner
