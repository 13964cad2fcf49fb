#include "scheduler/kube/colocation_source.h"

#include <spdlog/spdlog.h>

#include "scheduler/admission/priority_class.h"

namespace gleaner::scheduler::kube_glue {

namespace {

net::HttpReply json_reply(unsigned status, const Json& body) {
  return net::HttpReply{status, "application/json", dump_json(body) + "\n"};
}

std::string name_of(const Json& obj) {
  const Json* n = find_path(obj, "metadata/name");
  return n != nullptr && n->is_string() ? n->get<std::string>() : "";
}

std::string version_of(const Json& obj) {
  const Json* v = find_path(obj, "metadata/resourceVersion");
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

}  // namespace

ColocationSource::ColocationSource(kube::KubeClient& client, server::LiveMetrics& metrics,
                                   ColocationSourceOptions options)
    : metrics_(metrics), options_(std::move(options)) {
  auto on_change = kube::InformerHandlers{[this](const Json&) { refresh_profiles(); },
                                          [this](const Json&, const Json&) { refresh_profiles(); },
                                          [this](const Json&) { refresh_profiles(); }};
  kube::InformerOptions po;
  po.path = kube::colocation_profiles_path();
  profiles_ = std::make_unique<kube::Informer>(client, po, on_change);
  kube::InformerOptions no;
  no.path = kube::namespaces_path();
  namespaces_ = std::make_unique<kube::Informer>(client, no, kube::InformerHandlers{});
  kube::InformerOptions pco;
  pco.path = kube::priority_classes_path();
  priority_classes_ = std::make_unique<kube::Informer>(client, pco, kube::InformerHandlers{});
}

ColocationSource::~ColocationSource() {
  stop();
}

void ColocationSource::start() {
  profiles_->start();
  namespaces_->start();
  priority_classes_->start();
}

void ColocationSource::stop() {
  profiles_->stop();
  namespaces_->stop();
  priority_classes_->stop();
}

bool ColocationSource::synced() const {
  return profiles_->has_synced() && namespaces_->has_synced() && priority_classes_->has_synced();
}

void ColocationSource::refresh_profiles() {
  std::lock_guard lock(mu_);
  std::map<std::string, admission::ColocationProfile> next;
  for (const Json& obj : profiles_->list()) {
    const std::string name = name_of(obj);
    auto parsed = admission::parse_colocation_profile(obj);
    if (parsed) {
      if (in_force_.count(name) == 0 || refused_version_.count(name) != 0) {
        for (const auto& w : parsed->warnings)
          spdlog::warn("{}", w);
      }
      refused_version_.erase(name);
      next[name] = std::move(*parsed);
      continue;
    }
    if (refused_version_[name] != version_of(obj)) {
      refused_version_[name] = version_of(obj);
      metrics_.colocation_profile_rejected();
      spdlog::warn("{}{}", parsed.error().message,
                   in_force_.count(name) != 0 ? "; its last good version stays in force" : "");
    }
    if (auto old = in_force_.find(name); old != in_force_.end()) next[name] = old->second;
  }
  in_force_ = std::move(next);
  ordered_.clear();
  for (const auto& [name, p] : in_force_)
    ordered_.push_back(p);
}

net::HttpReply ColocationSource::handle(std::string_view body) {
  auto json = parse_json(body, "AdmissionReview");
  auto request = json ? admission::parse_admission_review(*json)
                      : Result<admission::AdmissionRequest>(json.error());
  if (!request) {
    metrics_.webhook_review("bad_request");
    return json_reply(400, Json{{"error", "bad_request"}, {"message", request.error().message}});
  }
  if (!synced()) {
    metrics_.webhook_review("not_ready");
    return json_reply(503,
                      Json{{"error", "not_ready"},
                           {"message", "profiles, namespaces and PriorityClasses not synced yet"}});
  }
  std::vector<admission::ColocationProfile> profiles;
  {
    std::lock_guard lock(mu_);
    profiles = ordered_;
  }
  admission::MutationInputs in;
  in.profiles = &profiles;
  in.batch_scheduler = options_.batch_scheduler;
  Labels own;
  if (auto ns = namespaces_->get(request->namespace_name)) {
    if (const Json* labels = find_path(*ns, "metadata/labels");
        labels != nullptr && labels->is_object()) {
      for (const auto& [k, v] : labels->items())
        if (v.is_string()) own[k] = v.get<std::string>();
    }
  }
  in.namespace_labels = admission::namespace_labels_of(request->namespace_name, own);
  in.priority_class =
      [this](const std::string& name) -> std::optional<admission::PriorityClassInfo> {
    auto obj = priority_classes_->get(name);
    if (!obj) return std::nullopt;
    auto parsed = admission::parse_priority_class(*obj);
    if (!parsed) return std::nullopt;
    return parsed->second;
  };
  const admission::AdmissionResponse answer = admission::review_pod(*request, in);
  metrics_.webhook_review(admission::to_string(answer.outcome));
  if (answer.outcome == admission::Outcome::kMutated ||
      answer.outcome == admission::Outcome::kDenied) {
    spdlog::info(
        "colocation webhook: pod {}/{} of cluster {}{}: {} ({})", request->namespace_name,
        request->name.empty() ? string_at(request->object, "metadata/generateName") : request->name,
        options_.cluster, request->dry_run ? " (dry run)" : "",
        admission::to_string(answer.outcome), answer.message);
  }
  return json_reply(200, answer.review);
}

}  // namespace gleaner::scheduler::kube_glue
