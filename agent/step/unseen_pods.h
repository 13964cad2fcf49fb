#pragma once
// An LS pod that runs but that the eBPF probe does not see is unknown, not idle: a probe
// that stopped delivering, a pod cgroup made anew under another id, tasks nested deeper
// than the probe walks, a pod the probe had no slot for. Each of those would read as "no LS
// wait" and let BE grow onto the LS pod unchecked. The cgroups' own CPU accounting says the
// pod ran; the probe's on-CPU time for it says whether the probe saw it run. Where the two
// disagree BE may hold or be cut, never grow (docs/qos.md, "An LS pod the probe cannot see").
// Pure.

#include <cstdint>
#include <string>
#include <vector>

#include "agent/snapshot/node_snapshot.h"
#include "agent/step/probe_readings.h"

namespace gleaner::agent::step {

// A pod using less than this (cgroup accounting) is not judged: too little to tell a silent
// probe from a pod that barely ran in the window.
inline constexpr int64_t kUnseenMinMilli = 50;
// The probe must see at least this share of what the cgroup charged; the two windows end
// within a sampling pass of each other, so a steady pod's figures agree to a few percent.
inline constexpr int64_t kUnseenSeenDivisor = 4;

struct UnseenPod {
  std::string pod;           // namespace/name
  int64_t cgroup_milli = 0;  // what the pod's cgroup used in the latest sample
  int64_t probe_milli = 0;   // what the probe saw it use over its window
};

// The LS pods (every pod the probe watches: not BE) that ran in the latest sample of `snap`
// and that the probe saw use less than a kUnseenSeenDivisor-th of it. Empty without the
// probe, or when the readings carry no on-CPU figures (a snapshot file from before they
// were recorded).
std::vector<UnseenPod> unseen_ls_pods(const snapshot::NodeSnapshot& snap,
                                      const ProbeReadings& probe);

// "ns/a (cgroup 300m, probe 0m)", for logs and reasons.
std::string describe(const UnseenPod& pod);

}  // namespace gleaner::agent::step
