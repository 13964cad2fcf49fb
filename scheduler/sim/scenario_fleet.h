#pragma once
// The scenario's fleet fields (clusters with labels, PriorityClasses, job kinds with roles,
// placement, pod events) and the resolution of what a job's namespace, PriorityClass and
// placement mean once the whole document is read. Internal to scheduler/sim.

#include <optional>
#include <string>
#include <vector>

#include "scheduler/sim/scenario.h"
#include "scheduler/sim/scenario_fields.h"

namespace gleaner::scheduler::sim {

// A PropagationPolicy's cluster affinity as a scenario writes it: every part given must hold.
struct Placement {
  std::optional<std::vector<std::string>> cluster_names;
  Labels labels;  // matchLabels on the cluster's labels
  std::vector<std::string> exclude;
};

// What a job names that only the whole document can resolve.
struct JobExtras {
  bool priority_given = false;
  std::string priority_class;
  std::optional<Placement> placement;
};

// clusters[i]: a name, or {name, labels}.
Status parse_cluster_entry(const Json& c, const std::string& p, Scenario& out);
Status parse_priority_classes(const Json& pc, Scenario& out);
// jobs[i].roles into job.spec.roles (leader's role first).
Status parse_roles(const Json& roles, const std::string& p, ScenarioJob& job);
// A SparkApplication given as roles: back to its driver/executor form.
Status spark_from_roles(const std::string& p, ScenarioJob& job);
Status parse_placement(const Json& pl, const std::string& p, Placement& out);
Status parse_events(const Json& events, const std::string& p, ScenarioJob& job);
// The clusters `placement` allows, in the scenario's order.
std::vector<std::string> allowed_clusters(const Placement& placement, const Scenario& scenario);
// Queue from the namespace, priority from the PriorityClass, allowed clusters from the
// placement; errors name jobs[i]'s field.
Status resolve_job(ScenarioJob& job, const JobExtras& extras, const std::string& p,
                   const Scenario& scenario);

}  // namespace gleaner::scheduler::sim
