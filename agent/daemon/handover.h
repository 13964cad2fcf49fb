#pragma once
// What a stopping agent does with the values it set: put kubelet's back (uninstall, a node
// leaving the DaemonSet, no way to tell), or leave them in force for the agent replacing it
// in a rolling update, which adopts the originals from the state file. Restoring there
// would loosen BE limits for the seconds between the two agents: an LS protection gap.
// Pure: the caller fetches the objects.

#include <optional>
#include <string>

#include "common/json_util.h"

namespace gleaner::agent {

struct StopDecision {
  bool hand_over = false;
  std::string why;
};

// `pod`: this agent's own Pod (nullopt: not found). `daemon_set`: the DaemonSet that owns
// it (nullopt: gone). A successor comes only when the DaemonSet still exists, is not being
// deleted, and its template has moved past the one this pod runs (label
// pod-template-generation, which the DaemonSet controller sets, below metadata.generation).
StopDecision decide_on_stop(const std::optional<Json>& pod, const std::optional<Json>& daemon_set);

// The name of the DaemonSet owning `pod` (its controller ownerReference), or "".
std::string owning_daemon_set(const Json& pod);

}  // namespace gleaner::agent
