#include "agent/step/unseen_pods.h"

#include "agent/qos/pod_dirs.h"

namespace gleaner::agent::step {

std::vector<UnseenPod> unseen_ls_pods(const snapshot::NodeSnapshot& snap,
                                      const ProbeReadings& probe) {
  std::vector<UnseenPod> out;
  if (!probe.runqueue_probe || !probe.on_cpu_milli) return out;
  for (const auto& pod : snap.pods) {
    // The pods the probe watches (the daemon tracks every pod that is not BE).
    if (pod.qos == states::QoSClass::kBE || qos::is_be_for_suppress(pod)) continue;
    const auto* usage = snap.pod_usage(pod.pod.key());
    if (usage == nullptr || usage->cpu_milli < kUnseenMinMilli) continue;
    auto seen = probe.on_cpu_milli->find(pod.pod.key());
    const int64_t probe_milli = seen == probe.on_cpu_milli->end() ? 0 : seen->second;
    if (probe_milli * kUnseenSeenDivisor >= usage->cpu_milli) continue;
    out.push_back({pod.pod.key(), usage->cpu_milli, probe_milli});
  }
  return out;
}

std::string describe(const UnseenPod& pod) {
  return pod.pod + " (cgroup " + std::to_string(pod.cgroup_milli) + "m, probe " +
         std::to_string(pod.probe_milli) + "m)";
}

}  // namespace gleaner::agent::step
