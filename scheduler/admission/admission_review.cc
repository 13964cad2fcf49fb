#include "scheduler/admission/admission_review.h"

#include <algorithm>

#include "kube/config.h"
#include "kube/well_known.h"

namespace gleaner::scheduler::admission {

namespace {

Result<std::string> review_string(const Json& review, const char* path, bool required) {
  const Json* v = find_path(review, path);
  std::string field(path);  // named as the API documents it: request.uid
  std::replace(field.begin(), field.end(), '/', '.');
  if (v == nullptr || v->is_null()) {
    if (required) return make_error(ErrorCode::kParse, "AdmissionReview: " + field + " is missing");
    return std::string();
  }
  if (!v->is_string())
    return make_error(ErrorCode::kParse, "AdmissionReview: " + field + " is not a string");
  return v->get<std::string>();
}

Json response_review(const std::string& uid, Json response) {
  response["uid"] = uid;
  return Json{{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"response", std::move(response)}};
}

}  // namespace

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::kSkipped:
      return "skipped";
    case Outcome::kUnchanged:
      return "unchanged";
    case Outcome::kMutated:
      return "mutated";
    case Outcome::kDenied:
      return "denied";
  }
  return "unknown";
}

Result<AdmissionRequest> parse_admission_review(const Json& review) {
  if (!review.is_object())
    return make_error(ErrorCode::kParse, "AdmissionReview: not a JSON object");
  if (gleaner::string_at(review, "kind") != "AdmissionReview")
    return make_error(ErrorCode::kParse, "AdmissionReview: kind is not AdmissionReview");
  const std::string api_version = gleaner::string_at(review, "apiVersion");
  if (api_version != "admission.k8s.io/v1") {
    return make_error(ErrorCode::kParse,
                      "AdmissionReview: apiVersion " + api_version +
                          " is not admission.k8s.io/v1 (set admissionReviewVersions: [v1])");
  }
  if (!review.contains("request") || !review["request"].is_object())
    return make_error(ErrorCode::kParse, "AdmissionReview: request is missing");
  AdmissionRequest r;
  struct Field {
    const char* path;
    std::string* out;
    bool required;
  };
  const Field fields[] = {{"request/uid", &r.uid, true},
                          {"request/kind/kind", &r.kind, true},
                          {"request/resource/resource", &r.resource, true},
                          {"request/subResource", &r.sub_resource, false},
                          {"request/operation", &r.operation, true},
                          {"request/namespace", &r.namespace_name, false},
                          {"request/name", &r.name, false}};
  for (const Field& f : fields) {
    auto v = review_string(review, f.path, f.required);
    if (!v) return v.error();
    *f.out = std::move(*v);
  }
  if (r.uid.empty()) return make_error(ErrorCode::kParse, "AdmissionReview: request.uid is empty");
  if (const Json* d = find_path(review, "request/dryRun"); d != nullptr && !d->is_null()) {
    if (!d->is_boolean())
      return make_error(ErrorCode::kParse, "AdmissionReview: request.dryRun is not a boolean");
    r.dry_run = d->get<bool>();
  }
  r.object = review["request"].value("object", Json(nullptr));
  return r;
}

AdmissionResponse review_pod(const AdmissionRequest& request, const MutationInputs& in) {
  AdmissionResponse out;
  if (request.kind != "Pod" || request.resource != "pods" || !request.sub_resource.empty() ||
      request.operation != "CREATE" || !request.object.is_object()) {
    out.review = response_review(request.uid, Json{{"allowed", true}});
    return out;
  }
  auto mutation = mutate_pod(request.object, in);
  if (!mutation) {
    out.outcome = Outcome::kDenied;
    out.message = mutation.error().message;
    out.review =
        response_review(request.uid, Json{{"allowed", false},
                                          {"status",
                                           {{"code", 400},
                                            {"reason", "BadRequest"},
                                            {"message", "gleaner colocation: " + out.message}}}});
    return out;
  }
  Json response{{"allowed", true}};
  if (!mutation->warnings.empty()) response["warnings"] = mutation->warnings;
  if (mutation->patch.empty()) {
    out.outcome = mutation->profiles.empty() && !mutation->ack_annotation ? Outcome::kSkipped
                                                                          : Outcome::kUnchanged;
  } else {
    out.outcome = Outcome::kMutated;
    response["patchType"] = "JSONPatch";
    response["patch"] = kube::base64_encode(dump_json(mutation->patch));
  }
  std::string how;
  for (const auto& p : mutation->profiles)
    how += (how.empty() ? "profile " : ", profile ") + p;
  if (mutation->ack_annotation)
    how += std::string(how.empty() ? "" : ", ") + kube::kAckColocationAnnotation;
  out.message = how + (mutation->converted ? "; resources moved to batch" : "") +
                (mutation->scheduler_assigned ? "; scheduler " + in.batch_scheduler : "");
  out.review = response_review(request.uid, std::move(response));
  return out;
}

}  // namespace gleaner::scheduler::admission
