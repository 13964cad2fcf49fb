#pragma once
// The shape shared by the ack-slo-config keys: a cluster strategy plus an ordered list
// of node strategies, each with a nodeSelector. A node strategy holds only the fields it
// overrides; it is resolved at parse time by reading it over the resolved cluster
// strategy (which was itself read over the built-in defaults), so lookup is a first-match
// scan and every entry can be validated as a whole when the key is loaded.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/config/field_reader.h"
#include "agent/config/label_selector.h"
#include "common/json_util.h"
#include "kube/objects.h"

namespace gleaner::agent::config {

template <typename S>
struct NodeStrategy {
  std::string name;
  // Kubernetes semantics: a missing nodeSelector matches no node, an empty one every node.
  bool has_selector = false;
  LabelSelector selector;
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

// What an invalid node strategy does to its key: rejects the whole key (kept at its last
// good version), or, as slo-controller treats colocation-config's nodeConfigs, leaves the
// nodes it selects on the cluster strategy (a warning; the rest of the key applies).
enum class InvalidNodeStrategy { kRejectKey, kUseCluster };

// Parses `cluster_obj` over `defaults`, then each element of `nodes_key` in `root` over
// the cluster strategy. `read(reader, obj, path, strategy&)` reads the fields;
// `check(reader, path, const strategy&)` checks cross-field rules on a resolved value.
template <typename S, typename Read, typename Check>
StrategySet<S> read_strategy_set(FieldReader& reader, const Json& root, const Json* cluster_obj,
                                 const std::string& cluster_path, const char* nodes_key,
                                 const S& defaults, Read read, Check check,
                                 InvalidNodeStrategy invalid = InvalidNodeStrategy::kRejectKey) {
  StrategySet<S> set;
  set.cluster = defaults;
  if (cluster_obj != nullptr) read(reader, *cluster_obj, cluster_path, set.cluster);
  check(reader, cluster_path.empty() ? std::string("(cluster)") : cluster_path, set.cluster);
  const Json* nodes = reader.array(root, "", nodes_key);
  if (nodes == nullptr || reader.failed()) return set;
  for (size_t i = 0; i < nodes->size(); ++i) {
    const std::string at = FieldReader::index(nodes_key, i);
    const Json& n = (*nodes)[i];
    if (!n.is_object()) {
      reader.fail(at, std::string("expected an object, got ") + n.type_name(), ErrorCode::kParse);
      return set;
    }
    NodeStrategy<S> entry;
    entry.strategy = set.cluster;
    reader.read_string(n, at, "name", entry.name);
    if (const Json* sel = reader.object(n, at, "nodeSelector")) {
      entry.has_selector = true;
      read_label_selector(reader, *sel, FieldReader::join(at, "nodeSelector"), entry.selector);
    }
    if (reader.failed()) return set;  // the selector: which nodes would it even select?
    if (invalid == InvalidNodeStrategy::kUseCluster) {
      FieldReader own(reader.file());
      read(own, n, at, entry.strategy);
      check(own, at, entry.strategy);
      if (own.failed()) {
        entry.strategy = set.cluster;
        set.warnings.push_back(own.error().message +
                               "; the nodes it selects use the cluster "
                               "strategy");
      }
    } else {
      read(reader, n, at, entry.strategy);
      check(reader, at, entry.strategy);
      if (reader.failed()) return set;
    }
    set.nodes.push_back(std::move(entry));
  }
  return set;
}

}  // namespace gleaner::agent::config
