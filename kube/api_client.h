#pragma once
// The Kubernetes API client: typed verbs over HttpConnection with the bearer token, the
// client-side rate limit and error mapping. HTTP answers become Result errors:
//   404 kNotFound, 409 kConflict, 429 kRetryLater, 400/422/415 kInvalidArgument,
//   401/403 kPermission, 410 kUnavailable (message "410 Expired", or "410 Gone" from
//   servers before 1.18), 5xx kUnavailable (504 kTimeout),
//   timeouts kTimeout, malformed bodies kParse.
// A 401 re-reads the token file once and retries (rotated ServiceAccount tokens). A 429, or a
// 5xx with Retry-After (the API server's max-in-flight and priority-and-fairness filters),
// is retried after the seconds the server asks for, up to 10 times, as client-go's rest
// client does, but only while the wait fits in the call's time budget (the configured
// timeout, or the call's own): past that the caller gets the answer's own code (kRetryLater
// for a 429, kUnavailable or kTimeout for a 5xx) and the server's wait (retry_after_of).
// Thread-safe: each call borrows a connection from a small keep-alive pool.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/json_util.h"
#include "common/result.h"
#include "kube/config.h"
#include "kube/http_client.h"
#include "kube/rate_limiter.h"
#include "kube/watch_event.h"
#include "net/token_source.h"

namespace gleaner::kube {

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;  // page size; 0 = everything in one answer
  std::string continue_token;
  std::string resource_version;  // "" = most recent (a quorum read)
};

struct ListPage {
  std::vector<Json> items;
  std::string resource_version;
  std::string continue_token;
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // start after this version ("" = current state, then changes)
  bool bookmarks = true;
  std::chrono::seconds server_timeout{300};  // the server ends the watch after this
};

enum class PatchType { kMerge, kJsonPatch };
const char* content_type(PatchType type);

// A v1 Event about an object (kubectl describe shows these).
struct EventRecord {
  std::string namespace_;
  Json involved_object;         // {kind, namespace, name, uid, apiVersion}
  std::string type = "Normal";  // Normal | Warning
  std::string reason;
  std::string message;
  std::string component = "gleaner";
  std::string host;
};

class WatchStream {
 public:
  WatchStream(std::unique_ptr<HttpStream> stream, std::size_t max_event_bytes,
              std::chrono::milliseconds idle_timeout, std::string what);
  // The next event; nullopt when the server ended the watch cleanly. A broken or truncated
  // stream is kIo, a silent one kTimeout, an undecodable line kParse: all mean "re-watch".
  Result<std::optional<WatchEvent>> next();
  // Wakes a blocked next() from another thread (it then returns kUnavailable).
  void interrupt() { stream_->interrupt(); }

 private:
  std::unique_ptr<HttpStream> stream_;
  LineBuffer lines_;
  std::chrono::milliseconds idle_timeout_;
  std::string what_;
  bool ended_ = false;
};

class KubeClient {
 public:
  KubeClient(KubeConfig config, const Clock& clock);
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  // `timeout` on the calls that take one: the whole call's budget, retries included
  // (0: the configured timeout); a caller with a deadline of its own (a Lease renewal)
  // passes what is left of it.
  Result<Json> get(const std::string& path);
  // GET of one object: nullopt when the server says that very object does not exist (a
  // NotFound Status naming it). A 404 naming no object (the resource is not served: a CRD
  // not installed, a wrong API version) stays a kNotFound error, so a caller never takes a
  // missing route for a deleted object.
  Result<std::optional<Json>> find(const std::string& path, std::chrono::milliseconds timeout = {});
  Result<ListPage> list(const std::string& path, const ListOptions& options);
  // Follows continue tokens; restarts once from scratch if a token expired (410).
  Result<ListPage> list_all(const std::string& path, ListOptions options);
  Result<std::unique_ptr<WatchStream>> watch(const std::string& path, const WatchOptions& options);
  Result<Json> create(const std::string& path, const Json& object,
                      std::chrono::milliseconds timeout = {});
  // PUT: the object's resourceVersion is the precondition.
  Result<Json> replace(const std::string& path, const Json& object,
                       std::chrono::milliseconds timeout = {});
  Result<Json> patch(const std::string& path, const Json& patch, PatchType type);
  // DELETE; with `uid`, a DeleteOptions precondition makes the server refuse (kConflict)
  // an object re-created under the same name since the caller looked at it.
  Status remove(const std::string& path, const std::string& uid = "");

  // POST pods/{name}/binding with a v1 Binding; `uid` makes the server refuse a pod that was
  // deleted and re-created under the same name (kConflict).
  Status bind_pod(const std::string& ns, const std::string& name, const std::string& uid,
                  const std::string& node);
  // POST pods/{name}/eviction (policy/v1). kRetryLater: a PodDisruptionBudget refused for now.
  Status evict_pod(const std::string& ns, const std::string& name,
                   std::optional<int64_t> grace_period_seconds = std::nullopt);
  Status create_event(const EventRecord& event);

  [[nodiscard]] const KubeConfig& config() const { return config_; }
  // Answers retried because the server asked to wait (429, or 5xx with Retry-After).
  [[nodiscard]] uint64_t server_retries() const { return throttled_.load(); }

  static constexpr int kMaxServerRetries = 10;  // client-go's default maxRetries

 private:
  Result<HttpResponse> send(net::ClientRequest req, std::chrono::milliseconds timeout = {});
  Result<Json> call(const std::string& method, const std::string& path, const Json* body,
                    const std::string& content_type = "application/json",
                    std::chrono::milliseconds timeout = {});
  [[nodiscard]] std::chrono::milliseconds budget(std::chrono::milliseconds timeout) const;
  // After an answer that asks to wait: waits and says true when another attempt fits in
  // `deadline` and the retries allow it.
  bool wait_for_server(const net::ClientRequest& req, const HttpResponse& resp, int& retries,
                       std::chrono::steady_clock::time_point deadline);
  std::unique_ptr<HttpConnection> borrow();
  void give_back(std::unique_ptr<HttpConnection> conn);

  KubeConfig config_;
  const Clock& clock_;
  net::TokenSource token_;
  RateLimiter limiter_;
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<HttpConnection>> pool_;
  std::atomic<uint64_t> throttled_{0};
};

// The error for a non-2xx answer, with the Status object's reason and message when present.
Error http_error(const std::string& what, const HttpResponse& response);
// The wait the server asked for with an error's answer (429, or 5xx with Retry-After).
std::optional<std::chrono::seconds> retry_after_of(const Error& error);

// Object paths.
std::string pods_path(const std::string& ns);  // ns "" = all namespaces
std::string pod_path(const std::string& ns, const std::string& name);
std::string daemon_set_path(const std::string& ns, const std::string& name);
std::string nodes_path();
std::string namespaces_path();
std::string secret_path(const std::string& ns, const std::string& name);
std::string priority_classes_path();
std::string mutating_webhook_configuration_path(const std::string& name);
std::string colocation_profiles_path();                       // config.koordinator.sh/v1alpha1
std::string elastic_quota_trees_path(const std::string& ns);  // ns "" = all namespaces
std::string node_path(const std::string& name);
std::string node_status_path(const std::string& name);
std::string events_path(const std::string& ns);
inline constexpr const char* kSparkApiVersion = "sparkoperator.k8s.io/v1beta2";
std::string spark_applications_path(const std::string& ns);
std::string spark_application_path(const std::string& ns, const std::string& name);

}  // namespace gleaner::kube
