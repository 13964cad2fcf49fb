#include "kube/api_client.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/time_format.h"
#include "kube/selectors.h"

namespace gleaner::kube {

namespace {

ErrorCode code_for_status(int status) {
  switch (status) {
    case 400:
    case 415:
    case 422:
      return ErrorCode::kInvalidArgument;
    case 401:
    case 403:
      return ErrorCode::kPermission;
    case 404:
      return ErrorCode::kNotFound;
    case 409:
      return ErrorCode::kConflict;
    case 429:
      return ErrorCode::kRetryLater;
    case 504:
      return ErrorCode::kTimeout;
    default:
      return status >= 500 || status == 410 ? ErrorCode::kUnavailable : ErrorCode::kInternal;
  }
}

bool is_expired(const Error& e) {
  return e.message.find(": 410 ") != std::string::npos;
}

}  // namespace

const char* content_type(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJsonPatch:
      return "application/json-patch+json";
  }
  return "application/merge-patch+json";
}

Error http_error(const std::string& what, const HttpResponse& response) {
  std::string detail = std::to_string(response.status);
  Json status = Json::parse(response.body, nullptr, false);
  if (status.is_object() && status.value("kind", "") == "Status") {
    detail.append(" ").append(status.value("reason", "")).append(": ");
    detail.append(status.value("message", ""));
  } else if (!response.body.empty()) {
    detail.append(": ").append(response.body.substr(0, 200));
  }
  if (!response.retry_after.empty()) {
    detail.append(" (retry after ").append(response.retry_after).append("s)");
  }
  return make_error(code_for_status(response.status), what + ": " + detail);
}

WatchStream::WatchStream(std::unique_ptr<HttpStream> stream, std::size_t max_event_bytes,
                         std::chrono::milliseconds idle_timeout, std::string what)
    : stream_(std::move(stream)),
      lines_(max_event_bytes),
      idle_timeout_(idle_timeout),
      what_(std::move(what)) {}

Result<std::optional<WatchEvent>> WatchStream::next() {
  while (true) {
    if (auto line = lines_.next_line()) {
      auto event = decode_watch_event(*line);
      if (!event) return make_error(ErrorCode::kParse, what_ + ": " + event.error().message);
      return std::optional<WatchEvent>(std::move(*event));
    }
    if (ended_) {
      if (lines_.pending() > 0) {
        return make_error(ErrorCode::kIo, what_ + ": stream ended inside an event (" +
                                              std::to_string(lines_.pending()) + " bytes)");
      }
      return std::optional<WatchEvent>();
    }
    auto bytes = stream_->read_some(idle_timeout_);
    if (!bytes) return make_error(bytes.error().code, what_ + ": " + bytes.error().message);
    if (bytes->empty()) {
      ended_ = true;
      continue;
    }
    if (auto st = lines_.append(*bytes); !st)
      return make_error(st.error().code, what_ + ": " + st.error().message);
  }
}

KubeClient::KubeClient(KubeConfig config, const Clock& clock)
    : config_(std::move(config)),
      clock_(clock),
      token_(config_.token, config_.token_file),
      limiter_(config_.qps, config_.burst, clock) {}
KubeClient::~KubeClient() = default;

std::unique_ptr<HttpConnection> KubeClient::borrow() {
  {
    std::lock_guard lock(pool_mu_);
    if (!pool_.empty()) {
      auto conn = std::move(pool_.back());
      pool_.pop_back();
      return conn;
    }
  }
  return std::make_unique<HttpConnection>(config_.endpoint, config_.tls);
}

void KubeClient::give_back(std::unique_ptr<HttpConnection> conn) {
  std::lock_guard lock(pool_mu_);
  if (pool_.size() < 4) pool_.push_back(std::move(conn));
}

