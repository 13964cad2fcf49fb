#pragma once
// What a stopping agent does with the values it set: put kubelet's back (uninstall, a node
// leaving the DaemonSet, no way to tell), or leave them in force for the agent replacing it
// in a rolling update, which adopts the originals from the state file. Restoring there
// would loosen BE limits for the seconds between the two agents: an LS protection gap.
// When in doubt it restores: a gap of seconds is better than limits nobody will lift.
// Pure: the caller fetches the objects.

#include <optional>
#include <string>

#include "common/json_fwd.h"
#include "kube/selectors.h"

namespace gleaner::agent {

struct StopDecision {
  bool hand_over = false;
  std::string why;
};

// `pod`: this agent's own Pod (nullopt: not found). `daemon_set`: the DaemonSet that owns
// it (nullopt: gone). `node_labels`: this node's labels. A successor comes only when the
// DaemonSet still exists and is not being deleted, its template has moved past the one
// this Pod runs (the Pod's pod-template-generation label below the DaemonSet's
// deprecated.daemonset.template.generation annotation, which only template changes move),
// and the new template still selects this node (nodeSelector and required node affinity).
StopDecision decide_on_stop(const std::optional<Json>& pod, const std::optional<Json>& daemon_set,
                            const Labels& node_labels);

// The name of the DaemonSet owning `pod` (its controller ownerReference), or "".
std::string owning_daemon_set(const Json& pod);

// Whether a pod template's nodeSelector and required node affinity select a node with
// `labels`; nullopt when it cannot tell (matchFields, Gt/Lt, malformed terms).
std::optional<bool> template_selects(const Json& pod_template, const Labels& labels);

}  // namespace gleaner::agent
