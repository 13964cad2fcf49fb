#pragma once
// Every field of an ack-slo-config accounted for, against Koordinator's schema (v1.8):
// each field the agent enforces loads quietly; a field Koordinator defines that this
// version does not enforce, and a field Koordinator does not define (a typo, an ACK-only
// or newer field), load too but are reported, the unknown ones with the closest known
// name. Pure: the loader feeds it each key's JSON, and the names of the files beside them.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json_fwd.h"

namespace gleaner::agent::config {

enum class FieldStatus {
  kEnforced,     // has its documented effect
  kNotEnforced,  // Koordinator's field, accepted, no effect in this version
};

struct FieldNotice {
  std::string path;     // "clusterStrategy.beClass.memoryQOS.wmarkRatio"
  std::string message;  // for the log and --check-config
};

// The notices for one data key's JSON value (`key` as in kConfigKeys). Paths of list
// elements carry their index ("nodeStrategies[1].policy").
std::vector<FieldNotice> audit_key(std::string_view key, const Json& value);

// A file of the mounted ConfigMap that is not one of the keys the agent reads: one of
// Koordinator's other keys (not enforced), or unknown (with the closest key name).
std::string audit_other_key(std::string_view file_name);

// The status of a field path of a key (indexes removed: "nodeStrategies[].policy");
// nullopt-like: false in `known` when Koordinator does not define it. For tests and docs.
struct FieldLookup {
  bool known = false;
  FieldStatus status = FieldStatus::kEnforced;
};
FieldLookup lookup_field(std::string_view key, std::string_view path);

// Every field Koordinator defines for a strategy of `key`, as Koordinator spells it and
// relative to the strategy ("cpuSuppressThresholdPercent", "lsClass.memoryQOS.wmarkRatio";
// a sub-object audited whole, such as "blkioQOS", without its leaves), with its status.
// For docs/configuration.md and its test.
std::vector<std::pair<std::string, FieldStatus>> koordinator_fields(std::string_view key);

// Levenshtein distance, ASCII case folded (for "did you mean").
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace gleaner::agent::config
