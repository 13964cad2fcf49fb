#include "scheduler/admission/colocation_mutation.h"

#include <algorithm>

#include "common/quantity.h"
#include "kube/objects.h"
#include "kube/well_known.h"

namespace gleaner::scheduler::admission {

namespace {

// RFC 6901: '~' is "~0" and '/' is "~1" inside a reference token.
std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// resources[list][name], or nullptr: resource names hold '/', so no path lookup.
const Json* resource_at(const Json& resources, const char* list, const std::string& name) {
  auto l = resources.find(list);
  if (l == resources.end() || !l->is_object()) return nullptr;
  auto r = l->find(name);
  return r == l->end() ? nullptr : &*r;
}

Json add_op(const std::string& path, Json value) {
  return Json{{"op", "add"}, {"path", path}, {"value", std::move(value)}};
}

Labels string_map_at(const Json& pod, const char* field) {
  Labels out;
  const Json* m = find_path(pod, std::string("metadata/") + field);
  if (m == nullptr || !m->is_object()) return out;
  for (const auto& [k, v] : m->items())
    if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

// Ops that make metadata.<field> hold every entry of `wanted` (others are left alone).
void patch_string_map(const Json& pod, const char* field, const Labels& wanted, Json& patch) {
  const Labels have = string_map_at(pod, field);
  const Json* existing = find_path(pod, std::string("metadata/") + field);
  if (existing == nullptr || !existing->is_object()) {
    if (!wanted.empty()) patch.push_back(add_op(std::string("/metadata/") + field, Json(wanted)));
    return;
  }
  for (const auto& [k, v] : wanted) {
    auto it = have.find(k);
    if (it == have.end() || it->second != v)
      patch.push_back(add_op(std::string("/metadata/") + field + "/" + pointer_token(k), v));
  }
}

struct Converted {
  Json resources;  // the container's new resources
  Json original;   // {"requests": {...}, "limits": {...}} of cpu and memory moved, or null
};

Result<std::optional<Quantity>> quantity_at(const Json& resources, const char* list,
                                            const char* name, const std::string& where) {
  const Json* q = resource_at(resources, list, name);
  if (q == nullptr || q->is_null()) return std::optional<Quantity>();
  auto parsed = quantity_from_json(*q, where + "." + list + "." + name);
  if (!parsed) return parsed.error();
  return std::optional<Quantity>(*parsed);
}

// cpu and memory of one container moved to batch resources; nullopt when it has none.
Result<std::optional<Converted>> convert_container(const Json& container,
                                                   const std::string& where) {
  if (!container.is_object())
    return make_error(ErrorCode::kParse, where + ": the container is not an object");
  const Json resources = container.value("resources", Json::object());
  if (!resources.is_object()) return make_error(ErrorCode::kParse, where + " is not an object");
  struct Pair {
    const char* from;
    const char* to;
    bool millis;
  };
  const Pair pairs[] = {{kube::kResourceCpu, kube::kResourceBatchCpu, true},
                        {kube::kResourceMemory, kube::kResourceBatchMemory, false}};
  Converted out{resources, Json(nullptr)};
  bool changed = false;
  for (const Pair& p : pairs) {
    auto request = quantity_at(resources, "requests", p.from, where);
    if (!request) return request.error();
    auto limit = quantity_at(resources, "limits", p.from, where);
    if (!limit) return limit.error();
    if (!*request && !*limit) continue;
    // The API server refuses a request above its limit (ValidateResourceRequirements); say
    // so here, naming the container, rather than let a batch request above its limit fail
    // later as a less clear 422.
    if (*request && *limit && **request > **limit) {
      return make_error(ErrorCode::kInvalidArgument,
                        where + ".requests." + p.from + " " + (*request)->to_string() +
                            " is above its limit " + (*limit)->to_string());
    }
    changed = true;
    for (const char* list : {"requests", "limits"}) {
      const auto& q = std::string_view(list) == "requests" ? *request : *limit;
      if (!q) continue;
      out.original[list][p.from] = q->to_string();
      out.resources[list].erase(p.from);
    }
    // Requests to requests, limits to limits, as Koordinator's webhook maps them: a limit
    // above the request (Spark's coreLimit) stays a limit. The API allows that for
    // kubernetes.io/ names, which it counts as native resources (IsOvercommitAllowed);
    // only other extended resources must have limit equal to request. A missing side
    // takes the other's value, also as Koordinator does: the API defaults a missing
    // request to the limit, and the agent bounds a batch pod by its batch limits. Batch
    // values already there (a pod that carried both) are kept.
    auto batch = [&](const std::optional<Quantity>& q) {
      return std::to_string(p.millis ? q->milli_value() : q->value());
    };
    const std::string request_value = batch(*request ? *request : *limit);
    const std::string limit_value = batch(*limit ? *limit : *request);
    const std::pair<const char*, const std::string*> lists[] = {{"requests", &request_value},
                                                                {"limits", &limit_value}};
    for (const auto& [list, value] : lists) {
      const Json* existing = resource_at(resources, list, p.to);
      out.resources[list][p.to] =
          existing != nullptr && existing->is_string() ? existing->get<std::string>() : *value;
    }
  }
  if (!changed) return std::optional<Converted>();
  for (const char* list : {"requests", "limits"})
    if (out.resources.contains(list) && out.resources[list].empty()) out.resources.erase(list);
  return std::optional<Converted>(std::move(out));
}

// What a batch pod left to another scheduler means, and what to do about it, for the
// answer's warnings. koord-scheduler gets its own hint: Koordinator's ClusterColocationProfile
// example sets it, and a cluster moving to Gleaner often has no koord-scheduler running,
// so its pods would stay Pending with nothing said.
std::string other_scheduler_warning(const std::string& field, const std::string& other,
                                    const std::string& batch_scheduler, const std::string& fix) {
  std::string w = field + " is " + other + ": this batch pod is placed by " + other + ", not by " +
                  batch_scheduler + " (no gang of driver and executors, no batch room reserved)";
  if (other == kube::kKoordScheduler)
    w += "; koord-scheduler is Koordinator's scheduler: unless it runs in this cluster the pod "
         "stays Pending";
  return w + "; " + fix;
}

// The scheduler of a batch pod: `batch_scheduler` when neither its profiles nor the pod
// name one, or the pod names the default one (Spark's operator leaves it unset without
// spec.batchScheduler or spec.schedulerName, ACK's guide among them); a pod or profile
// naming another scheduler (batchScheduler: volcano, Koordinator's example profile's
// koord-scheduler) keeps it, and the answer says that no gang of batch_scheduler's holds
// its room and what to change.
void route_batch_pod(const Json& spec, const std::string& from_profiles,
                     const std::string& profile_name, const std::string& batch_scheduler,
                     Mutation& m) {
  if (batch_scheduler.empty()) return;
  if (!from_profiles.empty()) {
    if (from_profiles != batch_scheduler) {
      m.warnings.push_back(other_scheduler_warning(
          "ClusterColocationProfile " + profile_name + " spec.schedulerName", from_profiles,
          batch_scheduler,
          "remove spec.schedulerName from the profile (or set it to " + batch_scheduler +
              ") to have " + batch_scheduler + " place it"));
    }
    return;
  }
  const std::string own = string_at(spec, "schedulerName");
  if (own.empty() || own == kube::kDefaultScheduler) {
    m.patch.push_back(add_op("/spec/schedulerName", batch_scheduler));
    m.scheduler_assigned = true;
  } else if (own != batch_scheduler) {
    m.warnings.push_back(other_scheduler_warning(
        "spec.schedulerName", own, batch_scheduler,
        "leave it unset (Spark: no spec.batchScheduler) to have " + batch_scheduler + " place it"));
  }
}

}  // namespace

Labels namespace_labels_of(const std::string& ns, Labels own) {
  own["kubernetes.io/metadata.name"] = ns;
  return own;
}

Result<Mutation> mutate_pod(const Json& pod, const MutationInputs& in) {
  Mutation m;
  if (!pod.is_object()) return make_error(ErrorCode::kParse, "the pod is not a JSON object");
  const Labels pod_labels = string_map_at(pod, "labels");
  const Labels pod_annotations = string_map_at(pod, "annotations");
  if (auto a = pod_annotations.find(kube::kAckColocationAnnotation);
      a != pod_annotations.end() && a->second == "true") {
    m.ack_annotation = true;
  }

  std::vector<const ColocationProfile*> matched;
  if (in.profiles != nullptr) {
    for (const ColocationProfile& p : *in.profiles) {
      if (p.namespace_selector.matches(in.namespace_labels) && p.selector.matches(pod_labels))
        matched.push_back(&p);
    }
  }
  std::sort(
      matched.begin(), matched.end(),
      [](const ColocationProfile* a, const ColocationProfile* b) { return a->name < b->name; });
  if (matched.empty() && !m.ack_annotation) return m;

  Labels labels;
  Labels annotations;
  std::string qos = m.ack_annotation ? "BE" : "";
  std::string priority_class;
  std::string priority_class_from;
  std::string scheduler;
  std::string scheduler_from;
  for (const ColocationProfile* p : matched) {
    m.profiles.push_back(p->name);
    m.warnings.insert(m.warnings.end(), p->warnings.begin(), p->warnings.end());
    for (const auto& [k, v] : p->labels)
      labels[k] = v;
    for (const auto& [k, v] : p->annotations)
      annotations[k] = v;
    if (!p->qos_class.empty()) qos = p->qos_class;
    if (p->koordinator_priority)
      labels[kube::kKoordPriorityLabel] = std::to_string(*p->koordinator_priority);
    if (!p->priority_class_name.empty()) {
      priority_class = p->priority_class_name;
      priority_class_from = p->name;
    }
    if (!p->scheduler_name.empty()) {
      scheduler = p->scheduler_name;
      scheduler_from = p->name;
    }
  }
  if (!qos.empty()) labels[kube::kQosClassLabel] = qos;
  // The pod's own QoS label counts when no profile sets one.
  const auto own_qos = pod_labels.find(kube::kQosClassLabel);
  const std::string final_qos =
      !qos.empty() ? qos : (own_qos == pod_labels.end() ? std::string() : own_qos->second);

  const Json spec = pod.value("spec", Json::object());
  if (!spec.is_object()) return make_error(ErrorCode::kParse, "spec is not an object");
  Json& patch = m.patch;
  if (!scheduler.empty() && string_at(spec, "schedulerName") != scheduler)
    patch.push_back(add_op("/spec/schedulerName", scheduler));
  if (!priority_class.empty() && string_at(spec, "priorityClassName") != priority_class) {
    const auto info = in.priority_class ? in.priority_class(priority_class) : std::nullopt;
    if (!info) {
      return make_error(ErrorCode::kInvalidArgument, "PriorityClass " + priority_class +
                                                         " (from ClusterColocationProfile " +
                                                         priority_class_from + ") does not exist");
    }
    patch.push_back(add_op("/spec/priorityClassName", priority_class));
    // kube-apiserver's Priority plugin resolved the old class before the webhooks ran:
    // the value and preemption policy are set here to the new class's.
    patch.push_back(add_op("/spec/priority", info->value));
    patch.push_back(add_op("/spec/preemptionPolicy", info->preemption_policy));
  }

  if (final_qos == "BE") {
    route_batch_pod(spec, scheduler, scheduler_from, in.batch_scheduler, m);
    Json original = Json::object();
    for (const char* list : {"initContainers", "containers"}) {
      if (!spec.contains(list)) continue;
      if (!spec[list].is_array())
        return make_error(ErrorCode::kParse, std::string("spec.") + list + " is not a list");
      for (size_t i = 0; i < spec[list].size(); ++i) {
        const Json& c = spec[list][i];
        const std::string where =
            std::string("spec.") + list + "[" + std::to_string(i) + "].resources";
        auto converted = convert_container(c, where);
        if (!converted) return converted.error();
        if (!*converted) continue;
        m.converted = true;
        patch.push_back(
            add_op(std::string("/spec/") + list + "/" + std::to_string(i) + "/resources",
                   (*converted)->resources));
        original["containers"][string_at(c, "name", std::to_string(i))] = (*converted)->original;
      }
    }
    if (m.converted) annotations[kExtendedResourceSpecAnnotation] = dump_json(original);
    if (spec.contains("overhead") && spec["overhead"].is_object() && !spec["overhead"].empty()) {
      m.warnings.push_back("spec.overhead (" + dump_json(spec["overhead"]) +
                           ") stays on the node's regular allocatable");
    }
  }
  // Labels and annotations last: a reinvocation compares against what is there.
  patch_string_map(pod, "labels", labels, patch);
  patch_string_map(pod, "annotations", annotations, patch);
  return m;
}

}  // namespace gleaner::scheduler::admission
