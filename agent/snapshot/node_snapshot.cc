#include "agent/snapshot/node_snapshot.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "common/file_io.h"
#include "common/json_util.h"

namespace gleaner::agent::snapshot {
namespace {

Error field_error(const std::string& where, const std::string& field, const std::string& why) {
  return make_error(ErrorCode::kParse, where + ": field " + field + ": " + why);
}

// {"cpu": q, "memory": q}; either may be absent (zero).
Result<Usage> parse_usage(const Json& json, const std::string& where, const std::string& field) {
  if (!json.is_object()) {
    return field_error(where, field, std::string("expected an object, got ") + json.type_name());
  }
  Usage u;
  if (auto it = json.find("cpu"); it != json.end() && !it->is_null()) {
    auto q = quantity_from_json(*it, where + ": field " + field + ".cpu");
    if (!q) return q.error();
    u.cpu_milli = q->milli_value();
  }
  if (auto it = json.find("memory"); it != json.end() && !it->is_null()) {
    auto q = quantity_from_json(*it, where + ": field " + field + ".memory");
    if (!q) return q.error();
    u.memory_bytes = q->value();
  }
  if (u.cpu_milli < 0 || u.memory_bytes < 0) {
    return field_error(where, field, "usage must not be negative");
  }
  return u;
}

Result<NodeMetrics> parse_metrics(const Json& json, const std::string& where) {
  if (!json.is_object()) {
    return field_error(where, "metrics",
                       std::string("expected an object, got ") + json.type_name());
  }
  NodeMetrics m;
  if (auto it = json.find("ageSeconds"); it != json.end() && !it->is_null()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
      return field_error(where, "metrics.ageSeconds", "expected a non-negative number");
    }
    m.age_seconds = it->get<double>();
  }
  auto node = json.find("node");
  if (node == json.end() || node->is_null()) {
    return field_error(where, "metrics.node", "is required");
  }
  auto usage = parse_usage(*node, where, "metrics.node");
  if (!usage) return usage.error();
  m.node = *usage;
  if (auto it = json.find("system"); it != json.end() && !it->is_null()) {
    auto sys = parse_usage(*it, where, "metrics.system");
    if (!sys) return sys.error();
    m.system = *sys;
  }
  if (auto it = json.find("pods"); it != json.end() && !it->is_null()) {
    if (!it->is_object()) return field_error(where, "metrics.pods", "expected an object");
    for (const auto& [key, value] : it->items()) {
      if (key.find('/') == std::string::npos) {
        return field_error(where, "metrics.pods." + key, "key must be namespace/name");
      }
      auto pod = parse_usage(value, where, "metrics.pods." + key);
      if (!pod) return pod.error();
      m.pods[key] = *pod;
    }
  }
  return m;
}

}  // namespace

Usage NodeSnapshot::system_usage() const {
  if (metrics.system) return *metrics.system;
  Usage pods_sum;
  for (const auto& [key, u] : metrics.pods) {
    pods_sum.cpu_milli += u.cpu_milli;
    pods_sum.memory_bytes += u.memory_bytes;
  }
  return {std::max<int64_t>(metrics.node.cpu_milli - pods_sum.cpu_milli, 0),
          std::max<int64_t>(metrics.node.memory_bytes - pods_sum.memory_bytes, 0)};
}

const Usage* NodeSnapshot::pod_usage(const std::string& key) const {
  auto it = metrics.pods.find(key);
  return it == metrics.pods.end() ? nullptr : &it->second;
}

PodState classify_pod(kube::Pod pod) {
  PodState s;
  s.kube_qos = states::kube_qos(pod);
  s.qos = states::qos_class(pod);
  s.priority = states::priority_class(pod);
  s.request.cpu_milli = kube::pod_request(pod, kube::kResourceCpu).milli_value();
  s.request.memory_bytes = kube::pod_request(pod, kube::kResourceMemory).value();
  s.batch = states::batch_resources(pod);
  s.pod = std::move(pod);
  return s;
}

