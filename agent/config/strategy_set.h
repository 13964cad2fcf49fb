#pragma once
// The shape shared by the ack-slo-config keys: a cluster strategy plus an ordered list
// of node strategies, each with a nodeSelector. A node strategy holds only the fields it
// overrides; it is resolved at parse time by reading it over the resolved cluster
// strategy (which was itself read over the built-in defaults), so lookup is a first-match
// scan and every entry can be validated as a whole when the key is loaded. Reading one is
// strategy_set_reader.h's (the config parsers'), so the strategies' users parse no JSON.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kube/objects.h"
#include "kube/selectors.h"

namespace gleaner::agent::config {

template <typename S>
struct NodeStrategy {
  std::string name;
  // Kubernetes semantics: a missing nodeSelector matches no node, an empty one every node.
  bool has_selector = false;
  kube::LabelSelector selector;
  S strategy;
};

template <typename S>
struct StrategySet {
  S cluster;
  std::vector<NodeStrategy<S>> nodes;
  // Entries taken differently from how they were written (an invalid node strategy run
  // with the cluster strategy), each naming the file and the field.
  std::vector<std::string> warnings;

  // Index of the first node strategy whose selector matches, nullopt when none does.
  [[nodiscard]] std::optional<size_t> match(const kube::StringMap& labels) const {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].has_selector && nodes[i].selector.matches(labels)) return i;
    }
    return std::nullopt;
  }
  // The first matching node strategy, else the cluster strategy.
  [[nodiscard]] const S& for_node(const kube::StringMap& labels) const {
    auto i = match(labels);
    return i ? nodes[*i].strategy : cluster;
  }
};

}  // namespace gleaner::agent::config
