#include "agent/qos/knob_reads.h"

#include "agent/qos/pod_dirs.h"

namespace gleaner::agent::qos {

using cgroup::Resource;

namespace {

// Every knob a strategy compares with or whose presence it checks, per cgroup.
constexpr std::initializer_list<Resource> kCgroupKnobs = {
    Resource::kCpuQuota,          Resource::kCpuPeriod,
    Resource::kCpuShares,         Resource::kCpuIdle,
    Resource::kCpuBurst,          Resource::kCpusetCpus,
    Resource::kCpusetEffective,   Resource::kMemoryLimit,
    Resource::kMemoryHigh,        Resource::kMemoryMin,
    Resource::kMemoryLow,         Resource::kMemoryOomGroup,
    Resource::kMemoryWmarkRatio,  Resource::kMemoryWmarkScaleFactor,
    Resource::kMemoryWmarkMinAdj, Resource::kMemoryUsePriorityOom,
    Resource::kMemoryPriority};

}  // namespace

KnobReads full_pass_reads(const QosInputs& in, const NodeFacts& ctx) {
  KnobReads reads;
  reads.add(in.layout.kubepods_dir(), kCgroupKnobs);
  reads.add(in.layout.qos_dir(cgroup::KubeQos::kBurstable), kCgroupKnobs);
  reads.add(in.layout.qos_dir(cgroup::KubeQos::kBestEffort), kCgroupKnobs);
  for (const auto& dir : ctx.be_dirs)
    reads.add(dir, kCgroupKnobs);
  for (const auto& pod : in.snapshot->pods) {
    reads.add(pod_cgroup(in.layout, pod), kCgroupKnobs);
    for (const auto& [name, dir] : container_cgroups(in.layout, pod))
      reads.add(dir, kCgroupKnobs);
  }
  return reads;
}

KnobReads suppress_reads(const NodeFacts& ctx, bool cpusets) {
  KnobReads reads;
  reads.add(ctx.be_qos_dir, {Resource::kCpuQuota, Resource::kCpuPeriod});
  if (!cpusets) return reads;
  reads.add(ctx.be_qos_dir, {Resource::kCpusetCpus, Resource::kCpusetEffective});
  reads.add(ctx.kubepods_dir, {Resource::kCpusetCpus});
  for (const auto& dir : ctx.be_dirs)
    reads.add(dir, {Resource::kCpusetCpus});
  return reads;
}

}  // namespace gleaner::agent::qos
