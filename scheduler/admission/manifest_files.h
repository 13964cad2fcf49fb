#pragma once
// Kubernetes objects read from files an operator has at hand: `kubectl get -o json` or
// `-o yaml` output, manifests with several "---" documents, List objects, or a directory
// of such files (*.yaml, *.yml, *.json, in name order).

#include <string>
#include <vector>

#include "common/json_util.h"
#include "common/result.h"

namespace gleaner::scheduler::admission {

// One object of a manifest and where it came from, for messages about it: "FILE document
// N" (1-based, counting empty documents too, as an editor shows them), "FILE document N
// item M" for a List's items.
struct ManifestObject {
  Json object;
  std::string where;
};

// Every object in the file or directory, Lists expanded into their items; errors name
// the file (and line, for YAML).
Result<std::vector<ManifestObject>> read_manifest_objects(const std::string& path);
// The same objects without their origin.
Result<std::vector<Json>> read_objects(const std::string& path);

}  // namespace gleaner::scheduler::admission
