#include "scheduler/sim/scenario.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <set>

namespace gleaner::scheduler::sim {
namespace {

Error field_error(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, path + ": " + what);
}

// Typos must not silently fall back to defaults: every object lists the keys it knows.
Status only_known(const Json& obj, const std::string& path,
                  std::initializer_list<const char*> known) {
  if (!obj.is_object())
    return field_error(path, std::string("expected an object, got ") + obj.type_name());
  for (const auto& [key, value] : obj.items()) {
    (void)value;
    bool ok = std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; });
    if (!ok) return field_error(std::string(path).append(".").append(key), "unknown field");
  }
  return ok_status();
}

Result<std::string> get_string(const Json& obj, const std::string& path, const char* key,
                               bool required) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) return field_error(path + "." + key, "required");
    return std::string();
  }
  if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
    return field_error(path + "." + key, "expected a non-empty string");
  }
  return it->get<std::string>();
}

// Seconds and counts: non-negative integers (1e9 is plenty and keeps sums in range).
Result<std::optional<int64_t>> get_count(const Json& obj, const std::string& path,
                                         const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::optional<int64_t>();
  const std::string where = path + "." + key;
  if (it->is_number_float()) {
    double d = it->get<double>();
    if (std::floor(d) != d) return field_error(where, "expected a whole number");
    if (d < 0 || d > 1e9) return field_error(where, "out of range 0..1e9");
    return std::optional<int64_t>(static_cast<int64_t>(d));
  }
  if (!it->is_number_integer()) {
    return field_error(where, std::string("expected a number, got ") + it->type_name());
  }
  auto v = it->get<int64_t>();
  if (v < 0 || v > 1'000'000'000) return field_error(where, "out of range 0..1e9");
  return std::optional<int64_t>(v);
}

Result<Resources> get_resources(const Json& obj, const std::string& path,
                                std::initializer_list<const char*> extra = {}) {
  std::vector<const char*> known{"cpu", "memory"};
  known.insert(known.end(), extra.begin(), extra.end());
  if (!obj.is_object()) return field_error(path, "expected an object with cpu and memory");
  for (const auto& [key, value] : obj.items()) {
    (void)value;
    if (std::find_if(known.begin(), known.end(), [&](const char* k) { return key == k; }) ==
        known.end()) {
      return field_error(std::string(path).append(".").append(key), "unknown field");
    }
  }
  Resources r;
  for (const char* key : {"cpu", "memory"}) {
    auto it = obj.find(key);
    if (it == obj.end()) continue;
    auto q = quantity_from_json(*it, path + "." + key);
    if (!q) return q.error();
    if (q->milli_value() < 0) return field_error(path + "." + key, "must not be negative");
    if (std::string_view(key) == "cpu") {
      r.cpu_milli = q->milli_value();
    } else {
      r.memory_bytes = q->value();
    }
  }
  return r;
}

Result<Labels> get_labels(const Json& obj, const std::string& path, const char* key) {
  Labels labels;
  auto it = obj.find(key);
  if (it == obj.end()) return labels;
  if (!it->is_object()) return field_error(path + "." + key, "expected an object of strings");
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) {
      return field_error(std::string(path).append(".").append(key).append(".").append(k),
                         "expected a string");
    }
    labels.emplace(k, v.get<std::string>());
  }
  return labels;
}