Result<NodeSnapshot> parse_snapshot(const Json& json, const std::string& where) {
  if (!json.is_object()) {
    return make_error(ErrorCode::kParse,
                      where + ": expected a JSON object, got " + json.type_name());
  }
  NodeSnapshot snap;
  auto node_json = json.find("node");
  if (node_json == json.end() || node_json->is_null()) {
    return field_error(where, "node", "is required (a v1 Node object)");
  }
  auto node = kube::parse_node(*node_json);
  if (!node) return make_error(ErrorCode::kParse, where + ": " + node.error().message);
  snap.node = std::move(node).value();

  if (auto it = json.find("pods"); it != json.end() && !it->is_null()) {
    auto pods = kube::parse_pod_list(*it);
    if (!pods) return make_error(ErrorCode::kParse, where + ": " + pods.error().message);
    for (auto& pod : *pods)
      snap.pods.push_back(classify_pod(std::move(pod)));
  }

  auto metrics_json = json.find("metrics");
  if (metrics_json == json.end() || metrics_json->is_null()) {
    return field_error(where, "metrics", "is required");
  }
  auto metrics = parse_metrics(*metrics_json, where);
  if (!metrics) return metrics.error();
  snap.metrics = std::move(metrics).value();
  return snap;
}

Result<NodeSnapshot> load_snapshot_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  auto json = parse_json(*text, path);
  if (!json) return json.error();
  return parse_snapshot(*json, path);
}

namespace {
Json usage_json(const Usage& u) {
  return {{"cpu", std::to_string(u.cpu_milli) + "m"}, {"memory", std::to_string(u.memory_bytes)}};
}
}  // namespace

Json to_snapshot_json(const NodeSnapshot& snap) {
  Json pods = Json::array();
  for (const auto& p : snap.pods)
    pods.push_back(object_or_empty(p.pod.raw));
  Json metrics = {{"ageSeconds", snap.metrics.age_seconds},
                  {"node", usage_json(snap.metrics.node)}};
  if (snap.metrics.system) metrics["system"] = usage_json(*snap.metrics.system);
  Json by_pod = Json::object();
  for (const auto& [key, u] : snap.metrics.pods)
    by_pod[key] = usage_json(u);
  metrics["pods"] = by_pod;
  return {{"node", object_or_empty(snap.node.raw)}, {"pods", pods}, {"metrics", metrics}};
}

namespace {

// A container keeps what the snapshot's readers read (its name and resources, and the
// restartPolicy that makes an init container a sidecar); its command, args, env, probes and
// the rest, which may carry credentials, are left out.
void keep_what_is_read(Json& containers) {
  if (!containers.is_array()) return;
  for (Json& c : containers) {
    if (!c.is_object()) continue;
    Json kept = Json::object();
    for (const char* field : {"name", "resources", "restartPolicy"})
      if (c.contains(field)) kept[field] = c[field];
    c = std::move(kept);
  }
}

}  // namespace

Json shareable_snapshot_json(const NodeSnapshot& snap) {
  Json out = to_snapshot_json(snap);
  for (Json& pod : out["pods"]) {
    if (!pod.is_object()) continue;
    if (Json* meta = pod.contains("metadata") ? &pod["metadata"] : nullptr;
        meta != nullptr && meta->is_object() && meta->contains("annotations") &&
        (*meta)["annotations"].is_object()) {
      (*meta)["annotations"].erase("kubectl.kubernetes.io/last-applied-configuration");
    }
    if (!pod.contains("spec") || !pod["spec"].is_object()) continue;
    for (const char* list : {"initContainers", "containers", "ephemeralContainers"})
      if (pod["spec"].contains(list)) keep_what_is_read(pod["spec"][list]);
  }
  return out;
}

}  // namespace gleaner::agent::snapshot
