#include "agent/daemon/handover.h"

#include <charconv>

#include "common/json_util.h"
#include "common/taints.h"
#include "kube/taints.h"

namespace gleaner::agent {
namespace {

constexpr const char* kTemplateGeneration = "deprecated.daemonset.template.generation";

std::optional<long long> as_number(const Json* at) {
  if (at == nullptr) return std::nullopt;
  if (at->is_number_integer()) return at->get<long long>();
  if (!at->is_string()) return std::nullopt;
  const auto& s = at->get_ref<const std::string&>();
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

const Json* label_or_annotation(const Json& obj, const char* map, const char* key) {
  const Json* m = find_path(obj, std::string("metadata/") + map);
  if (m == nullptr || !m->is_object()) return nullptr;
  auto it = m->find(key);
  return it == m->end() ? nullptr : &*it;
}

// The tolerations the DaemonSet controller gives every daemon pod on top of its template's
// (pkg/controller/daemon/util/daemonset_util.go, AddOrUpdateDaemonPodTolerations): node
// problems and a cordon do not keep a daemon off its node.
std::vector<Toleration> daemon_pod_tolerations(const Json& pod_template) {
  auto exists = [](const char* key, TaintEffect effect) {
    return Toleration{key, true, "", effect};
  };
  std::vector<Toleration> out{
      exists("node.kubernetes.io/not-ready", TaintEffect::kNoExecute),
      exists("node.kubernetes.io/unreachable", TaintEffect::kNoExecute),
      exists("node.kubernetes.io/disk-pressure", TaintEffect::kNoSchedule),
      exists("node.kubernetes.io/memory-pressure", TaintEffect::kNoSchedule),
      exists("node.kubernetes.io/pid-pressure", TaintEffect::kNoSchedule),
      exists("node.kubernetes.io/unschedulable", TaintEffect::kNoSchedule),
  };
  const Json* host_network = find_path(pod_template, "spec/hostNetwork");
  if (host_network != nullptr && host_network->is_boolean() && host_network->get<bool>()) {
    out.push_back(exists("node.kubernetes.io/network-unavailable", TaintEffect::kNoSchedule));
  }
  return out;
}

}  // namespace

std::string owning_daemon_set(const Json& pod) {
  const Json* owners = find_path(pod, "metadata/ownerReferences");
  if (owners == nullptr || !owners->is_array()) return "";
  for (const auto& ref : *owners) {
    if (!ref.is_object() || ref.value("kind", "") != "DaemonSet") continue;
    if (!ref.value("controller", false)) continue;
    return ref.value("name", "");
  }
  return "";
}

std::optional<bool> template_selects(const Json& pod_template, const Labels& labels) {
  if (const Json* selector = find_path(pod_template, "spec/nodeSelector")) {
    if (!selector->is_object()) return std::nullopt;
    for (const auto& [key, value] : selector->items()) {
      auto it = labels.find(key);
      if (!value.is_string() || it == labels.end() || it->second != value.get<std::string>()) {
        return false;
      }
    }
  }
  const Json* terms = find_path(pod_template,
                                "spec/affinity/nodeAffinity/"
                                "requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms");
  if (terms == nullptr) return true;
  // What cannot be matched here as Kubernetes' DaemonSet controller would (matchFields, a
  // malformed term) leaves the answer open.
  auto parsed = kube::node_selector_terms(*terms, "nodeSelectorTerms");
  if (!parsed) return std::nullopt;
  return terms_match(*parsed, labels);
}

TemplateFit template_runs_on(const Json& pod_template, const kube::Node& node) {
  const Json* node_name = find_path(pod_template, "spec/nodeName");
  if (node_name != nullptr && node_name->is_string() && !node_name->get<std::string>().empty() &&
      node_name->get<std::string>() != node.metadata.name) {
    return {false, "the new template names node " + node_name->get<std::string>()};
  }
  auto selects = template_selects(pod_template, node.metadata.labels);
  if (!selects) return {std::nullopt, "cannot tell whether the new template selects this node"};
  if (!*selects) return {false, "the new template no longer selects this node"};
  // The controller reads the node's spec.taints alone: the node lifecycle controller has put
  // its condition taints (not-ready, memory-pressure, ...) there already.
  const Json* taint_list = node.raw ? find_path(*node.raw, "spec/taints") : nullptr;
  const Taints taints = taint_list != nullptr ? kube::taints_in(*taint_list) : Taints{};
  const Json* listed = find_path(pod_template, "spec/tolerations");
  auto tolerations = listed != nullptr
                         ? kube::tolerations_in(*listed, "spec.template.spec.tolerations")
                         : Result<std::vector<Toleration>>(std::vector<Toleration>{});
  if (!tolerations) {
    return {std::nullopt,
            "cannot read the new template's tolerations: " + tolerations.error().message};
  }
  auto added = daemon_pod_tolerations(pod_template);
  tolerations->insert(tolerations->end(), added.begin(), added.end());
  if (const Taint* repels = first_untolerated(taints, *tolerations)) {
    return {false, "the new template does not tolerate this node's taint " + to_string(*repels)};
  }
  return {true, ""};
}

StopDecision decide_on_stop(const std::optional<Json>& pod, const std::optional<Json>& daemon_set,
                            const kube::Node& node) {
  if (!pod) return {false, "this agent's Pod is gone"};
  if (owning_daemon_set(*pod).empty()) return {false, "this agent's Pod has no DaemonSet owner"};
  if (!daemon_set) return {false, "the DaemonSet is gone (uninstall)"};
  if (find_path(*daemon_set, "metadata/deletionTimestamp") != nullptr) {
    return {false, "the DaemonSet is being deleted (uninstall)"};
  }
  auto mine = as_number(label_or_annotation(*pod, "labels", "pod-template-generation"));
  auto current = as_number(label_or_annotation(*daemon_set, "annotations", kTemplateGeneration));
  if (!mine || !current) return {false, "no template generation to compare"};
  if (*mine >= *current) {
    return {false, "the DaemonSet's template is the one this Pod runs (no rolling update)"};
  }
  const Json* pod_template = find_path(*daemon_set, "spec/template");
  if (pod_template != nullptr) {
    // No successor will run here: restore, or BE keeps limits no agent will ever lift.
    TemplateFit fit = template_runs_on(*pod_template, node);
    if (fit.runs != true) return {false, fit.why};
  }
  return {true, "rolling update: template generation " + std::to_string(*mine) + " -> " +
                    std::to_string(*current)};
}

}  // namespace gleaner::agent
