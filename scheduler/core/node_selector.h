#pragma once
// Which nodes a job may use, as Kubernetes expresses it on a pod: `nodeSelector` (every
// pair must be among the node's labels) and required node affinity
// (requiredDuringSchedulingIgnoredDuringExecution: any one of the terms, and within a
// term every expression). Expressions support In, NotIn, Exists, DoesNotExist, Gt and Lt on
// node labels (common/labels.h); matchFields is not modelled (the live glue refuses such
// pods with a pending reason rather than placing them wrongly).

#include <compare>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/labels.h"
#include "common/taints.h"

namespace gleaner::scheduler {

// Whether pods with these toleration lists (one per pod of a gang; every pod must
// tolerate) may be placed on a node with `taints`. PreferNoSchedule never blocks.
bool taints_tolerated(const Taints& taints, const std::vector<std::vector<Toleration>>& pods);

struct NodeSelector {
  Labels labels;
  // Any term matches; an empty list means no affinity. A term with no expressions
  // matches nothing, as in Kubernetes.
  std::vector<std::vector<LabelRequirement>> terms;
  // One list per pod the selector speaks for (a gang's pods each bring theirs): a
  // NoSchedule or NoExecute taint blocks a node unless every list tolerates it. No list at
  // all tolerates nothing.
  std::vector<std::vector<Toleration>> tolerations;

  // No label requirement (tolerations aside: taints are checked with or without one).
  [[nodiscard]] bool empty() const { return labels.empty() && terms.empty(); }
  [[nodiscard]] bool matches(const Labels& node_labels) const;
  [[nodiscard]] bool admits(const Labels& node_labels, const Taints& taints) const {
    return matches(node_labels) && taints_tolerated(taints, tolerations);
  }
  // "pool=spark, zone in (a,b)" for pending reasons.
  [[nodiscard]] std::string to_string() const;
  auto operator<=>(const NodeSelector&) const = default;
};

// A selector that holds where both hold (one gang whose pods carry different selectors,
// or a pod's own selector plus the live loop's cluster pin). Two values for one label
// match no node.
NodeSelector merge_selectors(NodeSelector a, const NodeSelector& b);

}  // namespace gleaner::scheduler