#define GLEANER_TRY(var, expr)          \
  auto var##_r = (expr);                \
  if (!var##_r) return var##_r.error(); \
  auto var = std::move(var##_r).value() /* NOLINT(bugprone-macro-parentheses): a name */

#define GLEANER_CHECK(expr) \
  if (Status s_ = (expr); !s_) return s_.error()

Result<ScenarioNode> parse_node(const Json& n, const std::string& p,
                                const std::set<std::string>& clusters, bool declared) {
  GLEANER_CHECK(
      only_known(n, p, {"name", "cluster", "labels", "batch", "changes", "startDelaySeconds"}));
  ScenarioNode node;
  GLEANER_TRY(name, get_string(n, p, "name", true));
  GLEANER_TRY(cluster, get_string(n, p, "cluster", false));
  if (cluster.empty()) cluster = "default";
  if (clusters.count(cluster) == 0) {
    return field_error(p + ".cluster",
                       "unknown cluster " + cluster + (declared ? " (not in clusters)" : ""));
  }
  GLEANER_TRY(labels, get_labels(n, p, "labels"));
  if (!n.contains("batch")) return field_error(p + ".batch", "required");
  GLEANER_TRY(batch, get_resources(n["batch"], p + ".batch"));
  GLEANER_TRY(delay, get_count(n, p, "startDelaySeconds"));
  node.info = NodeInfo{name, cluster, labels, batch};
  node.start_delay_seconds = delay.value_or(0);
  if (auto it = n.find("changes"); it != n.end()) {
    if (!it->is_array()) return field_error(p + ".changes", "expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string cp = p + ".changes[" + std::to_string(i) + "]";
      const Json& c = (*it)[i];
      GLEANER_CHECK(only_known(c, cp, {"at", "batch"}));
      GLEANER_TRY(at, get_count(c, cp, "at"));
      if (!at) return field_error(cp + ".at", "required");
      if (!c.contains("batch")) return field_error(cp + ".batch", "required");
      GLEANER_TRY(b, get_resources(c["batch"], cp + ".batch"));
      node.changes.push_back(NodeChange{*at, b});
    }
    std::stable_sort(node.changes.begin(), node.changes.end(),
                     [](const NodeChange& a, const NodeChange& b) { return a.at < b.at; });
  }
  return node;
}

Result<QueueSpec> parse_queue(const Json& q, const std::string& p) {
  GLEANER_CHECK(only_known(q, p, {"name", "parent", "min", "max", "queueing"}));
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
    GLEANER_TRY(max, get_resources(q["max"], p + ".max"));
    spec.max = max;
  }
  GLEANER_TRY(queueing, get_string(q, p, "queueing", false));
  if (queueing == "blocking") spec.queueing = QueueingPolicy::kBlocking;
  if (queueing == "nonblocking") spec.queueing = QueueingPolicy::kNonBlocking;
  if (!queueing.empty() && !spec.queueing) {
    return field_error(p + ".queueing", "expected blocking or nonblocking, got " + queueing);
  }
  return spec;
}

Result<ScenarioJob> parse_job(const Json& j, const std::string& p) {
  GLEANER_CHECK(only_known(j, p,
                           {"name", "queue", "priority", "submitAt", "durationSeconds", "driver",
                            "executor", "nodeSelector", "executorLosses", "executorRequests"}));
  ScenarioJob job;
  GLEANER_TRY(name, get_string(j, p, "name", true));
  GLEANER_TRY(queue, get_string(j, p, "queue", false));
  job.spec.name = name;
  job.spec.queue = queue;
  if (auto it = j.find("priority"); it != j.end()) {
    if (!it->is_number_integer()) return field_error(p + ".priority", "expected an integer");
    auto v = it->get<int64_t>();
    if (v < INT32_MIN || v > INT32_MAX) return field_error(p + ".priority", "out of int32 range");
    job.spec.priority = static_cast<int32_t>(v);
  }
  GLEANER_TRY(submit, get_count(j, p, "submitAt"));
  GLEANER_TRY(duration, get_count(j, p, "durationSeconds"));
  if (!duration) return field_error(p + ".durationSeconds", "required");
  job.spec.submit_time = submit.value_or(0);
  job.duration_seconds = *duration;
  if (!j.contains("driver")) return field_error(p + ".driver", "required");
  GLEANER_TRY(driver, get_resources(j["driver"], p + ".driver"));
  job.spec.driver = driver;
  if (j.contains("executor")) {
    const std::string ep = p + ".executor";
    GLEANER_TRY(executor, get_resources(j["executor"], ep, {"instances"}));
    GLEANER_TRY(instances, get_count(j["executor"], ep, "instances"));
    if (!instances) return field_error(ep + ".instances", "required");
    if (*instances > 100000) return field_error(ep + ".instances", "more than 100000");
    if (*instances > 0 && executor == Resources{}) {
      return field_error(ep, "executors must request cpu or memory");
    }
    job.spec.executor = executor;
    job.spec.executors = static_cast<int>(*instances);
  }
  GLEANER_TRY(selector, get_labels(j, p, "nodeSelector"));
  job.spec.node_selector.labels = selector;
  if (auto losses = j.find("executorLosses"); losses != j.end()) {
    if (!losses->is_array()) return field_error(p + ".executorLosses", "expected an array");
    for (size_t i = 0; i < losses->size(); ++i) {
      const Json& l = (*losses)[i];
      const std::string lp = p + ".executorLosses[" + std::to_string(i) + "]";
      if (!l.is_object()) return field_error(lp, "expected an object");
      GLEANER_CHECK(only_known(l, lp, {"afterSeconds", "executor", "replaceAfterSeconds"}));
      GLEANER_TRY(after, get_count(l, lp, "afterSeconds"));
      GLEANER_TRY(executor, get_count(l, lp, "executor"));
      GLEANER_TRY(replace, get_count(l, lp, "replaceAfterSeconds"));
      if (!after) return field_error(lp + ".afterSeconds", "required");
      if (!executor || *executor < 1 || *executor > job.spec.executors) {
        return field_error(lp + ".executor", "expected 1.." + std::to_string(job.spec.executors) +
                                                 " (an executor of the job)");
      }
      job.executor_losses.push_back(
          ExecutorLoss{*after, static_cast<int>(*executor), replace.value_or(0)});
    }
  }
  if (auto requests = j.find("executorRequests"); requests != j.end()) {
    if (!requests->is_array()) return field_error(p + ".executorRequests", "expected an array");
    if (job.spec.executors == 0 && job.spec.executor == Resources{})
      return field_error(p + ".executorRequests", "needs executor sizes (executor)");
    for (size_t i = 0; i < requests->size(); ++i) {
      const Json& r = (*requests)[i];
      const std::string rp = p + ".executorRequests[" + std::to_string(i) + "]";
      if (!r.is_object()) return field_error(rp, "expected an object");
      GLEANER_CHECK(only_known(r, rp, {"afterSeconds", "count", "releaseAfterSeconds"}));
      GLEANER_TRY(after, get_count(r, rp, "afterSeconds"));
      GLEANER_TRY(count, get_count(r, rp, "count"));
      GLEANER_TRY(release, get_count(r, rp, "releaseAfterSeconds"));
      if (!after) return field_error(rp + ".afterSeconds", "required");
      if (!count || *count < 1 || *count > 10000)
        return field_error(rp + ".count", "expected 1..10000");
      job.executor_requests.push_back(ExecutorRequest{*after, static_cast<int>(*count), release});
    }
  }
  return job;
}

Status parse_policy(const Json& pol, Scenario& out) {
  GLEANER_CHECK(only_known(
      pol, "policy",
      {"queueing", "driverStartTimeoutSeconds", "reservationTtlSeconds", "untilSeconds"}));
  GLEANER_TRY(queueing, get_string(pol, "policy", "queueing", false));
  if (queueing == "blocking") {
    out.policy.queueing = QueueingPolicy::kBlocking;
  } else if (queueing.empty() || queueing == "nonblocking") {
    out.policy.queueing = QueueingPolicy::kNonBlocking;
  } else {
    return field_error("policy.queueing", "expected blocking or nonblocking, got " + queueing);
  }
  GLEANER_TRY(timeout, get_count(pol, "policy", "driverStartTimeoutSeconds"));
  GLEANER_TRY(ttl, get_count(pol, "policy", "reservationTtlSeconds"));
  GLEANER_TRY(until, get_count(pol, "policy", "untilSeconds"));
  if (timeout) out.policy.driver_start_timeout_seconds = *timeout;
  if (ttl) out.policy.reservation_ttl_seconds = *ttl;
  out.until_seconds = until;
  return ok_status();
}

}  // namespace

