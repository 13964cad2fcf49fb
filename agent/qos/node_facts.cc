#include "agent/qos/node_facts.h"

#include <algorithm>

#include "agent/batch/batch_calculator.h"
#include "agent/qos/pod_dirs.h"
#include "cgroup/parsers.h"
#include "common/json_util.h"
#include "kube/well_known.h"

namespace gleaner::agent::qos {
namespace {

// The reservation annotation's reservedCPUs; none when it is absent or malformed (the
// batch calculation reports a malformed annotation).
std::vector<int> reserved_cpu_list(const kube::StringMap& annotations) {
  auto it = annotations.find(kube::kReservationAnnotation);
  if (it == annotations.end()) return {};
  auto json = parse_json(it->second, kube::kReservationAnnotation);
  if (!json || !json->is_object()) return {};
  auto cpus = json->find("reservedCPUs");
  if (cpus == json->end() || !cpus->is_string()) return {};
  auto list = cgroup::parse_cpu_list(cpus->get<std::string>());
  return list ? *list : std::vector<int>{};
}

}  // namespace

NodeFacts node_facts(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                     std::optional<CpuTopology> topology) {
  NodeFacts ctx;
  auto cap = snap.node.capacity.find(kube::kResourceCpu);
  ctx.capacity_milli = cap == snap.node.capacity.end() ? 0 : cap->second.milli_value();
  auto alloc = snap.node.allocatable.find(kube::kResourceCpu);
  int64_t kubelet_reserved =
      alloc == snap.node.allocatable.end()
          ? 0
          : std::max<int64_t>(ctx.capacity_milli - alloc->second.milli_value(), 0);
  int64_t annotated = batch::reservation_from_annotation(snap.node.metadata.annotations).cpu_milli;
  ctx.node_reserved_milli = std::max(kubelet_reserved, annotated);
  ctx.system_usage_milli = snap.system_usage().cpu_milli;
  ctx.reserved_cpus = reserved_cpu_list(snap.node.metadata.annotations);
  ctx.kubepods_dir = layout.kubepods_dir();
  ctx.be_qos_dir = layout.qos_dir(cgroup::KubeQos::kBestEffort);
  for (const auto& pod : snap.pods) {
    if (!is_be_for_suppress(pod)) continue;
    ctx.be_dirs.push_back(pod_cgroup(layout, pod));
    for (const auto& [name, dir] : container_cgroups(layout, pod))
      ctx.be_dirs.push_back(dir);
  }
  ctx.topology = std::move(topology);
  return ctx;
}

}  // namespace gleaner::agent::qos
