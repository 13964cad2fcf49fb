#pragma once
// Karmada's ResourceBinding (work.karmada.io/v1alpha2) as a scheduler sees it: Karmada's
// detector creates one per resource template a PropagationPolicy governs, copying the
// policy's schedulerName and placement into it; the scheduler named there writes
// spec.clusters, and Karmada's binding and execution controllers propagate the template to
// those members. Pure: the hub link reads and writes the objects.

#include <optional>
#include <string>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"

namespace gleaner::scheduler::fleet {

struct ResourceBinding {
  std::string ns;
  std::string name;
  std::string resource_version;
  int64_t generation = 0;
  // spec.resource: the template it binds.
  std::string resource_api_version;
  std::string resource_kind;
  std::string resource_name;
  std::string resource_uid;
  std::string scheduler_name;         // spec.schedulerName
  int32_t replicas = 0;               // spec.replicas (0: the template declares none)
  std::vector<std::string> clusters;  // spec.clusters[].name
  // status.schedulerObservedGeneration: the generation the last schedule written answers (0:
  // none, or not a number, which the next schedule writes over).
  int64_t observed_generation = 0;
};

// Errors (kInvalidArgument) name the object and the field.
Result<ResourceBinding> parse_resource_binding(const Json& object);

// Among `bindings` (a namespace's ResourceBindings), the one binding the template `kind`/`name`
// with `uid` (Karmada names bindings differently across releases, so the reference decides;
// a binding of an older object of that name, another uid, is not it). Malformed items are
// skipped.
std::optional<ResourceBinding> binding_of(const std::vector<Json>& bindings,
                                          const std::string& kind, const std::string& name,
                                          const std::string& uid);

// The merge patch that schedules `binding` into `target` ("" = nowhere: Karmada then
// withdraws the template from the members it was in), conditional on the version read.
Json schedule_patch(const ResourceBinding& binding, const std::string& target);
// The status patch Karmada's scheduler writes with it: condition Scheduled, and the
// generation observed.
Json scheduled_status_patch(const ResourceBinding& binding, const std::string& target,
                            const std::string& now_rfc3339);

}  // namespace gleaner::scheduler::fleet
