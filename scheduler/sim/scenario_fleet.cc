// The scenario's fleet fields: clusters with labels, PriorityClasses, job kinds with roles,
// placement (a PropagationPolicy's cluster affinity) and pod events; and the resolution of
// a job's queue (from its namespace), priority (from its PriorityClass) and allowed
// clusters once the whole document is read.
#include "scheduler/sim/scenario_fleet.h"

#include <algorithm>
#include <set>

#include "common/json_util.h"

namespace gleaner::scheduler::sim {

using namespace fields;  // NOLINT(google-build-using-namespace): the parsers' vocabulary

Status parse_cluster_entry(const Json& c, const std::string& p, Scenario& out) {
  std::string name;
  Labels labels;
  if (c.is_string()) {
    name = c.get<std::string>();
  } else if (c.is_object()) {
    GLEANER_CHECK(only_known(c, p, {"name", "labels"}));
    GLEANER_TRY(n, get_string(c, p, "name", true));
    GLEANER_TRY(l, get_labels(c, p, "labels"));
    name = std::move(n);
    labels = std::move(l);
  } else {
    return invalid_field(p, "expected a name or an object with name and labels");
  }
  if (name.empty()) return invalid_field(p, "expected a non-empty name");
  if (std::find(out.clusters.begin(), out.clusters.end(), name) != out.clusters.end())
    return invalid_field(p, "duplicate cluster " + name);
  out.clusters.push_back(name);
  out.cluster_labels[name] = std::move(labels);
  return ok_status();
}

Status parse_priority_classes(const Json& pc, Scenario& out) {
  if (!pc.is_object()) return invalid_field("priorityClasses", "expected an object of name: value");
  for (const auto& [name, value] : pc.items()) {
    const std::string p = "priorityClasses." + name;
    if (!value.is_number_integer()) return invalid_field(p, "expected an integer");
    auto v = value.get<int64_t>();
    // PriorityClass values: up to one billion for user classes, as the API server allows.
    if (v < -2'147'483'648LL || v > 1'000'000'000) return invalid_field(p, "out of range");
    out.priority_classes[name] = static_cast<int32_t>(v);
  }
  return ok_status();
}

Status parse_roles(const Json& roles, const std::string& p, ScenarioJob& job) {
  if (!roles.is_array() || roles.empty()) return invalid_field(p, "expected a non-empty array");
  for (size_t i = 0; i < roles.size(); ++i) {
    const std::string rp = p + "[" + std::to_string(i) + "]";
    const Json& r = roles[i];
    if (!r.is_object()) return invalid_field(rp, "expected an object");
    GLEANER_TRY(batch, get_resources(r, rp, {"name", "replicas"}));
    GLEANER_TRY(name, get_string(r, rp, "name", true));
    GLEANER_TRY(replicas, get_count(r, rp, "replicas"));
    if (replicas && *replicas > 100000) return invalid_field(rp + ".replicas", "more than 100000");
    for (const RoleSpec& earlier : job.spec.roles) {
      if (earlier.name == name) return invalid_field(rp + ".name", "role " + name + " given twice");
    }
    RoleSpec role;
    role.name = name;
    role.batch = batch;
    role.replicas = static_cast<int>(replicas.value_or(1));
    if (i > 0 && role.replicas > 0 && batch == Resources{})
      return invalid_field(rp, "must request cpu, memory or GPUs");
    job.spec.roles.push_back(std::move(role));
  }
  if (job.spec.roles[0].replicas < 1)
    return invalid_field(p + "[0].replicas", "the first role leads the job: at least 1");
  return ok_status();
}

// A Spark application written with roles: driver (1), then executor. It becomes the
// driver/executor form, which executorLosses and executorRequests index into.
Status spark_from_roles(const std::string& p, ScenarioJob& job) {
  auto& roles = job.spec.roles;
  if (roles[0].name != "driver" || roles[0].replicas != 1)
    return invalid_field(p + "[0]", "a SparkApplication's first role is driver, with 1 replica");
  if (roles.size() > 2 || (roles.size() == 2 && roles[1].name != "executor"))
    return invalid_field(p, "a SparkApplication has roles driver and executor only");
  job.spec.driver = roles[0].batch;
  if (roles.size() == 2) {
    job.spec.executor = roles[1].batch;
    job.spec.executors = roles[1].replicas;
  }
  roles.clear();
  return ok_status();
}

Status parse_placement(const Json& pl, const std::string& p, Placement& out) {
  GLEANER_CHECK(only_known(pl, p, {"clusterNames", "labelSelector", "exclude"}));
  auto names = [&](const char* key, std::optional<std::vector<std::string>>& into) -> Status {
    auto it = pl.find(key);
    if (it == pl.end()) return ok_status();
    const std::string kp = p + "." + key;
    if (!it->is_array()) return invalid_field(kp, "expected an array of cluster names");
    std::vector<std::string> list;
    for (const Json& n : *it) {
      if (!n.is_string() || n.get_ref<const std::string&>().empty())
        return invalid_field(kp, "expected an array of cluster names");
      list.push_back(n.get<std::string>());
    }
    into = std::move(list);
    return ok_status();
  };
  GLEANER_CHECK(names("clusterNames", out.cluster_names));
  std::optional<std::vector<std::string>> exclude;
  GLEANER_CHECK(names("exclude", exclude));
  out.exclude = exclude.value_or(std::vector<std::string>{});
  GLEANER_TRY(labels, get_labels(pl, p, "labelSelector"));
  out.labels = std::move(labels);
  return ok_status();
}

Status parse_events(const Json& events, const std::string& p, ScenarioJob& job) {
  if (!events.is_array()) return invalid_field(p, "expected an array");
  for (size_t i = 0; i < events.size(); ++i) {
    const std::string ep = p + "[" + std::to_string(i) + "]";
    const Json& e = events[i];
    GLEANER_CHECK(only_known(e, ep, {"at", "type", "count"}));
    GLEANER_TRY(at, get_count(e, ep, "at"));
    GLEANER_TRY(type, get_string(e, ep, "type", true));
    GLEANER_TRY(count, get_count(e, ep, "count"));
    if (!at) return invalid_field(ep + ".at", "required");
    JobEvent ev;
    ev.at = *at;
    if (type == "executorDeleted") {
      ev.type = JobEvent::Type::kExecutorDeleted;
    } else if (type == "executorFailed") {
      ev.type = JobEvent::Type::kExecutorFailed;
    } else if (type == "driverFailed") {
      ev.type = JobEvent::Type::kDriverFailed;
      if (count) return invalid_field(ep + ".count", "a driverFailed event has no count");
    } else {
      return invalid_field(ep + ".type",
                           "expected executorDeleted, executorFailed or driverFailed, got " + type);
    }
    if (count && (*count < 1 || *count > 100000))
      return invalid_field(ep + ".count", "expected 1..100000");
    ev.count = static_cast<int>(count.value_or(1));
    job.events.push_back(ev);
  }
  return ok_status();
}

std::vector<std::string> allowed_clusters(const Placement& placement, const Scenario& scenario) {
  std::vector<std::string> out;
  for (const std::string& c : scenario.clusters) {
    const auto& names = placement.cluster_names;
    if (names && std::find(names->begin(), names->end(), c) == names->end()) continue;
    if (std::find(placement.exclude.begin(), placement.exclude.end(), c) != placement.exclude.end())
      continue;
    const Labels& have =
        scenario.cluster_labels.count(c) != 0 ? scenario.cluster_labels.at(c) : Labels{};
    bool labels_match =
        std::all_of(placement.labels.begin(), placement.labels.end(), [&](const auto& kv) {
          auto it = have.find(kv.first);
          return it != have.end() && it->second == kv.second;
        });
    if (labels_match) out.push_back(c);
  }
  return out;
}

Status resolve_job(ScenarioJob& job, const JobExtras& extras, const std::string& p,
                   const Scenario& scenario) {
  if (job.spec.queue.empty() && !job.ns.empty()) {
    auto q = scenario.namespace_queue.find(job.ns);
    if (q != scenario.namespace_queue.end()) job.spec.queue = q->second;
  }
  if (!extras.priority_given && !extras.priority_class.empty()) {
    auto pc = scenario.priority_classes.find(extras.priority_class);
    if (pc == scenario.priority_classes.end()) {
      return invalid_field(
          p + ".priorityClassName",
          "unknown PriorityClass " + extras.priority_class + " (not in priorityClasses)");
    }
    job.spec.priority = pc->second;
  }
  if (extras.placement) job.spec.allowed_clusters = allowed_clusters(*extras.placement, scenario);
  for (const std::string& c : extras.placement&& extras.placement->cluster_names
                                  ? *extras.placement->cluster_names
                                  : std::vector<std::string>{}) {
    if (scenario.cluster_labels.count(c) == 0)
      return invalid_field(p + ".placement.clusterNames", "unknown cluster " + c);
  }
  return ok_status();
}

}  // namespace gleaner::scheduler::sim
