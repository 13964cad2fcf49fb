#include "agent/qos/cfs_quota_burst.h"

#include <algorithm>
#include <cmath>

#include "agent/qos/pod_dirs.h"
#include "agent/qos/record_fields.h"
#include "agent/qos/strategy.h"

namespace gleaner::agent::qos {
namespace {

using cgroup::Resource;

constexpr double kIncreaseStep = 1.2;
constexpr double kDecreaseStep = 0.8;
constexpr double kCoolingRatio = 0.9;    // of the threshold: the band where nothing grows
constexpr double kSpendAtPercent = 100;  // usage of the limit from which the bucket drains
constexpr double kSaveBelowPercent = 60;

enum class Step { kUp, kDown, kRemain, kReset };

bool scaling_on(config::CpuBurstPolicy policy) {
  return policy == config::CpuBurstPolicy::kCfsQuotaBurstOnly ||
         policy == config::CpuBurstPolicy::kAuto;
}

// The node's verdict over a container's wish (koordlet's changeOperationByNode).
Step by_node(SharePool pool, Step wish) {
  if (pool == SharePool::kOverload && (wish == Step::kUp || wish == Step::kRemain))
    return Step::kDown;
  if ((pool == SharePool::kCooling || pool == SharePool::kUnknown) && wish == Step::kUp)
    return Step::kRemain;
  return wish;
}

// Updates the bucket with the usage since the last pass; whether it still allows a burst.
bool bucket_allows(const config::CpuBurstStrategy& burst, int64_t limit_milli,
                   const std::optional<CpuCounters>& now_counters, double now_s, bool seen_before,
                   QuotaBurstMemory& m) {
  if (burst.cfs_quota_burst_period_seconds < 0) return true;  // unlimited
  const double capacity = static_cast<double>(burst.cfs_quota_burst_period_seconds) *
                          static_cast<double>(burst.cfs_quota_burst_percent - 100);
  if (!seen_before) m.tokens = capacity / 4;
  if (seen_before && now_counters && now_s > m.at_s &&
      now_counters->usage_ns >= m.counters.usage_ns) {
    const double dt = now_s - m.at_s;
    const double used_cores =
        static_cast<double>(now_counters->usage_ns - m.counters.usage_ns) / 1e9 / dt;
    const double percent = used_cores * 1000.0 / static_cast<double>(limit_milli) * 100.0;
    if (percent >= kSpendAtPercent) {
      m.tokens -= (percent - 100.0) * dt;
    } else if (percent < kSaveBelowPercent) {
      m.tokens += (100.0 - percent) * dt;
    }
    m.tokens = std::clamp(m.tokens, -capacity, capacity);
  }
  return m.tokens > 0;
}

}  // namespace

const char* to_string(SharePool pool) {
  switch (pool) {
    case SharePool::kOverload:
      return "overload";
    case SharePool::kCooling:
      return "cooling";
    case SharePool::kIdle:
      return "idle";
    case SharePool::kUnknown:
      return "unknown";
  }
  return "unknown";
}

SharePool share_pool_state(const snapshot::NodeSnapshot& snap, int64_t threshold_percent) {
  auto cpu = snap.node.capacity.find(kube::kResourceCpu);
  if (cpu == snap.node.capacity.end() || cpu->second.milli_value() <= 0) return SharePool::kUnknown;
  // System usage stays in the pool: the conservative reading, as koordlet's.
  double total = static_cast<double>(cpu->second.milli_value());
  double used = static_cast<double>(snap.metrics.node.cpu_milli);
  for (const auto& pod : snap.pods) {
    const bool exclusive = pod.qos == states::QoSClass::kLSE || pod.qos == states::QoSClass::kLSR;
    if (exclusive) total -= static_cast<double>(pod.request.cpu_milli);
    if (exclusive || pod.qos == states::QoSClass::kBE) {
      if (const auto* u = snap.pod_usage(pod.pod.key())) used -= static_cast<double>(u->cpu_milli);
    }
  }
  const double ratio = total > 0 ? used / total : 1.0;
  const double threshold = static_cast<double>(threshold_percent) / 100.0;
  if (ratio >= threshold) return SharePool::kOverload;
  if (ratio >= threshold * kCoolingRatio) return SharePool::kCooling;
  return SharePool::kIdle;
}

Plan plan_cfs_quota_burst(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                          const config::CpuBurstStrategy& burst, const KnobSnapshot& knobs,
                          double now_s, bool hold,
                          std::map<std::string, QuotaBurstMemory>& memory) {
  Plan plan;
  const bool on = scaling_on(burst.policy);
  const SharePool pool =
      hold ? SharePool::kUnknown : share_pool_state(snap, burst.share_pool_threshold_percent);
  std::map<std::string, QuotaBurstMemory> seen;
  for (const auto& pod : snap.pods) {
    if (pod.qos != states::QoSClass::kLS || is_terminating(pod)) continue;
    std::map<std::string, int64_t> limits;
    for (const auto& c : pod.pod.containers) {
      auto it = c.resources.limits.find(kube::kResourceCpu);
      if (it != c.resources.limits.end()) limits[c.name] = it->second.milli_value();
    }
    int64_t pod_delta = 0;
    for (const auto& [name, dir] : container_cgroups(layout, pod)) {
      auto limit = limits.find(name);
      if (limit == limits.end() || limit->second <= 0) continue;
      const auto current = knobs.integer(Resource::kCpuQuota, dir);
      if (!current || *current <= 0) continue;
      const int64_t period = knobs.integer(Resource::kCpuPeriod, dir).value_or(kDefaultPeriodUs);
      const int64_t base = limit->second * period / 1000;
      const int64_t ceiling = std::max(
          base, static_cast<int64_t>(static_cast<double>(base) *
                                     static_cast<double>(burst.cfs_quota_burst_percent) / 100.0));
      // Counters only while the policy is on: with it off nothing but a reset can happen.
      std::optional<CpuCounters> counters;
      if (on) counters = knobs.cpu_counters(dir);
      auto before = memory.find(dir);
      const bool seen_before = before != memory.end();
      QuotaBurstMemory m = seen_before ? before->second : QuotaBurstMemory{};
      Step step = Step::kRemain;
      if (!on) {
        step = *current > base ? Step::kReset : Step::kRemain;
      } else if (!bucket_allows(burst, limit->second, counters, now_s, seen_before, m)) {
        step = Step::kDown;
      } else if (seen_before && counters && counters->nr_throttled > m.counters.nr_throttled) {
        step = Step::kUp;
      }
      if (on) step = by_node(pool, step);
      if (counters) {
        m.counters = *counters;
        m.at_s = now_s;
      }
      if (on) seen[dir] = m;

      int64_t target = *current;
      if (step == Step::kUp) {
        target = static_cast<int64_t>(static_cast<double>(*current) * kIncreaseStep);
      } else if (step == Step::kDown) {
        target = static_cast<int64_t>(static_cast<double>(*current) * kDecreaseStep);
      } else if (step == Step::kReset) {
        target = base;
      }
      target = std::clamp(target, base, ceiling);
      if (target == *current) continue;
      plan.writes.push_back(
          {Resource::kCpuQuota, dir, std::to_string(target), kReasonCfsQuotaBurst});
      pod_delta += target - *current;
    }
    if (pod_delta == 0) continue;
    const std::string pod_dir = pod_cgroup(layout, pod);
    // The pod's quota exists only when every container has a limit (-1 otherwise).
    if (auto pod_quota = knobs.integer(Resource::kCpuQuota, pod_dir); pod_quota && *pod_quota > 0) {
      plan.writes.push_back({Resource::kCpuQuota, pod_dir, std::to_string(*pod_quota + pod_delta),
                             kReasonCfsQuotaBurst});
    }
  }
  if (on && !snap.pods.empty()) {
    plan.notes.push_back(std::string("cfs-quota-burst: share pool ") + to_string(pool));
  }
  memory = std::move(seen);
  return plan;
}

void declare_quota_burst_reads(const snapshot::NodeSnapshot& snap,
                               const cgroup::KubeletLayout& layout,
                               const config::CpuBurstStrategy& burst, KnobReads& reads) {
  if (!scaling_on(burst.policy)) return;
  for (const auto& pod : snap.pods) {
    if (pod.qos != states::QoSClass::kLS || is_terminating(pod)) continue;
    for (const auto& [name, dir] : container_cgroups(layout, pod))
      reads.counters.insert(dir);
  }
}

namespace {

class CfsQuotaBurst final : public Strategy {
 public:
  [[nodiscard]] std::string_view name() const override { return "cfsQuotaBurst"; }
  void declare_reads(const Pass& pass, KnobReads& reads) const override {
    declare_quota_burst_reads(*pass.in.snapshot, pass.in.layout, pass.in.cpu_burst, reads);
  }
  Plan plan(const Pass& pass) override {
    const auto& in = pass.in;
    return plan_cfs_quota_burst(*in.snapshot, in.layout, in.cpu_burst, pass.knobs, in.now_s,
                                in.stale || !in.cpu_measured, memory_);
  }

