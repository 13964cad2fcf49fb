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

NodeMetricPublisher::NodeMetricPublisher(kube::KubeConfig config, std::string node_name)
    : node_name_(std::move(node_name)),
      client_(std::make_unique<kube::KubeClient>(std::move(config), clock_)) {
  worker_ = std::jthread([this](const std::stop_token& stop) { worker(stop); });
}

NodeMetricPublisher::~NodeMetricPublisher() {
  worker_.request_stop();
  cv_.notify_all();
}

void NodeMetricPublisher::submit(Json status, std::chrono::seconds interval,
                                 int64_t aggregate_seconds) {
  std::lock_guard lock(mu_);
  latest_ = std::move(status);
  interval_ = std::max(interval, std::chrono::seconds(1));
  aggregate_seconds_ = aggregate_seconds;
  cv_.notify_one();
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

void NodeMetricPublisher::worker(const std::stop_token& stop) {
  auto next = std::chrono::steady_clock::now();
  auto last_error_log = std::chrono::steady_clock::time_point{};
  while (!stop.stop_requested()) {
    Json status;
    std::chrono::seconds interval;
    int64_t aggregate_seconds = 0;
    {
      std::unique_lock lock(mu_);
      // First the due time, then a status to write.
      cv_.wait_until(lock, stop, next, [] { return false; });
      cv_.wait(lock, stop, [&] { return latest_.has_value(); });
      if (stop.stop_requested()) return;
      status = std::move(*latest_);
      latest_.reset();
      interval = interval_;
      aggregate_seconds = aggregate_seconds_;
    }
    Status s = publish(status, interval, aggregate_seconds);
    const auto now = std::chrono::steady_clock::now();
    next = now + interval;
    std::lock_guard lock(mu_);
    if (s) {
      ++stats_.updates;
      if (!stats_.crd_served) spdlog::info("NodeMetric: the API server serves it now");
      stats_.crd_served = true;
      continue;
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
      next = now + kCrdRecheck;
    } else if (now - last_error_log >= std::chrono::minutes(1)) {
      last_error_log = now;
      spdlog::warn("NodeMetric {}: {}", node_name_, s.error().describe());
    }
  }
}

}  // namespace gleaner::agent
