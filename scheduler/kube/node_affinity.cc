#include "scheduler/kube/node_affinity.h"

#include <algorithm>
#include <optional>

#include "common/json_util.h"
#include "kube/selectors.h"
#include "kube/taints.h"

namespace gleaner::scheduler::kube_glue {

Result<NodeSelector> node_selector_of(const Json& spec, const std::string& where) {
  NodeSelector out;
  if (!spec.is_object()) return out;
  if (auto ns = spec.find("nodeSelector"); ns != spec.end() && !ns->is_null()) {
    if (!ns->is_object()) return invalid_field(where + ".nodeSelector", "expected an object");
    for (const auto& [k, v] : ns->items()) {
      if (!v.is_string()) {
        return invalid_field(std::string(where).append(".nodeSelector.").append(k),
                             "expected a string");
      }
      out.labels.emplace(k, v.get<std::string>());
    }
  }
  const std::string rp = where +
                         ".affinity.nodeAffinity.requiredDuringScheduling"
                         "IgnoredDuringExecution";
  const Json* affinity = spec.contains("affinity") ? &spec["affinity"] : nullptr;
  if (affinity == nullptr || !affinity->is_object() || !affinity->contains("nodeAffinity")) {
    return out;
  }
  const Json& node_affinity = (*affinity)["nodeAffinity"];
  if (!node_affinity.is_object()) return out;
  auto required = node_affinity.find("requiredDuringSchedulingIgnoredDuringExecution");
  if (required == node_affinity.end() || required->is_null()) return out;
  auto terms = required->find("nodeSelectorTerms");
  if (!required->is_object() || terms == required->end()) {
    return invalid_field(rp + ".nodeSelectorTerms", "expected an array");
  }
  auto parsed = kube::node_selector_terms(*terms, rp + ".nodeSelectorTerms");
  if (!parsed) return parsed.error();
  out.terms = std::move(*parsed);
  return out;
}

namespace {

void add_if_absent(Taints& taints, Taint taint) {
  auto same_key = [&](const Taint& t) { return t.key == taint.key && t.effect == taint.effect; };
  if (std::none_of(taints.begin(), taints.end(), same_key)) taints.push_back(std::move(taint));
}

}  // namespace

Result<std::vector<Toleration>> tolerations_of(const Json& spec, const std::string& where) {
  if (!spec.is_object()) return std::vector<Toleration>();
  auto list = spec.find("tolerations");
  if (list == spec.end()) return std::vector<Toleration>();
  return kube::tolerations_in(*list, where + ".tolerations");
}

Taints node_taints(const Json& node) {
  Taints out;
  const Json* spec = find_path(node, "spec");
  if (spec != nullptr && spec->is_object()) {
    if (auto list = spec->find("taints"); list != spec->end()) out = kube::taints_in(*list);
    if (spec->value("unschedulable", false)) {
      add_if_absent(out, Taint{"node.kubernetes.io/unschedulable", "", TaintEffect::kNoSchedule});
    }
  }
  const Json* conditions = find_path(node, "status/conditions");
  if (conditions != nullptr && conditions->is_array()) {
    for (const auto& c : *conditions) {
      if (!c.is_object() || c.value("type", "") != "Ready") continue;
      const std::string status = c.value("status", "");
      if (status == "False") {
        add_if_absent(out, Taint{"node.kubernetes.io/not-ready", "", TaintEffect::kNoExecute});
      } else if (status == "Unknown") {
        add_if_absent(out, Taint{"node.kubernetes.io/unreachable", "", TaintEffect::kNoExecute});
      }
    }
  }
  return out;
}

}  // namespace gleaner::scheduler::kube_glue
