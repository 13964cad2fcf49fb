#pragma once
// YAML documents (kubeconfig files) read into JSON values with libyaml. Scalars stay
// strings unless plain and spelled as JSON literals (true/false/null/numbers), which is
// all a kubeconfig needs; anchors and tags are rejected.

#include <string_view>

#include "common/json_util.h"
#include "common/result.h"

namespace gleaner::kube {

Result<Json> yaml_to_json(std::string_view text, std::string_view where);

}  // namespace gleaner::kube
