#pragma once
// Kubernetes node taints and pod tolerations (corev1.Taint, corev1.Toleration), shared by the
// scheduler's placement and the agent's handover (which asks whether the DaemonSet
// controller would start a successor on a tainted node). The readers from JSON are in
// kube/taints.h.

#include <compare>
#include <optional>
#include <string>
#include <vector>

namespace gleaner {

// A node taint as Kubernetes has it; cordons (spec.unschedulable) and a node that is not
// Ready are expressed as the taints Kubernetes uses for them (node.kubernetes.io/
// unschedulable, not-ready, unreachable), so one rule covers all.
enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };
struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
  auto operator<=>(const Taint&) const = default;
};
using Taints = std::vector<Taint>;

// A pod toleration: `exists` is operator Exists (any value; with an empty key, every
// taint); otherwise Equal. No effect: every effect.
struct Toleration {
  std::string key;
  bool exists = false;
  std::string value;
  std::optional<TaintEffect> effect;
  [[nodiscard]] bool tolerates(const Taint& taint) const;
  auto operator<=>(const Toleration&) const = default;
};

// The first NoSchedule or NoExecute taint (PreferNoSchedule never repels) that no toleration
// in `tolerations` tolerates, or null: a pod with these tolerations may be placed on a node
// with `taints`.
const Taint* first_untolerated(const Taints& taints, const std::vector<Toleration>& tolerations);

// "key=value:Effect", as kubectl prints a taint.
std::string to_string(const Taint& taint);

}  // namespace gleaner
