// Apache YuniKorn's gangs (job_adapter.h): workloads written for YuniKorn's gang scheduling
// describe the gang on each pod, needing no object of their own. The application is the
// label yunikorn.apache.org/app-id (or the older applicationId, as a label or an
// annotation), the pod's group the annotation yunikorn.apache.org/task-group-name, and the
// annotation yunikorn.apache.org/task-groups lists the application's groups as JSON, each
// {"name", "minMember", "minResource", ...} (yunikorn-k8shim pkg/common/constants
// CanonicalLabelApplicationID, LabelApplicationID, AnnotationTaskGroupName and
// AnnotationTaskGroups; pkg/cache/amprotocol.go TaskGroup). YuniKorn starts the application
// once every group's minMember is placed: here the application is one gang of peers
// (kMember) whose min-available is the sum of its groups' minMember.
#include <algorithm>

#include "common/json_util.h"
#include "scheduler/kube/job_adapter.h"

namespace gleaner::scheduler::kube_glue {

namespace {

constexpr const char* kAppIdLabel = "yunikorn.apache.org/app-id";
constexpr const char* kLegacyAppIdLabel = "applicationId";
constexpr const char* kTaskGroupNameAnnotation = "yunikorn.apache.org/task-group-name";
constexpr const char* kTaskGroupsAnnotation = "yunikorn.apache.org/task-groups";

std::string app_id(const kube::Pod& pod) {
  for (const char* key : {kAppIdLabel, kLegacyAppIdLabel}) {
    if (std::string id = pod_label(pod, key); !id.empty()) return id;
    if (std::string id = pod_annotation(pod, key); !id.empty()) return id;
  }
  return "";
}

// The sum of the groups' minMember, the pod's own group among them; else why not.
Result<int> gang_minimum(const std::string& text, const std::string& own_group) {
  auto parsed = parse_json(text, kTaskGroupsAnnotation);
  if (!parsed) return parsed.error();
  const Json& groups = *parsed;
  if (!groups.is_array() || groups.empty())
    return invalid_field(kTaskGroupsAnnotation, "expected a list of task groups");
  int sum = 0;
  bool own = false;
  for (size_t i = 0; i < groups.size(); ++i) {
    const Json& g = groups[i];
    const std::string at = std::string(kTaskGroupsAnnotation) + "[" + std::to_string(i) + "]";
    const Json* name = g.is_object() ? find_path(g, "name") : nullptr;
    const Json* min = g.is_object() ? find_path(g, "minMember") : nullptr;
    if (name == nullptr || !name->is_string() || min == nullptr || !min->is_number_integer() ||
        min->get<int64_t>() < 0 || min->get<int64_t>() > 100000) {
      return invalid_field(at, "expected a name and a minMember between 0 and 100000");
    }
    own = own || name->get<std::string>() == own_group;
    sum += static_cast<int>(min->get<int64_t>());
  }
  if (!own) {
    return invalid_field(kTaskGroupsAnnotation, "no task group named " + own_group);
  }
  return sum;
}

bool recognise_task_group_member(const kube::Pod& pod, const JobOwners&, gang::PodView& v) {
  const std::string app = app_id(pod);
  const std::string group = pod_annotation(pod, kTaskGroupNameAnnotation);
  if (app.empty() || group.empty()) return false;
  v.role = gang::PodRole::kMember;
  v.gang = gang::gang_name(kYuniKornKind, app);  // apart from other kinds' of one name
  auto min = gang_minimum(pod_annotation(pod, kTaskGroupsAnnotation), group);
  v.min_available = min ? std::max(1, *min) : 1;
  // Refused like a selector it cannot honour: an Event names the annotation, and the
  // gang waits (never placed in part) until the pod is fixed.
  if (!min) v.selector_error = "pod " + v.ns + "/" + v.name + ": " + min.error().message;
  return true;
}

}  // namespace

const JobKindAdapter& yunikorn_adapter() {
  static const FixedLeadAdapter adapter("yunikorn", recognise_task_group_member,
                                        /*leads=*/false);
  return adapter;
}

}  // namespace gleaner::scheduler::kube_glue
