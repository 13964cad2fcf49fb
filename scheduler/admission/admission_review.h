#pragma once
// admission.k8s.io/v1 AdmissionReview for the colocation webhook: the request read and
// checked, the response built. A review that cannot be read is an error (the HTTP
// handler answers 400 and kube-apiserver applies the webhook's failurePolicy); a pod the
// webhook refuses is a response with allowed: false and a status naming why.

#include <string>

#include "common/json_util.h"
#include "common/result.h"
#include "scheduler/admission/colocation_mutation.h"

namespace gleaner::scheduler::admission {

struct AdmissionRequest {
  std::string uid;
  std::string kind;  // request.kind.kind ("Pod")
  std::string resource;
  std::string sub_resource;
  std::string operation;  // CREATE, UPDATE, ...
  std::string namespace_name;
  std::string name;
  bool dry_run = false;
  Json object;
};

Result<AdmissionRequest> parse_admission_review(const Json& review);

// What the webhook answered, for logs and metrics.
enum class Outcome { kSkipped, kUnchanged, kMutated, kDenied };
const char* to_string(Outcome outcome);

struct AdmissionResponse {
  Json review;  // the AdmissionReview to send back
  Outcome outcome = Outcome::kSkipped;
  std::string message;  // why it was denied, or what was applied
};

// The response for a pod CREATE (anything else is allowed unchanged). `in` supplies the
// profiles, the namespace's labels and PriorityClasses.
AdmissionResponse review_pod(const AdmissionRequest& request, const MutationInputs& in);

}  // namespace gleaner::scheduler::admission
