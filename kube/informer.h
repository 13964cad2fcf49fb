#pragma once
// A small informer: list, then watch from the list's resourceVersion, into a local cache
// keyed "namespace/name" (or "name" for cluster-scoped objects), with add/update/delete
// callbacks. A broken or silent stream re-watches from the last resourceVersion seen
// (events or bookmarks); 410 Gone relists and reconciles the cache against the new list.
// Errors back off exponentially with jitter; an answer that says when to come back (429
// with Retry-After: the server throttling, not failing) is tried again after that wait,
// without growing the back-off, so the informer is back within a Retry-After of the end of
// a throttling storm. Callbacks run on the informer's thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "kube/api_client.h"
#include "kube/backoff.h"

namespace gleaner::kube {

struct InformerHandlers {
  std::function<void(const Json& obj)> on_add;
  std::function<void(const Json& old_obj, const Json& new_obj)> on_update;
  std::function<void(const Json& last_known)> on_delete;
};

struct InformerOptions {
  std::string path;  // a collection, e.g. pods_path("") or nodes_path()
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  // Every `resync`, on_update(obj, obj) for every cached object (0 = never), so consumers
  // can re-check state they derive from it. Runs between watch events and bookmarks.
  std::chrono::milliseconds resync{0};
  std::chrono::seconds watch_timeout{300};
  BackoffPolicy backoff;
};

struct InformerStats {
  int lists = 0;
  int watches = 0;
  int expired = 0;  // 410 Gone answers (relists forced by the server)
  int broken_streams = 0;
  int errors = 0;
  int throttled = 0;  // failures the server asked to retry later (429 with Retry-After)
  // Failures logged as warnings: a list or watch that fails again the same way (a resource
  // the server does not serve, an API server away) is logged once until it works again.
  int warnings = 0;
};

class Informer {
 public:
  Informer(KubeClient& client, InformerOptions options, InformerHandlers handlers);
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Runs until `stop` is requested; blocking. start()/stop() run it on an own thread.
  void run(std::stop_token stop);
  void start();
  void stop();

  [[nodiscard]] bool has_synced() const { return synced_; }
  bool wait_for_sync(std::chrono::milliseconds timeout);
  [[nodiscard]] std::optional<Json> get(const std::string& key) const;
  [[nodiscard]] std::vector<Json> list() const;
  [[nodiscard]] std::string resource_version() const;
  [[nodiscard]] InformerStats stats() const;

  static std::string key_of(const Json& obj);

 private:
  bool relist();
  enum class WatchEnd { kRewatch, kRelist, kBackoff };
  WatchEnd watch_once(std::stop_token& stop, bool& got_events);
  void apply(const WatchEvent& event);
  void maybe_resync();
  void sleep(std::stop_token& stop, std::chrono::milliseconds d);
  // Under mu_: notes a failed list or watch; the server's wait, when it asked for one, is
  // used instead of the back-off.
  void note_failure(const Error& error);
  // The wait before the next try: the server's, or the back-off's next step.
  std::chrono::milliseconds delay(Backoff& backoff);
  // Under mu_: a failure's message, as a warning unless it repeats the last one warned
  // (then at debug level).
  void warn_failure(const std::string& message);

  KubeClient& client_;
  InformerOptions options_;
  InformerHandlers handlers_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::string, Json> cache_;
  std::string rv_;
  InformerStats stats_;
  std::string last_warned_;  // the failure last warned about, "" once a list works again
  std::optional<std::chrono::milliseconds> server_wait_;  // guarded by mu_
  std::mt19937 rng_{std::random_device{}()};              // guarded by mu_
  std::atomic<bool> synced_{false};
  std::chrono::steady_clock::time_point last_resync_;
  WatchStream* current_ = nullptr;  // guarded by mu_, for interrupting on stop
  std::jthread thread_;
};

}  // namespace gleaner::kube
