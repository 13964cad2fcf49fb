#pragma once
// The node's NodeMetric (slo.koordinator.sh/v1alpha1), kept as koordlet keeps it, so that
// koord-scheduler's load-aware scheduling and koord-descheduler, which read it, keep
// working with gleaner-agent in koordlet's place: node and system usage (averaged over
// metricAggregateDurationSeconds), the node's usage percentiles over 5, 10 and 30 minutes,
// and each pod's usage with its priority and QoS class, written to the status every
// metricReportIntervalSeconds. An absent NodeMetric is created (the part koord-manager
// plays); an API server that does not serve the CRD is said once, then asked again every
// ten minutes. Writes run on a thread of their own: the sampling loop only hands over
// the latest status.

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/metrics/metric_store.h"
#include "agent/snapshot/node_snapshot.h"
#include "common/clock.h"
#include "common/json_util.h"
#include "common/worker.h"
#include "kube/api_client.h"

namespace gleaner::agent {

// The node's usage percentiles over one window.
struct UsageWindow {
  std::chrono::seconds duration{0};
  Aggregate cpu_milli;
  Aggregate memory_bytes;
};

// NodeMetric status from a snapshot whose usage is the aggregation window's average. Pure.
Json node_metric_status(const snapshot::NodeSnapshot& snap, const std::vector<UsageWindow>& windows,
                        WallTime now);
// A NodeMetric object for `node` with its collect policy (what koord-manager creates).
Json node_metric_object(const std::string& node, int64_t aggregate_seconds,
                        int64_t report_interval_seconds);
// "5m0s": a Go time.Duration as metav1.Duration writes it.
std::string go_duration(std::chrono::seconds d);

struct NodeMetricStats {
  uint64_t updates = 0;
  uint64_t failures = 0;
  bool crd_served = true;
};

class NodeMetricPublisher {
 public:
  // `clock`: the system clock when null (it paces the writes); it must outlive the publisher.
  NodeMetricPublisher(kube::KubeConfig config, std::string node_name, const Clock* clock = nullptr);
  ~NodeMetricPublisher();
  NodeMetricPublisher(const NodeMetricPublisher&) = delete;
  NodeMetricPublisher& operator=(const NodeMetricPublisher&) = delete;

  // The latest status, written at most every `interval` (metricReportIntervalSeconds);
  // the object's policy for when it must be created.
  void submit(Json status, std::chrono::seconds interval, int64_t aggregate_seconds);
  [[nodiscard]] NodeMetricStats stats() const;

 private:
  // One write on the worker thread, which then holds the next until it is due.
  void write(const Json& status, std::chrono::seconds interval, int64_t aggregate_seconds);
  Status publish(const Json& status, std::chrono::seconds interval, int64_t aggregate_seconds);

  SystemClock system_clock_;
  const Clock& clock_;
  std::string node_name_;
  std::unique_ptr<kube::KubeClient> client_;
  mutable std::mutex mu_;
  NodeMetricStats stats_;        // under mu_
  SteadyTime last_error_log_{};  // worker thread only
  Worker worker_;                // last: stopped before the members its jobs use go
};

}  // namespace gleaner::agent
