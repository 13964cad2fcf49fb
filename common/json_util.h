#pragma once
// JSON helpers shared by config, kube objects, snapshots, reports and scenarios.

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/quantity.h"
#include "common/result.h"

namespace gleaner {

using Json = nlohmann::json;

// Parses text; the error names `where` (a file name, an URL) and the byte offset.
Result<Json> parse_json(std::string_view text, std::string_view where);
// A quantity given as a JSON string ("500m") or number (4, 0.5).
Result<Quantity> quantity_from_json(const Json& value, std::string_view where);
// Follows a "/"-separated path of object keys; nullptr when any step is missing.
const Json* find_path(const Json& root, std::string_view dotted_path);
// Serialises for the wire: strings that are not valid UTF-8 (a message quoting what a
// client sent) get U+FFFD in place of the bad bytes instead of throwing.
std::string dump_json(const Json& value, int indent = -1);
// The string at `path` (as find_path), or `fallback` when it is missing or not a string.
// Unlike Json::value, never throws on an object of the wrong shape.
std::string string_at(const Json& root, std::string_view path, std::string fallback = "");
// The object a typed object keeps (its raw JSON, shared), or an empty object when it was
// built in code and keeps none; never a non-object.
const Json& object_or_empty(const std::shared_ptr<const Json>& kept);

}  // namespace gleaner
