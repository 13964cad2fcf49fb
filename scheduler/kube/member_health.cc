// Whether a member cluster's API server answers. A member whose informers cannot list or
// watch, and whose node patches and binds fail to connect, must not receive new
// applications: their copies would never be created there, and the driver start timeout
// would only notice minutes later. The link's own calls say it at once; when none answered
// lately, a cheap probe (GET /version, which every API server serves to any client) asks.
#include <spdlog/spdlog.h>

#include "scheduler/kube/cluster_link.h"

namespace gleaner::scheduler::kube_glue {

namespace {

// Unanswered this long, the member is probed (about once per sweep while it stays away).
constexpr auto kApiProbe = std::chrono::seconds(3);

}  // namespace

void ClusterLink::check_api() {
  const auto now = clock_.now();
  if (api_available_ && now - last_answer_ < kApiProbe) return;
  if (now < next_probe_) return;
  next_probe_ = now + kApiProbe;
  auto r = client_.get("/version");
  // Any HTTP answer below 500 (a 404 from a server without /version too) is an answer.
  const bool answered = r.ok() || r.error().code != ErrorCode::kUnavailable;
  note_api(answered, answered ? "" : r.error().message);
}

void ClusterLink::note_api(bool answered, const std::string& why) {
  if (answered) last_answer_ = clock_.now();
  if (answered == api_available_) return;
  api_available_ = answered;
  metrics_.member_api_available(options_.name, answered);
  if (answered) {
    spdlog::info("cluster {}: its API server answers again; it takes new placements",
                 options_.name);
  } else {
    spdlog::warn(
        "cluster {}: its API server does not answer ({}); no new placement there "
        "until it does",
        options_.name, why);
  }
  live_.set_cluster_available(options_.name, answered);
}

}  // namespace gleaner::scheduler::kube_glue
