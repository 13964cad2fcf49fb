#include "scheduler/sim/scenario.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <set>

#include "common/json_util.h"
#include "scheduler/gang/gang_scheduler.h"
#include "scheduler/gang/training_kinds.h"
#include "scheduler/kube/job_adapter.h"
#include "scheduler/sim/scenario_fleet.h"

namespace gleaner::scheduler::sim {
namespace {

using namespace fields;  // NOLINT(google-build-using-namespace): the parsers' vocabulary

Result<ScenarioNode> parse_node(const Json& n, const std::string& p,
                                const std::set<std::string>& clusters, bool declared) {
  GLEANER_CHECK(
      only_known(n, p, {"name", "cluster", "labels", "batch", "changes", "startDelaySeconds"}));
  ScenarioNode node;
  GLEANER_TRY(name, get_string(n, p, "name", true));
  GLEANER_TRY(cluster, get_string(n, p, "cluster", false));
  if (cluster.empty()) cluster = "default";
  if (clusters.count(cluster) == 0) {
    return invalid_field(p + ".cluster",
                         "unknown cluster " + cluster + (declared ? " (not in clusters)" : ""));
  }
  GLEANER_TRY(labels, get_labels(n, p, "labels"));
  if (!n.contains("batch")) return invalid_field(p + ".batch", "required");
  GLEANER_TRY(batch, get_resources(n["batch"], p + ".batch"));
  GLEANER_TRY(delay, get_count(n, p, "startDelaySeconds"));
  node.info = NodeInfo{name, cluster, labels, batch};
  node.start_delay_seconds = delay.value_or(0);
  if (auto it = n.find("changes"); it != n.end()) {
    if (!it->is_array()) return invalid_field(p + ".changes", "expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string cp = p + ".changes[" + std::to_string(i) + "]";
      const Json& c = (*it)[i];
      GLEANER_CHECK(only_known(c, cp, {"at", "batch", "evict"}));
      GLEANER_TRY(at, get_count(c, cp, "at"));
      if (!at) return invalid_field(cp + ".at", "required");
      if (!c.contains("batch")) return invalid_field(cp + ".batch", "required");
      GLEANER_TRY(b, get_resources(c["batch"], cp + ".batch"));
      int64_t evict = 0;
      if (auto e = c.find("evict"); e != c.end()) {
        GLEANER_TRY(freed, get_resources(*e, cp + ".evict"));
        if (freed.memory_bytes <= 0 || freed.cpu_milli != 0 || freed.gpus != 0)
          return invalid_field(cp + ".evict", "expected a memory amount only");
        evict = freed.memory_bytes;
      }
      node.changes.push_back(NodeChange{*at, b, evict});
    }
    std::stable_sort(node.changes.begin(), node.changes.end(),
                     [](const NodeChange& a, const NodeChange& b) { return a.at < b.at; });
  }
  return node;
}

Result<QueueSpec> parse_queue(const Json& q, const std::string& p, Scenario& out) {
  GLEANER_CHECK(only_known(q, p, {"name", "parent", "min", "max", "queueing", "namespaces"}));
  QueueSpec spec;
  GLEANER_TRY(name, get_string(q, p, "name", true));
  GLEANER_TRY(parent, get_string(q, p, "parent", false));
  spec.name = name;
  spec.parent = parent.empty() ? "root" : parent;
  if (q.contains("min")) {
    GLEANER_TRY(min, get_resources(q["min"], p + ".min"));
    spec.min = min;
  }
  if (q.contains("max")) {
    GLEANER_TRY(max, get_resources(q["max"], p + ".max", {}, kGpusUnlimited));
    spec.max = max;
  }
  GLEANER_TRY(queueing, get_string(q, p, "queueing", false));
  if (queueing == "blocking") spec.queueing = QueueingPolicy::kBlocking;
  if (queueing == "nonblocking") spec.queueing = QueueingPolicy::kNonBlocking;
  if (!queueing.empty() && !spec.queueing) {
    return invalid_field(p + ".queueing", "expected blocking or nonblocking, got " + queueing);
  }
  if (auto ns = q.find("namespaces"); ns != q.end()) {
    if (!ns->is_array()) return invalid_field(p + ".namespaces", "expected an array of names");
    for (const Json& n : *ns) {
      if (!n.is_string() || n.get_ref<const std::string&>().empty()) {
        return invalid_field(p + ".namespaces", "expected an array of names");
      }
      auto [it, fresh] = out.namespace_queue.emplace(n.get<std::string>(), name);
      if (!fresh) {
        return invalid_field(p + ".namespaces",
                             "namespace " + it->first + " is already in queue " + it->second);
      }
    }
  }
  return spec;
}

Result<ScenarioJob> parse_job(const Json& j, const std::string& p, JobExtras& extras) {
  GLEANER_CHECK(
      only_known(j, p,
                 {"name", "queue", "priority", "submitAt", "durationSeconds", "driver", "executor",
                  "nodeSelector", "executorLosses", "executorRequests", "kind", "namespace",
                  "priorityClassName", "placement", "roles", "events"}));
  ScenarioJob job;
  GLEANER_TRY(kind, get_string(j, p, "kind", false));
  if (kind.empty()) kind = "SparkApplication";
  // YuniKorn: an application of task groups (its roles, each of `replicas` minMember).
  if (kind != gang::kSparkKind && kind != kube_glue::kYuniKornKind &&
      gang::find_training_kind(kind) == nullptr) {
    return invalid_field(p + ".kind", std::string("expected ") + gang::kSparkKind + ", " +
                                          kube_glue::kYuniKornKind + ", " +
                                          gang::training_kind_names() + ", got " + kind);
  }
  job.spec.kind = kind;
  GLEANER_TRY(ns, get_string(j, p, "namespace", false));
  job.ns = ns;
  GLEANER_TRY(priority_class, get_string(j, p, "priorityClassName", false));
  extras.priority_class = priority_class;
  extras.priority_given = j.contains("priority");
  if (auto pl = j.find("placement"); pl != j.end()) {
    Placement placement;
    GLEANER_CHECK(parse_placement(*pl, p + ".placement", placement));
    extras.placement = std::move(placement);
  }
  if (auto ev = j.find("events"); ev != j.end()) {
    GLEANER_CHECK(parse_events(*ev, p + ".events", job));
  }
  GLEANER_TRY(name, get_string(j, p, "name", true));
  GLEANER_TRY(queue, get_string(j, p, "queue", false));
  job.spec.name = name;
  job.spec.queue = queue;
  if (auto it = j.find("priority"); it != j.end()) {
    if (!it->is_number_integer()) return invalid_field(p + ".priority", "expected an integer");
    auto v = it->get<int64_t>();
    if (v < INT32_MIN || v > INT32_MAX) return invalid_field(p + ".priority", "out of int32 range");
    job.spec.priority = static_cast<int32_t>(v);
  }
  GLEANER_TRY(submit, get_count(j, p, "submitAt"));
  GLEANER_TRY(duration, get_count(j, p, "durationSeconds"));
  if (!duration) return invalid_field(p + ".durationSeconds", "required");
  job.spec.submit_time = submit.value_or(0);
  job.duration_seconds = *duration;
  if (j.contains("roles")) {
    if (j.contains("driver") || j.contains("executor")) {
      return invalid_field(p + ".roles", "give roles or driver/executor, not both");
    }
    GLEANER_CHECK(parse_roles(j["roles"], p + ".roles", job));
    if (kind == "SparkApplication") GLEANER_CHECK(spark_from_roles(p + ".roles", job));
  } else if (kind != "SparkApplication") {
    return invalid_field(p + ".roles", "required for a " + kind);
  } else if (!j.contains("driver")) {
    return invalid_field(p + ".driver", "required");
  } else {
    GLEANER_TRY(driver, get_resources(j["driver"], p + ".driver"));
    job.spec.driver = driver;
  }
  if (kind != "SparkApplication" &&
      (j.contains("executorLosses") || j.contains("executorRequests")))
    return invalid_field(p, "executorLosses and executorRequests are a SparkApplication's");
  if (j.contains("executor") && !j.contains("roles")) {
    const std::string ep = p + ".executor";
    GLEANER_TRY(executor, get_resources(j["executor"], ep, {"instances"}));
    GLEANER_TRY(instances, get_count(j["executor"], ep, "instances"));
    if (!instances) return invalid_field(ep + ".instances", "required");
    if (*instances > 100000) return invalid_field(ep + ".instances", "more than 100000");
    if (*instances > 0 && executor == Resources{}) {
      return invalid_field(ep, "executors must request cpu or memory");
    }
    job.spec.executor = executor;
    job.spec.executors = static_cast<int>(*instances);
  }
  GLEANER_TRY(selector, get_labels(j, p, "nodeSelector"));
  job.spec.node_selector.labels = selector;
  if (auto losses = j.find("executorLosses"); losses != j.end()) {
    if (!losses->is_array()) return invalid_field(p + ".executorLosses", "expected an array");
    for (size_t i = 0; i < losses->size(); ++i) {
      const Json& l = (*losses)[i];
      const std::string lp = p + ".executorLosses[" + std::to_string(i) + "]";
      if (!l.is_object()) return invalid_field(lp, "expected an object");
      GLEANER_CHECK(only_known(l, lp, {"afterSeconds", "executor", "replaceAfterSeconds"}));
      GLEANER_TRY(after, get_count(l, lp, "afterSeconds"));
      GLEANER_TRY(executor, get_count(l, lp, "executor"));
      GLEANER_TRY(replace, get_count(l, lp, "replaceAfterSeconds"));
      if (!after) return invalid_field(lp + ".afterSeconds", "required");
      if (!executor || *executor < 1 || *executor > job.spec.executors) {
        return invalid_field(lp + ".executor", "expected 1.." + std::to_string(job.spec.executors) +
                                                   " (an executor of the job)");
      }
      job.executor_losses.push_back(
          ExecutorLoss{*after, static_cast<int>(*executor), replace.value_or(0)});
    }
  }
  if (auto requests = j.find("executorRequests"); requests != j.end()) {
    if (!requests->is_array()) return invalid_field(p + ".executorRequests", "expected an array");
    if (job.spec.executors == 0 && job.spec.executor == Resources{}) {
      return invalid_field(p + ".executorRequests", "needs executor sizes (executor)");
    }
    for (size_t i = 0; i < requests->size(); ++i) {
      const Json& r = (*requests)[i];
      const std::string rp = p + ".executorRequests[" + std::to_string(i) + "]";
      if (!r.is_object()) return invalid_field(rp, "expected an object");
      GLEANER_CHECK(only_known(r, rp, {"afterSeconds", "count", "releaseAfterSeconds"}));
      GLEANER_TRY(after, get_count(r, rp, "afterSeconds"));
      GLEANER_TRY(count, get_count(r, rp, "count"));
      GLEANER_TRY(release, get_count(r, rp, "releaseAfterSeconds"));
      if (!after) return invalid_field(rp + ".afterSeconds", "required");
      if (!count || *count < 1 || *count > 10000) {
        return invalid_field(rp + ".count", "expected 1..10000");
      }
      job.executor_requests.push_back(ExecutorRequest{*after, static_cast<int>(*count), release});
    }
  }
  return job;
}

Status parse_policy(const Json& pol, Scenario& out) {
  GLEANER_CHECK(only_known(pol, "policy",
                           {"queueing", "driverStartTimeoutSeconds", "reservationTtlSeconds",
                            "reclaimHoldSeconds", "untilSeconds", "gpuBinPack"}));
  GLEANER_TRY(queueing, get_string(pol, "policy", "queueing", false));
  if (queueing == "blocking") {
    out.policy.queueing = QueueingPolicy::kBlocking;
  } else if (queueing.empty() || queueing == "nonblocking") {
    out.policy.queueing = QueueingPolicy::kNonBlocking;
  } else {
    return invalid_field("policy.queueing", "expected blocking or nonblocking, got " + queueing);
  }
  GLEANER_TRY(timeout, get_count(pol, "policy", "driverStartTimeoutSeconds"));
  GLEANER_TRY(ttl, get_count(pol, "policy", "reservationTtlSeconds"));
  GLEANER_TRY(until, get_count(pol, "policy", "untilSeconds"));
  if (timeout) out.policy.driver_start_timeout_seconds = *timeout;
  if (ttl) out.policy.reservation_ttl_seconds = *ttl;
  GLEANER_TRY(hold, get_count(pol, "policy", "reclaimHoldSeconds"));
  if (hold) out.policy.reclaim_hold_seconds = *hold;
  out.until_seconds = until;
  if (pol.contains("gpuBinPack")) {
    // The weights of RequestedToCapacityRatio's resources (placement_score.h).
    const Json& w = pol["gpuBinPack"];
    const std::string wp = "policy.gpuBinPack";
    if (!w.is_object()) return invalid_field(wp, "expected an object of resource weights");
    GLEANER_CHECK(only_known(w, wp, {"cpu", "memory", kResourceGpu}));
    ResourceWeights weights{0, 0, 0};
    GLEANER_TRY(cpu, get_count(w, wp, "cpu"));
    GLEANER_TRY(memory, get_count(w, wp, "memory"));
    GLEANER_TRY(gpus, get_count(w, wp, kResourceGpu));
    weights.cpu = cpu.value_or(0);
    weights.memory = memory.value_or(0);
    weights.gpus = gpus.value_or(0);
    if (weights.gpus < 1) return invalid_field(wp + "." + kResourceGpu, "expected a weight >= 1");
    out.policy.scores.gpu_bin_pack = weights;
  }
  return ok_status();
}

}  // namespace

Result<Scenario> parse_scenario(const Json& doc) {
  GLEANER_CHECK(only_known(doc, "scenario",
                           {"clusters", "nodes", "queues", "policy", "jobs", "priorityClasses"}));
  Scenario out;
  bool declared = doc.contains("clusters");
  if (declared) {
    const Json& cs = doc["clusters"];
    if (!cs.is_array() || cs.empty()) {
      return invalid_field("clusters", "expected a non-empty array");
    }
    for (size_t i = 0; i < cs.size(); ++i)
      GLEANER_CHECK(parse_cluster_entry(cs[i], "clusters[" + std::to_string(i) + "]", out));
  } else {
    GLEANER_CHECK(parse_cluster_entry(Json("default"), "clusters[0]", out));
  }
  const std::set<std::string> clusters(out.clusters.begin(), out.clusters.end());
  if (doc.contains("priorityClasses")) {
    GLEANER_CHECK(parse_priority_classes(doc["priorityClasses"], out));
  }
  auto array_of = [&](const char* key) -> Result<const Json*> {
    if (!doc.contains(key)) return static_cast<const Json*>(nullptr);
    if (!doc[key].is_array()) return invalid_field(key, "expected an array");
    return &doc[key];
  };
  GLEANER_TRY(nodes, array_of("nodes"));
  std::set<std::string> node_names;
  for (size_t i = 0; nodes != nullptr && i < nodes->size(); ++i) {
    const std::string p = "nodes[" + std::to_string(i) + "]";
    GLEANER_TRY(node, parse_node((*nodes)[i], p, clusters, declared));
    if (!node_names.insert(node.info.name).second) {
      return invalid_field(p + ".name", "duplicate node " + node.info.name);
    }
    out.nodes.push_back(std::move(node));
  }
  GLEANER_TRY(queues, array_of("queues"));
  for (size_t i = 0; queues != nullptr && i < queues->size(); ++i) {
    GLEANER_TRY(queue, parse_queue((*queues)[i], "queues[" + std::to_string(i) + "]", out));
    out.queues.push_back(std::move(queue));
  }
  if (doc.contains("policy")) GLEANER_CHECK(parse_policy(doc["policy"], out));
  GLEANER_TRY(jobs, array_of("jobs"));
  for (size_t i = 0; jobs != nullptr && i < jobs->size(); ++i) {
    const std::string p = "jobs[" + std::to_string(i) + "]";
    JobExtras extras;
    GLEANER_TRY(job, parse_job((*jobs)[i], p, extras));
    // A fleet's hub places SparkApplications and training jobs; YuniKorn's gangs are pods.
    if (job.spec.kind == kube_glue::kYuniKornKind && out.clusters.size() > 1)
      return invalid_field(p + ".kind", "a YuniKorn application runs in a scenario of one cluster");
    GLEANER_CHECK(resolve_job(job, extras, p, out));
    out.jobs.push_back(std::move(job));
  }
  return out;
}

Result<Scenario> parse_scenario_text(std::string_view text, std::string_view where) {
  auto doc = parse_json(text, where);
  if (!doc) return doc.error();
  auto s = parse_scenario(*doc);
  if (!s) return make_error(s.error().code, std::string(where) + ": " + s.error().message);
  return s;
}

}  // namespace gleaner::scheduler::sim
