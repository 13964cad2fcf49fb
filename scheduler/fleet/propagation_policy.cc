#include "scheduler/fleet/propagation_policy.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "common/json_util.h"
#include "kube/taints.h"

namespace gleaner::scheduler::fleet {
namespace {

constexpr const char* kKarmadaGroup = "policy.karmada.io/v1alpha1";
constexpr const char* kAckGroup = "policy.one.alibabacloud.com/v1alpha1";

// Sets `target` from `result`, or gives its error.
template <typename T, typename U>
std::optional<Error> take(T& target, Result<U> result) {
  if (!result) return result.error();
  target = std::move(*result);
  return std::nullopt;
}

Result<std::string> optional_string(const Json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string()) return invalid_field(where + "." + key, "expected a string");
  return it->get<std::string>();
}

Result<std::vector<std::string>> string_list(const Json& obj, const char* key,
                                             const std::string& where) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return out;
  if (!it->is_array()) return invalid_field(where + "." + key, "expected a list of strings");
  for (const auto& v : *it) {
    if (!v.is_string()) return invalid_field(where + "." + key, "expected a list of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

Result<std::optional<kube::LabelSelector>> label_selector(const Json& obj,
                                                          const std::string& where) {
  auto it = obj.find("labelSelector");
  if (it == obj.end() || it->is_null()) return std::optional<kube::LabelSelector>();
  auto s = kube::LabelSelector::from_json(*it, where + ".labelSelector");
  if (!s) return s.error();  // already names the field
  return std::optional<kube::LabelSelector>(std::move(*s));
}

Result<ResourceSelector> resource_selector(const Json& rs, const std::string& where) {
  if (!rs.is_object()) return invalid_field(where, "expected an object");
  ResourceSelector out;
  if (auto e = take(out.api_version, optional_string(rs, "apiVersion", where))) return *e;
  if (auto e = take(out.kind, optional_string(rs, "kind", where))) return *e;
  if (out.api_version.empty() || out.kind.empty()) {
    return invalid_field(where, "apiVersion and kind are required");
  }
  if (auto e = take(out.ns, optional_string(rs, "namespace", where))) return *e;
  if (auto e = take(out.name, optional_string(rs, "name", where))) return *e;
  if (auto e = take(out.labels, label_selector(rs, where))) return *e;
  return out;
}

Result<ClusterAffinity> cluster_affinity(const Json& placement, const std::string& where) {
  ClusterAffinity out;
  auto it = placement.find("clusterAffinity");
  if (it == placement.end() || it->is_null()) return out;
  const std::string at = where + ".clusterAffinity";
  if (!it->is_object()) return invalid_field(at, "expected an object");
  if (it->contains("fieldSelector") && !(*it)["fieldSelector"].is_null()) {
    return invalid_field(at + ".fieldSelector", "provider/region/zone selection is not supported");
  }
  if (auto e = take(out.cluster_names, string_list(*it, "clusterNames", at))) return *e;
  if (auto e = take(out.exclude, string_list(*it, "exclude", at))) return *e;
  if (auto e = take(out.labels, label_selector(*it, at))) return *e;
  return out;
}

}  // namespace

Result<PropagationPolicy> parse_propagation_policy(const Json& object) {
  if (!object.is_object()) return invalid_field("policy", "expected an object");
  const std::string api_version = object.value("apiVersion", "");
  const std::string kind = object.value("kind", "");
  const Json meta = object.value("metadata", Json::object());
  PropagationPolicy p;
  p.name = meta.is_object() ? meta.value("name", "") : "";
  p.ns = kind == "PropagationPolicy" && meta.is_object() ? meta.value("namespace", "") : "";
  const std::string where = kind + " " + (p.ns.empty() ? p.name : p.ns + "/" + p.name);
  if (api_version != kKarmadaGroup && api_version != kAckGroup) {
    return invalid_field(where + ": apiVersion", "expected " + std::string(kKarmadaGroup) + " or " +
                                                     kAckGroup + ", got \"" + api_version + "\"");
  }
  if (kind != "PropagationPolicy" && kind != "ClusterPropagationPolicy") {
    return invalid_field(where + ": kind",
                         "expected PropagationPolicy or ClusterPropagationPolicy");
  }
  if (p.name.empty()) return invalid_field(where, "metadata.name is required");
  if (kind == "PropagationPolicy" && p.ns.empty()) {
    return invalid_field(where, "metadata.namespace is required for a PropagationPolicy");
  }
  auto spec = object.find("spec");
  if (spec == object.end() || !spec->is_object())
    return invalid_field(where + ": spec", "required");
  const std::string s = where + ": spec";
  if (auto pr = spec->find("priority"); pr != spec->end() && !pr->is_null()) {
    if (!pr->is_number_integer() || pr->get<int64_t>() < std::numeric_limits<int32_t>::min() ||
        pr->get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return invalid_field(s + ".priority", "expected a 32-bit integer");
    }
    p.priority = pr->get<int32_t>();
  }
  auto selectors = spec->find("resourceSelectors");
  if (selectors == spec->end() || !selectors->is_array() || selectors->empty()) {
    return invalid_field(s + ".resourceSelectors", "expected a non-empty list");
  }
  for (size_t i = 0; i < selectors->size(); ++i) {
    auto rs =
        resource_selector((*selectors)[i], s + ".resourceSelectors[" + std::to_string(i) + "]");
    if (!rs) return rs.error();
    p.selectors.push_back(std::move(*rs));
  }
  if (auto e = take(p.scheduler_name, optional_string(*spec, "schedulerName", s))) return *e;
  if (auto pd = spec->find("preserveResourcesOnDeletion"); pd != spec->end() && !pd->is_null()) {
    if (!pd->is_boolean())
      return invalid_field(s + ".preserveResourcesOnDeletion", "expected a bool");
    p.preserve_resources_on_deletion = pd->get<bool>();
  }
  if (auto pl = spec->find("placement"); pl != spec->end() && !pl->is_null()) {
    if (!pl->is_object()) return invalid_field(s + ".placement", "expected an object");
    if (auto e = take(p.affinity, cluster_affinity(*pl, s + ".placement"))) return *e;
    if (auto rsch = pl->find("replicaScheduling"); rsch != pl->end() && !rsch->is_null()) {
      const std::string at = s + ".placement.replicaScheduling";
      if (!rsch->is_object()) return invalid_field(at, "expected an object");
      if (auto e = take(p.replica_scheduling, optional_string(*rsch, "replicaSchedulingType", at)))
        return *e;
      std::string custom;
      if (auto e = take(custom, optional_string(*rsch, "customSchedulingType", at))) return *e;
      if (!custom.empty() && custom != "Gang") {
        return invalid_field(at + ".customSchedulingType", "expected Gang, got \"" + custom + "\"");
      }
      p.gang = custom == "Gang";
    }
    if (auto tol = pl->find("clusterTolerations"); tol != pl->end()) {
      auto parsed = kube::tolerations_in(*tol, s + ".placement.clusterTolerations");
      if (!parsed) return parsed.error();
      p.cluster_tolerations = std::move(*parsed);
    }
  }
  return p;
}

Result<MemberCluster> parse_member_cluster(const Json& object) {
  if (!object.is_object()) return invalid_field("Cluster", "expected an object");
  const Json* name = find_path(object, "metadata/name");
  if (name == nullptr || !name->is_string() || name->get<std::string>().empty()) {
    return invalid_field("Cluster", "metadata.name is required");
  }
  MemberCluster out{name->get<std::string>(), {}, {}};
  const std::string where = "Cluster " + out.name;
  if (const Json* labels = find_path(object, "metadata/labels");
      labels != nullptr && !labels->is_null()) {
    if (!labels->is_object())
      return invalid_field(where + ": metadata.labels", "expected an object");
    for (const auto& [k, v] : labels->items()) {
      if (!v.is_string()) {
        return invalid_field(std::string(where).append(": metadata.labels.").append(k),
                             "expected a string");
      }
      out.labels.emplace(k, v.get<std::string>());
    }
  }
  if (const Json* taints = find_path(object, "spec/taints"); taints != nullptr) {
    if (!taints->is_null() && !taints->is_array()) {
      return invalid_field(where + ": spec.taints", "expected a list");
    }
    out.taints = kube::taints_in(*taints);
  }
  return out;
}

SelectorMatch match(const PropagationPolicy& policy, const HubObject& object) {
  SelectorMatch best = SelectorMatch::kNone;
  // A PropagationPolicy governs objects of its own namespace only.
  if (!policy.ns.empty() && policy.ns != object.ns) return best;
  for (const auto& rs : policy.selectors) {
    if (rs.api_version != object.api_version || rs.kind != object.kind) continue;
    if (!rs.ns.empty() && rs.ns != object.ns) continue;
    SelectorMatch m = SelectorMatch::kNone;
    if (!rs.name.empty()) {  // the name decides; a label selector beside it is ignored
      m = rs.name == object.name ? SelectorMatch::kName : SelectorMatch::kNone;
    } else if (!rs.labels) {
      m = SelectorMatch::kAll;
    } else if (rs.labels->matches(object.labels)) {
      m = SelectorMatch::kLabels;
    }
    best = std::max(best, m);
  }
  return best;
}

const PropagationPolicy* governing_policy(const std::vector<PropagationPolicy>& policies,
                                          const HubObject& object) {
  for (bool cluster_scoped : {false, true}) {
    const PropagationPolicy* chosen = nullptr;
    SelectorMatch chosen_match = SelectorMatch::kNone;
    for (const auto& p : policies) {
      if (p.cluster_scoped() != cluster_scoped) continue;
      const SelectorMatch m = match(p, object);
      if (m == SelectorMatch::kNone) continue;
      // Higher priority, then a closer match, then the name that sorts first.
      if (chosen == nullptr ||
          std::make_tuple(p.priority, m, std::string_view(chosen->name)) >
              std::make_tuple(chosen->priority, chosen_match, std::string_view(p.name))) {
        chosen = &p;
        chosen_match = m;
      }
    }
    if (chosen != nullptr) return chosen;
  }
  return nullptr;
}

std::vector<std::string> allowed_clusters(const PropagationPolicy& policy,
                                          const std::vector<MemberCluster>& members) {
  const ClusterAffinity& a = policy.affinity;
  std::vector<std::string> out;
  for (const auto& m : members) {
    if (std::find(a.exclude.begin(), a.exclude.end(), m.name) != a.exclude.end()) continue;
    if (a.labels && !a.labels->matches(m.labels)) continue;
    if (!a.cluster_names.empty() &&
        std::find(a.cluster_names.begin(), a.cluster_names.end(), m.name) == a.cluster_names.end())
      continue;
    // A job's pods never see a cluster's taints: the policy's tolerations stand for them.
    if (!taints_tolerated(m.taints, {policy.cluster_tolerations})) continue;
    out.push_back(m.name);
  }
  return out;
}

}  // namespace gleaner::scheduler::fleet