static std::optional<std::chrono::seconds> server_wait(const HttpResponse& response) {
  // client-go's checkWait (rest/with_retry.go): a 429, or any 5xx, that carries
  // Retry-After in whole seconds. kube-apiserver's max-in-flight and APF filters
  // (server/filters/maxinflight.go, priority-and-fairness.go) answer 429 with
  // "Retry-After: 1".
  if (response.status != 429 && response.status < 500) return std::nullopt;
  const std::string& v = response.retry_after;
  if (v.empty() || v.size() > 6 ||
      !std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
    return std::nullopt;
  return std::chrono::seconds(std::stoi(v));
}

std::optional<std::chrono::seconds> retry_after_of(const Error& error) {
  static constexpr std::string_view kMark = "(retry after ";
  const auto at = error.message.rfind(kMark);
  if (at == std::string::npos) return std::nullopt;
  HttpResponse r;
  r.status = 429;
  const auto digits = at + kMark.size();
  r.retry_after = error.message.substr(digits, error.message.find('s', digits) - digits);
  return server_wait(r);
}

std::chrono::milliseconds KubeClient::budget(std::chrono::milliseconds timeout) const {
  return timeout.count() > 0 ? timeout : config_.timeout;
}

bool KubeClient::wait_for_server(const net::ClientRequest& req, const HttpResponse& resp,
                                 int& retries, std::chrono::steady_clock::time_point deadline) {
  const auto wait = server_wait(resp);
  if (!wait || retries >= kMaxServerRetries || std::chrono::steady_clock::now() + *wait >= deadline)
    return false;
  ++retries;
  throttled_.fetch_add(1);
  spdlog::debug("kube: {} {} answered {}; retrying after {} s as asked ({} of {})", req.method,
                req.target, resp.status, wait->count(), retries, kMaxServerRetries);
  std::this_thread::sleep_for(*wait);
  return true;
}

Result<HttpResponse> KubeClient::send(net::ClientRequest req, std::chrono::milliseconds timeout) {
  req.headers.emplace_back("Accept", "application/json");
  const auto deadline = std::chrono::steady_clock::now() + budget(timeout);
  bool token_reread = false;
  int retries = 0;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return make_error(ErrorCode::kTimeout, req.method + " " + req.target + ": timed out");
    }
    auto token = token_.get();
    if (!token) return token.error();
    net::ClientRequest r = req;
    if (!token->empty()) r.headers.emplace_back("Authorization", "Bearer " + *token);
    limiter_.acquire();
    auto conn = borrow();
    auto resp = conn->request(r, {left, config_.max_response_bytes});
    if (!resp) return resp.error();
    give_back(std::move(conn));
    if (resp->status == 401 && !token_reread && !config_.token_file.empty()) {
      spdlog::warn("kube: {} {} answered 401; re-reading the token file {}", req.method, req.target,
                   config_.token_file);
      token_.invalidate();
      token_reread = true;
      continue;
    }
    if (wait_for_server(req, *resp, retries, deadline)) continue;
    return resp;
  }
}

Result<Json> KubeClient::call(const std::string& method, const std::string& path, const Json* body,
                              const std::string& ctype, std::chrono::milliseconds timeout) {
  net::ClientRequest req{method, path, {}, {}};
  if (body != nullptr) {
    req.body = body->dump();
    req.headers.emplace_back("Content-Type", ctype);
  }
  auto resp = send(std::move(req), timeout);
  const std::string what = method + " " + path;
  if (!resp) return resp.error();
  if (resp->status < 200 || resp->status > 299) return http_error(what, *resp);
  return parse_json(resp->body, what);
}

Result<Json> KubeClient::get(const std::string& path) {
  return call("GET", path, nullptr);
}

Result<std::optional<Json>> KubeClient::find(const std::string& path,
                                             std::chrono::milliseconds timeout) {
  auto resp = send(net::ClientRequest{"GET", path, {}, {}}, timeout);
  const std::string what = "GET " + path;
  if (!resp) return resp.error();
  if (resp->status == 404) {
    const Json status = Json::parse(resp->body, nullptr, false);
    const Json* named = status.is_object() ? find_path(status, "details/name") : nullptr;
    const std::string name = path.substr(path.rfind('/') + 1);
    if (named != nullptr && named->is_string() && *named == name) return std::optional<Json>();
  }
  if (resp->status < 200 || resp->status > 299) return http_error(what, *resp);
  auto json = parse_json(resp->body, what);
  if (!json) return json.error();
  return std::optional<Json>(std::move(*json));
}

