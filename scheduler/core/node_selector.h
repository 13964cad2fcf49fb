#pragma once
// Which nodes a job may use, as Kubernetes expresses it on a pod: `nodeSelector` (every
// pair must be among the node's labels) and required node affinity
// (requiredDuringSchedulingIgnoredDuringExecution: any one of the terms, and within a
// term every expression). Expressions support In, NotIn, Exists and DoesNotExist on node
// labels; Gt/Lt and matchFields are not modelled (the live glue refuses such pods with a
// pending reason rather than placing them wrongly).

#include <compare>
#include <map>
#include <string>
#include <vector>

namespace gleaner::scheduler {

using Labels = std::map<std::string, std::string>;

enum class LabelOp { kIn, kNotIn, kExists, kDoesNotExist };

struct LabelRequirement {
  std::string key;
  LabelOp op = LabelOp::kExists;
  std::vector<std::string> values;  // In / NotIn

  [[nodiscard]] bool matches(const Labels& labels) const;
  auto operator<=>(const LabelRequirement&) const = default;
};

struct NodeSelector {
  Labels labels;
  // Any term matches; an empty list means no affinity. A term with no expressions
  // matches nothing, as in Kubernetes.
  std::vector<std::vector<LabelRequirement>> terms;

  [[nodiscard]] bool empty() const { return labels.empty() && terms.empty(); }
  [[nodiscard]] bool matches(const Labels& node_labels) const;
  // "pool=spark, zone in (a,b)" for pending reasons.
  [[nodiscard]] std::string to_string() const;
  auto operator<=>(const NodeSelector&) const = default;
};

// A selector that holds where both hold (one gang whose pods carry different selectors,
// or a pod's own selector plus the live loop's cluster pin). Two values for one label
// match no node.
NodeSelector merge_selectors(NodeSelector a, const NodeSelector& b);

}  // namespace gleaner::scheduler
