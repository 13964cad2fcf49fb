#pragma once
// Kubernetes label selectors (matchLabels + matchExpressions) for the nodeSelector of
// ack-slo-config node strategies. An empty selector matches every node.

#include <map>
#include <string>
#include <vector>

#include "agent/config/field_reader.h"
#include "kube/objects.h"

namespace gleaner::agent::config {

struct LabelRequirement {
  enum class Op { kIn, kNotIn, kExists, kDoesNotExist };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;
};

struct LabelSelector {
  std::map<std::string, std::string> match_labels;
  std::vector<LabelRequirement> match_expressions;

  [[nodiscard]] bool matches(const kube::StringMap& labels) const;
};

// Reads `obj` (a selector object at `path`) into `out`; errors go to `reader`.
void read_label_selector(FieldReader& reader, const Json& obj, const std::string& path,
                         LabelSelector& out);

}  // namespace gleaner::agent::config
