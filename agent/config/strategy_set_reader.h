#pragma once
// Reads a StrategySet from an ack-slo-config key (the config parsers' side of
// strategy_set.h): the cluster strategy over the defaults, then each node strategy over it.

#include <string>
#include <utility>

#include "agent/config/field_reader.h"
#include "agent/config/label_selector.h"
#include "agent/config/strategy_set.h"
#include "common/json_util.h"

namespace gleaner::agent::config {

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
