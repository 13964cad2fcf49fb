#pragma once
// ClusterColocationProfile (config.koordinator.sh/v1alpha1, Koordinator's schema): which
// pods the colocation webhook turns into batch pods, and what it sets on them. The
// fields Gleaner honours are below; any other spec field is named in `warnings` (the
// profile still applies, without it) so an operator moving from Koordinator sees what
// is not carried over.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"
#include "kube/selectors.h"
#include "kube/well_known.h"
#include "scheduler/admission/manifest_files.h"

namespace gleaner::scheduler::admission {

// Where the container resources a pod asked for before conversion are kept (Koordinator's
// key and JSON shape), so koordlet-style tooling and operators can see them.
inline constexpr const char* kExtendedResourceSpecAnnotation =
    "node.koordinator.sh/extended-resource-spec";

struct ColocationProfile {
  std::string name;
  kube::LabelSelector namespace_selector;  // empty: every namespace
  kube::LabelSelector selector;            // empty: every pod
  std::string qos_class;                   // "" = leave as is
  std::string priority_class_name;
  std::optional<int32_t> koordinator_priority;
  std::string scheduler_name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> warnings;  // spec fields present but not honoured
};

// One ClusterColocationProfile object (JSON, as the API serves it). Errors name the
// profile and the field.
Result<ColocationProfile> parse_colocation_profile(const Json& object);

struct ProfileSet {
  std::vector<ColocationProfile> profiles;
  // One line per object skipped because it is of another kind (Koordinator's example file
  // holds the Namespace its profile selects), naming where it is and what it is.
  std::vector<std::string> skipped;
};

// Every ClusterColocationProfile among a manifest's objects (manifest_files.h); an object
// without a kind counts as one, an object of another kind is skipped and named in
// `skipped`. Errors name the object's place (file, document index) and the profile. One
// bad profile fails the whole set: a half-loaded set would colocate some pods and not
// others.
Result<ProfileSet> parse_colocation_profiles(const std::vector<ManifestObject>& objects);

}  // namespace gleaner::scheduler::admission
