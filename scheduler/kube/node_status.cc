#include "scheduler/kube/node_status.h"

#include <cmath>

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

bool NodeStatusDecider::should_publish(const std::string& node,
                                       const std::optional<Resources>& desired,
                                       int64_t now_s) const {
  auto it = last_.find(node);
  if (it == last_.end()) return true;
  const Last& last = it->second;
  if (!desired) return last.value.has_value();
  if (!last.value) return true;
  if (now_s - last.at >= policy_.update_time_threshold_seconds) return true;
  const double t = policy_.resource_diff_threshold;
  return moved(last.value->cpu_milli, desired->cpu_milli, t) ||
         moved(last.value->memory_bytes, desired->memory_bytes, t);
}

void NodeStatusDecider::published(const std::string& node, const std::optional<Resources>& value,
                                  int64_t now_s) {
  last_[node] = Last{value, now_s};
}

}  // namespace gleaner::scheduler::kube_glue
