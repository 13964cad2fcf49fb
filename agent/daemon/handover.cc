#include "agent/daemon/handover.h"

#include <charconv>

namespace gleaner::agent {
namespace {

std::optional<long long> number_at(const Json& obj, const char* a, const char* b) {
  const Json* at = find_path(obj, std::string(a) + "/" + b);
  if (at == nullptr) return std::nullopt;
  if (at->is_number_integer()) return at->get<long long>();
  if (!at->is_string()) return std::nullopt;
  const auto& s = at->get_ref<const std::string&>();
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
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

StopDecision decide_on_stop(const std::optional<Json>& pod, const std::optional<Json>& daemon_set) {
  if (!pod) return {false, "this agent's Pod is gone"};
  if (owning_daemon_set(*pod).empty()) return {false, "this agent's Pod has no DaemonSet owner"};
  if (!daemon_set) return {false, "the DaemonSet is gone (uninstall)"};
  if (find_path(*daemon_set, "metadata/deletionTimestamp") != nullptr) {
    return {false, "the DaemonSet is being deleted (uninstall)"};
  }
  // The DaemonSet controller labels each pod with the template generation it was made from.
  auto mine = number_at(*pod, "metadata/labels", "pod-template-generation");
  auto current = number_at(*daemon_set, "metadata", "generation");
  if (!mine || !current) return {false, "no template generation to compare"};
  if (*mine >= *current) {
    return {false, "the DaemonSet's template is the one this Pod runs (no rolling update)"};
  }
  return {true, "rolling update: template generation " + std::to_string(*mine) + " -> " +
                    std::to_string(*current)};
}

}  // namespace gleaner::agent
