#pragma once
// What the colocation webhook decides with for the pods of one cluster, kept live from that
// cluster's API server (a fleet's members each have their own):
// ClusterColocationProfiles, Namespaces (for namespaceSelector) and PriorityClasses,
// each by its own informer. A profile that fails to parse is refused (logged once per
// version, counted, and, when it was valid before, its last good version stays in force);
// the rest of the set is unaffected. Reviews are answered only once all three informers
// have synced: before that a pod could be admitted without the profile that should
// have applied to it.

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kube/api_client.h"
#include "kube/informer.h"
#include "net/http_reply.h"
#include "scheduler/admission/admission_review.h"
#include "scheduler/admission/colocation_profile.h"
#include "scheduler/server/live_metrics.h"

namespace gleaner::scheduler::kube_glue {

struct ColocationSourceOptions {
  std::string cluster;          // for log lines
  std::string batch_scheduler;  // MutationInputs::batch_scheduler
};

class ColocationSource {
 public:
  ColocationSource(kube::KubeClient& client, server::LiveMetrics& metrics,
                   ColocationSourceOptions options);
  ~ColocationSource();
  ColocationSource(const ColocationSource&) = delete;
  ColocationSource& operator=(const ColocationSource&) = delete;

  void start();
  void stop();
  [[nodiscard]] bool synced() const;

  // The HTTP answer for one AdmissionReview body: 200 with the review response, 400 for
  // a review it cannot read, 503 before the informers have synced.
  net::HttpReply handle(std::string_view body);

 private:
  void refresh_profiles();

  server::LiveMetrics& metrics_;
  ColocationSourceOptions options_;
  std::unique_ptr<kube::Informer> profiles_;
  std::unique_ptr<kube::Informer> namespaces_;
  std::unique_ptr<kube::Informer> priority_classes_;
  mutable std::mutex mu_;
  // By name: the version in force, and the resourceVersion last refused (logged once).
  std::map<std::string, admission::ColocationProfile> in_force_;
  std::map<std::string, std::string> refused_version_;
  std::vector<admission::ColocationProfile> ordered_;
};

}  // namespace gleaner::scheduler::kube_glue
