#pragma once
// YAML documents (kubeconfig files, manifests) read into JSON values with libyaml. Scalars stay
// strings unless plain and spelled as JSON literals (true/false/null/numbers), which is
// all a kubeconfig needs; anchors and tags are rejected.

#include <string_view>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"

namespace gleaner::kube {

// The first document (null for an empty text).
Result<Json> yaml_to_json(std::string_view text, std::string_view where);
// Every document of a stream ("---" separated); an empty document is null.
Result<std::vector<Json>> yaml_documents_to_json(std::string_view text, std::string_view where);

}  // namespace gleaner::kube
