#include "agent/daemon/handover.h"

#include <charconv>

#include "common/json_util.h"

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

StopDecision decide_on_stop(const std::optional<Json>& pod, const std::optional<Json>& daemon_set,
                            const Labels& node_labels) {
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
  auto selects =
      pod_template != nullptr ? template_selects(*pod_template, node_labels) : std::optional(true);
  if (!selects) return {false, "cannot tell whether the new template selects this node"};
  if (!*selects) return {false, "the new template no longer selects this node"};
  return {true, "rolling update: template generation " + std::to_string(*mine) + " -> " +
                    std::to_string(*current)};
}

}  // namespace gleaner::agent