Result<ListPage> KubeClient::list(const std::string& path, const ListOptions& o) {
  const std::string target =
      path + query_string({{"labelSelector", o.label_selector},
                           {"fieldSelector", o.field_selector},
                           {"limit", o.limit > 0 ? std::to_string(o.limit) : ""},
                           {"continue", o.continue_token},
                           {"resourceVersion", o.resource_version}});
  auto json = call("GET", target, nullptr);
  if (!json) return json.error();
  auto fail = [&](const std::string& why) {
    return make_error(ErrorCode::kParse, "GET " + target + ": " + why);
  };
  if (!json->is_object()) return fail("a list answer must be an object");
  ListPage page;
  const Json* rv = find_path(*json, "metadata/resourceVersion");
  if (rv == nullptr || !rv->is_string()) return fail("list has no metadata.resourceVersion");
  page.resource_version = rv->get<std::string>();
  if (const Json* cont = find_path(*json, "metadata/continue"); cont && cont->is_string()) {
    page.continue_token = cont->get<std::string>();
  }
  auto items = json->find("items");
  if (items != json->end() && !items->is_null()) {
    if (!items->is_array()) return fail("items must be a list");
    for (auto& item : *items) {
      if (!item.is_object() || !find_path(item, "metadata/name"))
        return fail("an item has no metadata.name");
      page.items.push_back(std::move(item));
    }
  }
  return page;
}

Result<ListPage> KubeClient::list_all(const std::string& path, ListOptions options) {
  for (int restart = 0;; ++restart) {
    ListPage all;
    if (restart > 0) options.continue_token.clear();
    while (true) {
      auto page = list(path, options);
      if (!page) {
        if (restart == 0 && is_expired(page.error())) {
          // The snapshot behind the continue token was compacted away: start over.
          spdlog::info("kube: {}: continue token expired; listing again", path);
          break;
        }
        return page.error();
      }
      for (auto& item : page->items)
        all.items.push_back(std::move(item));
      if (all.resource_version.empty()) all.resource_version = page->resource_version;
      if (page->continue_token.empty()) return all;
      options.continue_token = page->continue_token;
    }
  }
}

Result<std::unique_ptr<WatchStream>> KubeClient::watch(const std::string& path,
                                                       const WatchOptions& o) {
  const std::string target =
      path + query_string({{"watch", "true"},
                           {"labelSelector", o.label_selector},
                           {"fieldSelector", o.field_selector},
                           {"resourceVersion", o.resource_version},
                           {"allowWatchBookmarks", o.bookmarks ? "true" : ""},
                           {"timeoutSeconds", std::to_string(o.server_timeout.count())}});
  const std::string what = "watch " + target;
  const auto deadline = std::chrono::steady_clock::now() + config_.timeout;
  int retries = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto token = token_.get();
    if (!token) return token.error();
    net::ClientRequest req{"GET", target, {{"Accept", "application/json"}}, {}};
    if (!token->empty()) req.headers.emplace_back("Authorization", "Bearer " + *token);
    limiter_.acquire();
    HttpConnection conn(config_.endpoint, config_.tls);
    auto open = conn.open_stream(req, {config_.timeout, config_.max_response_bytes});
    if (!open) return make_error(open.error().code, what + ": " + open.error().message);
    if (open->stream) {
      // The server ends the watch after server_timeout and sends bookmarks meanwhile; a
      // stream silent for longer than that plus the request timeout is stuck.
      const auto idle =
          std::chrono::duration_cast<std::chrono::milliseconds>(o.server_timeout) + config_.timeout;
      return std::make_unique<WatchStream>(std::move(open->stream), config_.max_response_bytes,
                                           idle, what);
    }
    if (open->error.status == 401 && attempt == 0 && !config_.token_file.empty()) {
      token_.invalidate();
      continue;
    }
    // APF limits a watch's start like any request (its 429 comes before the stream).
    if (wait_for_server(req, open->error, retries, deadline)) {
      --attempt;
      continue;
    }
    return http_error(what, open->error);
  }
  return make_error(ErrorCode::kInternal, "unreachable");
}

Result<Json> KubeClient::create(const std::string& path, const Json& object,
                                std::chrono::milliseconds timeout) {
  return call("POST", path, &object, "application/json", timeout);
}

