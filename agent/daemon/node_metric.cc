#include "agent/daemon/node_metric.h"

#include <ctime>

#include <spdlog/spdlog.h>

#include "agent/states/pod_classes.h"
#include "common/time_format.h"

namespace gleaner::agent {
namespace {

constexpr const char* kNodeMetrics = "/apis/slo.koordinator.sh/v1alpha1/nodemetrics";
constexpr auto kCrdRecheck = std::chrono::minutes(10);

Json resources(int64_t cpu_milli, int64_t memory_bytes) {
  return Json{{"resources",
               {{"cpu", std::to_string(std::max<int64_t>(cpu_milli, 0)) + "m"},
                {"memory", std::to_string(std::max<int64_t>(memory_bytes, 0))}}}};
}

}  // namespace

std::string go_duration(std::chrono::seconds d) {
  const auto h = std::chrono::duration_cast<std::chrono::hours>(d);
  const auto m = std::chrono::duration_cast<std::chrono::minutes>(d - h);
  const auto s = d - h - m;
  std::string out;
  if (h.count() > 0) out += std::to_string(h.count()) + "h";
  if (h.count() > 0 || m.count() > 0) out += std::to_string(m.count()) + "m";
  return out + std::to_string(s.count()) + "s";
}

Json node_metric_status(const snapshot::NodeSnapshot& snap, const std::vector<UsageWindow>& windows,
                        WallTime now) {
  const snapshot::Usage system = snap.system_usage();
  Json node = {
      {"nodeUsage", resources(snap.metrics.node.cpu_milli, snap.metrics.node.memory_bytes)},
      {"systemUsage", resources(system.cpu_milli, system.memory_bytes)}};
  Json aggregated = Json::array();
  for (const auto& w : windows) {
    auto pick = [](double value) { return static_cast<int64_t>(value); };
    aggregated.push_back({{"duration", go_duration(w.duration)},
                          {"usage",
                           {{"avg", resources(pick(w.cpu_milli.avg), pick(w.memory_bytes.avg))},
                            {"p50", resources(pick(w.cpu_milli.p50), pick(w.memory_bytes.p50))},
                            {"p90", resources(pick(w.cpu_milli.p90), pick(w.memory_bytes.p90))},
                            {"p95", resources(pick(w.cpu_milli.p95), pick(w.memory_bytes.p95))},
                            {"p99", resources(pick(w.cpu_milli.p99), pick(w.memory_bytes.p99))}}}});
  }
  if (!aggregated.empty()) node["aggregatedNodeUsages"] = aggregated;
  Json pods = Json::array();
  for (const auto& p : snap.pods) {
    const std::string key = p.pod.metadata.namespace_name + "/" + p.pod.metadata.name;
    const snapshot::Usage* used = snap.pod_usage(key);
    if (used == nullptr) continue;  // not sampled yet: no usage to state
    pods.push_back({{"namespace", p.pod.metadata.namespace_name},
                    {"name", p.pod.metadata.name},
                    {"podUsage", resources(used->cpu_milli, used->memory_bytes)},
                    {"priority", states::to_string(p.priority)},
                    {"qos", states::to_string(p.qos)}});
  }
  return Json{{"updateTime", rfc3339(now)}, {"nodeMetric", node}, {"podsMetric", pods}};
}

Json node_metric_object(const std::string& node, int64_t aggregate_seconds,
                        int64_t report_interval_seconds) {
  return Json{{"apiVersion", "slo.koordinator.sh/v1alpha1"},
              {"kind", "NodeMetric"},
              {"metadata", {{"name", node}}},
              {"spec",
               {{"metricCollectPolicy",
                 {{"aggregateDurationSeconds", aggregate_seconds},
                  {"reportIntervalSeconds", report_interval_seconds},
                  {"nodeAggregatePolicy", {{"durations", {"5m0s", "10m0s", "30m0s"}}}}}}}}};
}

NodeMetricPublisher::NodeMetricPublisher(kube::KubeConfig config, std::string node_name,
                                         const Clock* clock)
    : clock_(clock != nullptr ? *clock : system_clock_),
      node_name_(std::move(node_name)),
      client_(std::make_unique<kube::KubeClient>(std::move(config), clock_)),
      worker_("node-metric", &clock_) {
  worker_.start();
}

NodeMetricPublisher::~NodeMetricPublisher() {
  worker_.stop(Worker::Pending::kDrop);
}

void NodeMetricPublisher::submit(Json status, std::chrono::seconds interval,
                                 int64_t aggregate_seconds) {
  // Only the newest status is written: a newer one replaces one still waiting.
  interval = std::max(interval, std::chrono::seconds(1));
  worker_.post_latest("status", [this, status = std::move(status), interval, aggregate_seconds] {
    write(status, interval, aggregate_seconds);
  });
}

NodeMetricStats NodeMetricPublisher::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

Status NodeMetricPublisher::publish(const Json& status, std::chrono::seconds interval,
                                    int64_t aggregate_seconds) {
  const std::string path = std::string(kNodeMetrics) + "/" + node_name_;
  auto patched =
      client_->patch(path + "/status", Json{{"status", status}}, kube::PatchType::kMerge);
  if (patched) return ok_status();
  if (patched.error().code != ErrorCode::kNotFound) return patched.error();
  // Which is missing: the object, or the resource? find() tells them apart.
  auto found = client_->find(path);
  if (!found) return found.error();  // kNotFound here: the CRD is not served
  if (*found) return patched.error();
  auto created = client_->create(
      kNodeMetrics, node_metric_object(node_name_, aggregate_seconds, interval.count()));
  if (!created && created.error().code != ErrorCode::kConflict) return created.error();
  spdlog::info("NodeMetric {} created", node_name_);
  auto again = client_->patch(path + "/status", Json{{"status", status}}, kube::PatchType::kMerge);
  return again ? ok_status() : Status(again.error());
}

void NodeMetricPublisher::write(const Json& status, std::chrono::seconds interval,
                                int64_t aggregate_seconds) {
  const Status s = publish(status, interval, aggregate_seconds);
  const auto now = clock_.now();
  worker_.hold_until(now + (s || s.error().code != ErrorCode::kNotFound ? interval : kCrdRecheck));
  std::lock_guard lock(mu_);
  if (s) {
    ++stats_.updates;
    if (!stats_.crd_served) spdlog::info("NodeMetric: the API server serves it now");
    stats_.crd_served = true;
    return;
  }
  ++stats_.failures;
  if (s.error().code == ErrorCode::kNotFound) {
    if (stats_.crd_served) {
      spdlog::warn(
          "NodeMetric (slo.koordinator.sh/v1alpha1) is not served by the API server: "
          "not published; asked again every {} minutes",
          std::chrono::duration_cast<std::chrono::minutes>(kCrdRecheck).count());
    }
    stats_.crd_served = false;
  } else if (now - last_error_log_ >= std::chrono::minutes(1)) {
    last_error_log_ = now;
    spdlog::warn("NodeMetric {}: {}", node_name_, s.error().describe());
  }
}

}  // namespace gleaner::agent
