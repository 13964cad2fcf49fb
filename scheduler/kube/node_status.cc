#include "scheduler/kube/node_status.h"

#include <cmath>

#include "common/json_util.h"
#include "kube/objects.h"

namespace gleaner::scheduler::kube_glue {

namespace {

bool moved(int64_t before, int64_t after, double threshold) {
  if (before == after) return false;
  if (before == 0) return true;
  return std::fabs(static_cast<double>(after - before)) / static_cast<double>(before) > threshold;
}

}  // namespace

Json batch_status_patch(const std::optional<Resources>& batch) {
  Json list = Json::object();
  if (batch) {
    list[kube::kResourceBatchCpu] = std::to_string(batch->cpu_milli);
    list[kube::kResourceBatchMemory] = std::to_string(batch->memory_bytes);
  } else {
    list[kube::kResourceBatchCpu] = nullptr;
    list[kube::kResourceBatchMemory] = nullptr;
  }
  return Json{{"status", {{"capacity", list}, {"allocatable", list}}}};
}

PublishPolicy PublishPolicies::for_node(const Labels& labels) const {
  for (const auto& [selector, policy] : nodes) {
    if (selector.matches(labels)) return policy;
  }
  return cluster;
}

namespace {

// The two fields of one strategy object over `into`; an error names the field.
Status read_policy(const Json& obj, const std::string& at, PublishPolicy& into) {
  if (auto it = obj.find("updateTimeThresholdSeconds"); it != obj.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1) {
      return make_error(ErrorCode::kInvalidArgument,
                        at + "updateTimeThresholdSeconds: expected an integer >= 1");
    }
    into.update_time_threshold_seconds = it->get<int64_t>();
  }
  if (auto it = obj.find("resourceDiffThreshold"); it != obj.end() && !it->is_null()) {
    if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > 1) {
      return make_error(ErrorCode::kInvalidArgument,
                        at + "resourceDiffThreshold: expected a number in (0, 1]");
    }
    into.resource_diff_threshold = it->get<double>();
  }
  return ok_status();
}

}  // namespace

Result<PublishPolicies> publish_policies(const Json& config_map, const PublishPolicy& flags) {
  PublishPolicies out;
  out.cluster = flags;
  const std::string text = string_at(config_map, "data/colocation-config");
  if (text.empty()) return out;
  auto json = parse_json(text, "colocation-config");
  if (!json) return json.error();
  if (!json->is_object()) {
    return make_error(ErrorCode::kParse, "colocation-config: expected a JSON object");
  }
  if (Status s = read_policy(*json, "colocation-config: ", out.cluster); !s) return s.error();
  auto nodes = json->find("nodeConfigs");
  if (nodes == json->end() || nodes->is_null()) return out;
  if (!nodes->is_array()) {
    return make_error(ErrorCode::kParse, "colocation-config: nodeConfigs: expected a list");
  }
  for (size_t i = 0; i < nodes->size(); ++i) {
    const Json& entry = (*nodes)[i];
    const std::string at = "colocation-config: nodeConfigs[" + std::to_string(i) + "].";
    if (!entry.is_object()) return make_error(ErrorCode::kParse, at + ": expected an object");
    auto sel = entry.find("nodeSelector");
    if (sel == entry.end() || sel->is_null()) continue;  // selects no node
    auto selector = kube::LabelSelector::from_json(*sel, at + "nodeSelector");
    if (!selector) return selector.error();
    PublishPolicy policy = out.cluster;
    // An invalid entry leaves its nodes on the cluster's (slo-controller's rule).
    if (Status s = read_policy(entry, at, policy); !s) policy = out.cluster;
    out.nodes.emplace_back(std::move(*selector), policy);
  }
  return out;
}

bool NodeStatusDecider::should_publish(const std::string& node,
                                       const std::optional<Resources>& desired,
                                       int64_t now_s) const {
  return should_publish(node, desired, now_s, policy_);
}

bool NodeStatusDecider::should_publish(const std::string& node,
                                       const std::optional<Resources>& desired, int64_t now_s,
                                       const PublishPolicy& policy) const {
  auto it = last_.find(node);
  if (it == last_.end()) return true;
  const Last& last = it->second;
  if (!desired) return last.value.has_value();
  if (!last.value) return true;
  if (now_s - last.at >= policy.update_time_threshold_seconds) return true;
  const double t = policy.resource_diff_threshold;
  return moved(last.value->cpu_milli, desired->cpu_milli, t) ||
         moved(last.value->memory_bytes, desired->memory_bytes, t);
}

void NodeStatusDecider::published(const std::string& node, const std::optional<Resources>& value,
                                  int64_t now_s) {
  last_[node] = Last{value, now_s};
}

}  // namespace gleaner::scheduler::kube_glue