Result<Json> KubeClient::replace(const std::string& path, const Json& object,
                                 std::chrono::milliseconds timeout) {
  return call("PUT", path, &object, "application/json", timeout);
}

Result<Json> KubeClient::patch(const std::string& path, const Json& patch, PatchType type) {
  return call("PATCH", path, &patch, content_type(type));
}

Status KubeClient::remove(const std::string& path, const std::string& uid) {
  const Json options = {
      {"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"preconditions", {{"uid", uid}}}};
  auto r = call("DELETE", path, uid.empty() ? nullptr : &options);
  if (!r) return r.error();
  return ok_status();
}

Status KubeClient::bind_pod(const std::string& ns, const std::string& name, const std::string& uid,
                            const std::string& node) {
  Json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  auto r = call("POST", pod_path(ns, name) + "/binding", &binding);
  if (!r) return r.error();
  return ok_status();
}

Status KubeClient::evict_pod(const std::string& ns, const std::string& name,
                             std::optional<int64_t> grace_period_seconds) {
  Json eviction = {{"apiVersion", "policy/v1"},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", name}, {"namespace", ns}}}};
  if (grace_period_seconds) {
    eviction["deleteOptions"] = {{"gracePeriodSeconds", *grace_period_seconds}};
  }
  auto r = call("POST", pod_path(ns, name) + "/eviction", &eviction);
  if (!r) return r.error();
  return ok_status();
}

Status KubeClient::create_event(const EventRecord& e) {
  const auto now = clock_.wall_now();
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch());
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, "%llx", static_cast<unsigned long long>(nanos.count()));
  const std::string stamp = rfc3339(now);
  Json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata",
                 {{"name", e.involved_object.value("name", "object") + "." + suffix},
                  {"namespace", e.namespace_}}},
                {"involvedObject", e.involved_object},
                {"type", e.type},
                {"reason", e.reason},
                {"message", e.message},
                {"count", 1},
                {"firstTimestamp", stamp},
                {"lastTimestamp", stamp},
                {"source", {{"component", e.component}, {"host", e.host}}},
                {"reportingComponent", e.component},
                {"reportingInstance", e.host}};
  auto r = create(events_path(e.namespace_), event);
  if (!r) return r.error();
  return ok_status();
}

std::string pods_path(const std::string& ns) {
  return ns.empty() ? "/api/v1/pods" : "/api/v1/namespaces/" + ns + "/pods";
}
std::string pod_path(const std::string& ns, const std::string& name) {
  return pods_path(ns) + "/" + name;
}

std::string daemon_set_path(const std::string& ns, const std::string& name) {
  return "/apis/apps/v1/namespaces/" + ns + "/daemonsets/" + name;
}
std::string nodes_path() {
  return "/api/v1/nodes";
}
std::string namespaces_path() {
  return "/api/v1/namespaces";
}
std::string secret_path(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + ns + "/secrets/" + name;
}
std::string priority_classes_path() {
  return "/apis/scheduling.k8s.io/v1/priorityclasses";
}
std::string mutating_webhook_configuration_path(const std::string& name) {
  return "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/" + name;
}
std::string elastic_quota_trees_path(const std::string& ns) {
  return "/apis/scheduling.sigs.k8s.io/v1beta1/" +
         (ns.empty() ? std::string() : "namespaces/" + ns + "/") + "elasticquotatrees";
}
std::string colocation_profiles_path() {
  return "/apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles";
}
std::string node_path(const std::string& name) {
  return nodes_path() + "/" + name;
}
std::string node_status_path(const std::string& name) {
  return node_path(name) + "/status";
}
std::string events_path(const std::string& ns) {
  return "/api/v1/namespaces/" + ns + "/events";
}
std::string spark_applications_path(const std::string& ns) {
  const std::string base = std::string("/apis/") + kSparkApiVersion;
  return ns.empty() ? base + "/sparkapplications"
                    : base + "/namespaces/" + ns + "/sparkapplications";
}
std::string spark_application_path(const std::string& ns, const std::string& name) {
  return spark_applications_path(ns) + "/" + name;
}

}  // namespace gleaner::kube
