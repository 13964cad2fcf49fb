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
#include "kube/objects.h"
#include "kube/selectors.h"

namespace gleaner::agent {

struct StopDecision {
  bool hand_over = false;
  std::string why;
};

// `pod`: this agent's own Pod (nullopt: not found). `daemon_set`: the DaemonSet that owns
// it (nullopt: gone). `node`: this node (its name, labels and spec.taints). A successor
// comes only when the DaemonSet still exists and is not being deleted, its template has
// moved past the one this Pod runs (the Pod's pod-template-generation label below the
// DaemonSet's deprecated.daemonset.template.generation annotation, which only template
// changes move), and the DaemonSet controller would start the new template's pod here
// (template_runs_on).
StopDecision decide_on_stop(const std::optional<Json>& pod, const std::optional<Json>& daemon_set,
                            const kube::Node& node);

// The name of the DaemonSet owning `pod` (its controller ownerReference), or "".
std::string owning_daemon_set(const Json& pod);

// Whether a pod template's nodeSelector and required node affinity select a node with
// `labels` (kube::node_selector_terms' operators, Gt and Lt included); nullopt when it cannot
// tell (matchFields, a nodeSelector that is not an object, a malformed term).
std::optional<bool> template_selects(const Json& pod_template, const Labels& labels);

// Whether the DaemonSet controller would create a pod from `pod_template` on `node`, as its
// NodeShouldRunDaemonPod's shouldRun (kubernetes pkg/controller/daemon/daemon_controller.go):
// the template's spec.nodeName empty or this node's, template_selects, and no NoSchedule or
// NoExecute taint of the node's spec.taints left untolerated by the template's tolerations
// plus those the controller adds to every daemon pod (NewPod ->
// pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations). Its `why`
// names what fails; nullopt in `runs` when it cannot tell.
struct TemplateFit {
  std::optional<bool> runs;
  std::string why;
};
TemplateFit template_runs_on(const Json& pod_template, const kube::Node& node);

}  // namespace gleaner::agent
