#include "kube/kubelet_client.h"

#include <spdlog/spdlog.h>

#include "kube/api_client.h"
#include "kube/watch_event.h"

namespace gleaner::kube {

KubeletClient::KubeletClient(KubeletOptions options, const Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      token_(options_.token, options_.https && options_.token.empty() ? options_.token_file : "") {
  TlsOptions tls;
  tls.verify = options_.verify_tls;
  tls.ca_file = options_.ca_file;
  conn_ = std::make_unique<HttpConnection>(
      net::HttpUrl{options_.https ? "https" : "http", options_.host, options_.port}, tls);
}

KubeletClient::~KubeletClient() = default;

Result<std::vector<Json>> KubeletClient::fetch() {
  const std::string what =
      "kubelet GET " + options_.host + ":" + std::to_string(options_.port) + "/pods";
  net::ClientRequest req{"GET", "/pods", {{"Accept", "application/json"}}, {}};
  if (options_.https) {
    auto token = token_.get();
    if (!token) return token.error();
    if (!token->empty()) req.headers.emplace_back("Authorization", "Bearer " + *token);
  }
  auto resp = conn_->request(req, {options_.timeout, options_.max_response_bytes});
  if (!resp) return resp.error();
  if (resp->status == 401) token_.invalidate();  // rotated token: the next call re-reads it
  if (resp->status != 200) return http_error(what, *resp);
  auto json = parse_json(resp->body, what);
  if (!json) return json.error();
  auto items = json->is_object() ? json->find("items") : json->end();
  if (!json->is_object() || json->value("kind", "") != "PodList") {
    return make_error(ErrorCode::kParse, what + ": expected a PodList");
  }
  std::vector<Json> pods;
  if (items != json->end() && !items->is_null()) {
    if (!items->is_array()) return make_error(ErrorCode::kParse, what + ": items must be a list");
    for (auto& pod : *items) {
      if (!pod.is_object() || !find_path(pod, "metadata/name")) {
        return make_error(ErrorCode::kParse, what + ": a pod has no metadata.name");
      }
      pods.push_back(std::move(pod));
    }
  }
  return pods;
}

Result<KubeletPods> KubeletClient::pods() {
  auto fresh = fetch();
  if (!fresh) {
    if (!have_good_) return fresh.error();
    spdlog::warn("kubelet: {}; using the pod list from before", fresh.error().describe());
    KubeletPods out = last_good_;
    out.stale = true;
    out.last_error = fresh.error().describe();
    return out;
  }
  if (fresh->empty() && have_good_ && !last_good_.pods.empty() &&
      ++empty_streak_ < options_.empty_confirmations) {
    KubeletPods out = last_good_;
    out.stale = true;
    out.last_error = "kubelet returned no pods (" + std::to_string(empty_streak_) + " of " +
                     std::to_string(options_.empty_confirmations) + " answers to believe it)";
    spdlog::warn("kubelet: {}", out.last_error);
    return out;
  }
  empty_streak_ = 0;
  last_good_ = KubeletPods{std::move(*fresh), false, "", clock_.now()};
  have_good_ = true;
  return last_good_;
}

}  // namespace gleaner::kube