Result<Scenario> parse_scenario(const Json& doc) {
  GLEANER_CHECK(only_known(doc, "scenario", {"clusters", "nodes", "queues", "policy", "jobs"}));
  Scenario out;
  std::set<std::string> clusters;
  bool declared = doc.contains("clusters");
  if (declared) {
    const Json& cs = doc["clusters"];
    if (!cs.is_array() || cs.empty()) return field_error("clusters", "expected a non-empty array");
    for (size_t i = 0; i < cs.size(); ++i) {
      const std::string p = "clusters[" + std::to_string(i) + "]";
      if (!cs[i].is_string() || cs[i].get_ref<const std::string&>().empty()) {
        return field_error(p, "expected a non-empty string");
      }
      if (!clusters.insert(cs[i].get<std::string>()).second) {
        return field_error(p, "duplicate cluster " + cs[i].get<std::string>());
      }
      out.clusters.emplace_back(cs[i].get<std::string>());
    }
  } else {
    out.clusters.push_back("default");
    clusters.insert("default");
  }
  auto array_of = [&](const char* key) -> Result<const Json*> {
    if (!doc.contains(key)) return static_cast<const Json*>(nullptr);
    if (!doc[key].is_array()) return field_error(key, "expected an array");
    return &doc[key];
  };
  GLEANER_TRY(nodes, array_of("nodes"));
  std::set<std::string> node_names;
  for (size_t i = 0; nodes != nullptr && i < nodes->size(); ++i) {
    const std::string p = "nodes[" + std::to_string(i) + "]";
    GLEANER_TRY(node, parse_node((*nodes)[i], p, clusters, declared));
    if (!node_names.insert(node.info.name).second) {
      return field_error(p + ".name", "duplicate node " + node.info.name);
    }
    out.nodes.push_back(std::move(node));
  }
  GLEANER_TRY(queues, array_of("queues"));
  for (size_t i = 0; queues != nullptr && i < queues->size(); ++i) {
    GLEANER_TRY(queue, parse_queue((*queues)[i], "queues[" + std::to_string(i) + "]"));
    out.queues.push_back(std::move(queue));
  }
  if (doc.contains("policy")) GLEANER_CHECK(parse_policy(doc["policy"], out));
  GLEANER_TRY(jobs, array_of("jobs"));
  for (size_t i = 0; jobs != nullptr && i < jobs->size(); ++i) {
    GLEANER_TRY(job, parse_job((*jobs)[i], "jobs[" + std::to_string(i) + "]"));
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
