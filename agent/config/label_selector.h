#pragma once
// The nodeSelector of ack-slo-config node strategies: Kubernetes' label selector, read by
// its one reader (kube::LabelSelector::from_json) with field names matched as Koordinator's
// Go decoder matches them (any case), its error (naming the field) recorded in the config's
// field reader. An empty selector matches every node.

#include <string>

#include "agent/config/field_reader.h"
#include "kube/selectors.h"

namespace gleaner::agent::config {

using LabelSelector = kube::LabelSelector;

// Reads `obj` (a selector object at `path`) into `out`; errors go to `reader`.
void read_label_selector(FieldReader& reader, const Json& obj, const std::string& path,
                         LabelSelector& out);

}  // namespace gleaner::agent::config
