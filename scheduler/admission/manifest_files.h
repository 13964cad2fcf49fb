#pragma once
// Kubernetes objects read from files an operator has at hand: `kubectl get -o json` or
// `-o yaml` output, manifests with several "---" documents, List objects, or a directory
// of such files (*.yaml, *.yml, *.json, in name order).

#include <string>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"

namespace gleaner::scheduler::admission {

// Every object in the file or directory, Lists expanded into their items; errors name
// the file (and line, for YAML).
Result<std::vector<Json>> read_objects(const std::string& path);

}  // namespace gleaner::scheduler::admission