  // agent.cfsQuotaBurst: container cgroup -> {secondsAgo, usageNanos, nrThrottled, tokens}.
  void save(Json& agent, double now_s) const override {
    if (memory_.empty()) return;
    Json bursts = Json::object();
    for (const auto& [cgroup, b] : memory_) {
      bursts[cgroup] = {{"secondsAgo", now_s - b.at_s},
                        {"usageNanos", b.counters.usage_ns},
                        {"nrThrottled", b.counters.nr_throttled},
                        {"tokens", b.tokens}};
    }
    agent["cfsQuotaBurst"] = bursts;
  }

  Status load(const Json& agent, const std::string& where, double now_s) override {
    auto entries = agent.find("cfsQuotaBurst");
    if (entries == agent.end() || entries->is_null()) {
      memory_.clear();
      return ok_status();
    }
    if (!entries->is_object())
      return record_field_error(where, "agent.cfsQuotaBurst", "expected an object");
    std::map<std::string, QuotaBurstMemory> loaded;
    for (const auto& [cgroup, e] : entries->items()) {
      const std::string field = "agent.cfsQuotaBurst." + cgroup;
      if (!e.is_object()) return record_field_error(where, field, "expected an object");
      auto counter = [&](const char* name) -> Result<int64_t> {
        auto it = e.find(name);
        if (it == e.end() || !it->is_number_integer() || it->get<int64_t>() < 0)
          return record_field_error(where, field + "." + name, "expected a non-negative integer");
        return it->get<int64_t>();
      };
      auto at = record_moment(e.value("secondsAgo", Json()), where, field + ".secondsAgo", now_s);
      if (!at) return at.error();
      auto usage = counter("usageNanos");
      if (!usage) return usage.error();
      auto throttled = counter("nrThrottled");
      if (!throttled) return throttled.error();
      auto tokens = e.find("tokens");
      if (tokens == e.end() || !tokens->is_number() || !std::isfinite(tokens->get<double>()))
        return record_field_error(where, field + ".tokens", "expected a number");
      loaded[cgroup] = {*at, {*usage, *throttled}, tokens->get<double>()};
    }
    memory_ = std::move(loaded);
    return ok_status();
  }

 private:
  std::map<std::string, QuotaBurstMemory> memory_;  // container cgroup -> memory
};

}  // namespace

std::unique_ptr<Strategy> make_cfs_quota_burst_strategy() {
  return std::make_unique<CfsQuotaBurst>();
}

}  // namespace gleaner::agent::qos
