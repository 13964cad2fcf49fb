#pragma once
// A field of a JSON object found by name as a decoder finds it: the exact name only (the
// Kubernetes API server's decoder), or in any case (Go's encoding/json, with which
// Koordinator's components decode ack-slo-config), the exact spelling first.

#include <string_view>

#include "common/json_fwd.h"

namespace gleaner {

enum class FieldNames { kExact, kAnyCase };

// The field `key` of `obj`; nullptr when `obj` is not an object or the field is absent or
// null (a decoder reads null as absent).
const Json* find_field(const Json& obj, std::string_view key, FieldNames names);

}  // namespace gleaner
