#pragma once
// The agent's link to the API server: its own Node object (watched, so label and
// annotation changes reach per-node config at once) and evictions through the Eviction
// API with an Event on the pod. Calls run on a worker thread: the sampling loop only
// hands over requests and reads the cached Node, so a slow API server never delays
// enforcement.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/worker.h"
#include "kube/api_client.h"
#include "kube/informer.h"
#include "kube/objects.h"

namespace gleaner::agent {

struct EvictionOutcome {
  uint64_t evicted = 0;
  uint64_t refused = 0;  // 429: a PodDisruptionBudget said not now
  uint64_t failed = 0;
};

// The API server's answer to one eviction: accepted (or the pod already gone), or not.
struct EvictionAnswer {
  std::string pod;
  bool accepted = false;
};

class ApiLink {
 public:
  // `clock`: the system clock when null; it must outlive the link.
  ApiLink(kube::KubeConfig config, std::string node_name, const Clock* clock = nullptr);
  ~ApiLink();
  ApiLink(const ApiLink&) = delete;
  ApiLink& operator=(const ApiLink&) = delete;

  // The latest Node seen by the watch; nullopt until the first list succeeded.
  [[nodiscard]] std::optional<kube::Node> node() const;
  bool wait_for_node(std::chrono::milliseconds timeout);
  // Queues an eviction ("namespace/name"); duplicates of a queued pod are dropped.
  void evict(const std::string& pod_key, const std::string& reason, bool dry_run);
  [[nodiscard]] EvictionOutcome outcome() const;
  // The answers since the last call, oldest first (the caller's decisions learn which
  // pods are really going, and which to ask for again).
  std::vector<EvictionAnswer> take_answers();
  // One object, fetched now on the caller's thread with a client of its own (the stopping
  // agent asks for its Pod and DaemonSet while the worker may still be busy): nullopt when
  // the object does not exist.
  Result<std::optional<Json>> fetch(const std::string& path) const;

 private:
  // One eviction and its Event, on the worker thread.
  void evict_now(const std::string& pod_key, const std::string& reason);

  SystemClock system_clock_;
  const Clock& clock_;
  kube::KubeConfig config_;
  std::string node_name_;
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<kube::Informer> informer_;
  mutable std::mutex mu_;
  EvictionOutcome outcome_;              // under mu_
  std::vector<EvictionAnswer> answers_;  // under mu_
  Worker worker_;                        // last: stopped before the members its jobs use go
};

}  // namespace gleaner::agent
