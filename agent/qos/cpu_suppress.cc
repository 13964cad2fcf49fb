#include "agent/qos/cpu_suppress.h"

#include <algorithm>
#include <set>

#include "agent/batch/batch_calculator.h"
#include "agent/qos/knob_reads.h"
#include "agent/qos/pod_dirs.h"
#include "agent/qos/strategy.h"
#include "cgroup/parsers.h"
#include "common/json_util.h"
#include "kube/well_known.h"

namespace gleaner::agent::qos {
namespace {

using cgroup::Resource;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

void add_write(Plan& plan, Resource r, const std::string& cg, std::string value,
               const std::string& reason = kReasonCpuSuppress) {
  plan.writes.push_back({r, cg, std::move(value), reason});
}

// Cpuset writes to the BE QoS dir and every BE pod/container dir that has a CPU list of
// its own (v2 leaves children empty, meaning "inherit"; those are left alone). The
// executor orders them parents-first when widening, children-first when narrowing.
void write_cpusets(Plan& plan, const NodeFacts& ctx, const KnobSnapshot& knobs,
                   const std::vector<int>& cpus, const std::string& reason = kReasonCpuSuppress) {
  const std::string list = cgroup::format_cpu_list(cpus);
  // An empty v2 cpuset inherits its parent's CPUs: when those are what BE gets, writing
  // them would only turn inheritance into a fixed list (which a populated cgroup can never
  // be emptied back from: the kernel answers ENOSPC).
  auto current = knobs.logical(Resource::kCpusetCpus, ctx.be_qos_dir);
  const bool inherits_all =
      current && current->empty() && knobs.ids(Resource::kCpusetEffective, ctx.be_qos_dir) == cpus;
  if (knobs.has(Resource::kCpusetCpus, ctx.be_qos_dir) && !inherits_all) {
    add_write(plan, Resource::kCpusetCpus, ctx.be_qos_dir, list, reason);
  }
  for (const auto& dir : ctx.be_dirs) {
    auto current = knobs.logical(Resource::kCpusetCpus, dir);
    if (current && !current->empty()) add_write(plan, Resource::kCpusetCpus, dir, list, reason);
  }
}

// The CPUs BE may use at all, in the order it receives them: the topology's CPUs that are
// also in kubepods' CPU list (pods can never use more), minus reserved CPUs. Without a
// topology, the kubepods CPU list alone.
std::vector<int> be_universe_order(const NodeFacts& ctx, const KnobSnapshot& knobs) {
  auto pods_cpus = knobs.ids(Resource::kCpusetCpus, ctx.kubepods_dir);
  const bool have_list = pods_cpus && !pods_cpus->empty();
  if (!ctx.topology) {
    if (!have_list) return {};
    return be_cpu_order(flat_topology(*pods_cpus), ctx.reserved_cpus);
  }
  auto order = be_cpu_order(*ctx.topology, ctx.reserved_cpus);
  if (!have_list) return order;
  const std::set<int> allowed(pods_cpus->begin(), pods_cpus->end());
  std::erase_if(order, [&](int cpu) { return allowed.count(cpu) == 0; });
  return order;
}

void plan_cfs_quota(Plan& plan, const NodeFacts& ctx, int64_t suppress_milli,
                    const KnobSnapshot& knobs, bool stale, bool full_pass) {
  auto current = knobs.integer(Resource::kCpuQuota, ctx.be_qos_dir);
  if (!current) {
    plan.notes.emplace_back("cpu-suppress: no CPU quota file for " + ctx.be_qos_dir + ", skipped");
    return;
  }
  int64_t period = knobs.integer(Resource::kCpuPeriod, ctx.be_qos_dir).value_or(kDefaultPeriodUs);
  if (period <= 0) period = kDefaultPeriodUs;
  auto next = next_quota(suppress_milli, ctx.capacity_milli, period, *current, stale);
  if (next) add_write(plan, Resource::kCpuQuota, ctx.be_qos_dir, std::to_string(*next));
  if (stale) return;       // restoring the full cpuset would grow BE
  if (!full_pass) return;  // the walk over BE's pods: once a second is enough
  auto order = be_universe_order(ctx, knobs);
  if (order.empty()) return;
  std::sort(order.begin(), order.end());
  write_cpusets(plan, ctx, knobs, order);
}

void plan_cpuset(Plan& plan, const NodeFacts& ctx, int64_t suppress_milli,
                 const KnobSnapshot& knobs, bool stale, int min_cpus) {
  auto order = be_universe_order(ctx, knobs);
  if (order.empty()) {
    plan.notes.emplace_back("cpu-suppress: no CPU list for BE, cpuset policy skipped");
    return;
  }
  const int available = static_cast<int>(order.size());
  auto current = knobs.ids(Resource::kCpusetCpus, ctx.be_qos_dir);
  // An empty v2 cpuset.cpus inherits the parent's: BE has every CPU.
  int current_count = current && !current->empty() ? static_cast<int>(current->size()) : available;
  int count = next_cpu_count(suppress_milli, current_count, available, stale, min_cpus);
  std::vector<int> chosen(order.begin(), order.begin() + count);
  std::sort(chosen.begin(), chosen.end());
  write_cpusets(plan, ctx, knobs, chosen);
  // The cpuset is the only limit while this policy is active.
  auto quota = knobs.integer(Resource::kCpuQuota, ctx.be_qos_dir);
  if (quota && *quota != cgroup::kUnlimited && !stale) {
    add_write(plan, Resource::kCpuQuota, ctx.be_qos_dir, "-1");
  }
}

// Suppression off: give BE back what kubelet gave it (no quota, the kubepods CPU list).
void plan_recover(Plan& plan, const NodeFacts& ctx, const KnobSnapshot& knobs, bool stale) {
  if (stale) return;
  auto quota = knobs.integer(Resource::kCpuQuota, ctx.be_qos_dir);
  if (quota && *quota != cgroup::kUnlimited) {
    add_write(plan, Resource::kCpuQuota, ctx.be_qos_dir, "-1");
  }
  auto all = knobs.ids(Resource::kCpusetCpus, ctx.kubepods_dir);
  if (all && !all->empty()) write_cpusets(plan, ctx, knobs, *all);
}

}  // namespace

int64_t non_be_cpu_usage(const snapshot::NodeSnapshot& snap) {
  int64_t sum = 0;
  for (const auto& pod : snap.pods) {
    if (is_be_for_suppress(pod)) continue;
    if (const auto* u = snap.pod_usage(pod.pod.key())) sum += u->cpu_milli;
  }
  return sum;
}

SuppressTerms suppress_terms(const NodeFacts& ctx,
                             const config::ResourceThresholdStrategy& strategy,
                             int64_t non_be_milli, int64_t system_usage_milli) {
  SuppressTerms t;
  t.threshold_milli = ctx.capacity_milli * strategy.cpu_suppress_threshold_percent / 100;
  t.non_be_milli = non_be_milli;
  t.system_used_milli = std::max(system_usage_milli, ctx.node_reserved_milli);
  if (strategy.cpu_suppress_min_percent) {
    t.floor_milli = ctx.capacity_milli * *strategy.cpu_suppress_min_percent / 100;
  }
  t.suppress_milli =
      std::max(t.threshold_milli - t.non_be_milli - t.system_used_milli, t.floor_milli);
  return t;
}

std::optional<int64_t> next_quota(int64_t suppress_milli, int64_t capacity_milli, int64_t period_us,
                                  int64_t current, bool stale) {
  int64_t target = std::max(suppress_milli * period_us / 1000, kMinSuppressQuotaUs);
  const int64_t capacity_quota = capacity_milli * period_us / 1000;
  // An allowance of every CPU cannot bind BE: it keeps (or gets back, once the ramp below has
  // brought it within a step) no quota at all, kubelet's own value, instead of a quota of the
  // whole node that binds nothing but keeps CFS bandwidth control running for the group (its
  // period timer and per-CPU runtime accounting; Documentation/scheduler/sched-bwc.rst: -1 is
  // "no restriction"). Measured: a fixed whole-node BE quota that never throttled gave Redis a
  // p99 1.44x kubelet only's [1.09-2.30] (docs/benchmarks.md, the decomposition run).
  if (capacity_quota > 0 && target >= capacity_quota) {
    if (current <= 0 || stale) return std::nullopt;  // already unlimited; or growing, held
    if (current + capacity_quota / 10 >= capacity_quota) return cgroup::kUnlimited;
  }
  if (current <= 0) return target;  // unlimited (-1): any quota is a decrease
  if (target > current) {
    if (stale) return std::nullopt;
    target = std::min(target, current + capacity_quota / 10);
  }
  if (target == current) return std::nullopt;
  // Dead band: small changes cost a write and gain nothing, except reaching the floor.
  if (std::abs(target - current) < capacity_quota / 100 && target != kMinSuppressQuotaUs) {
    return std::nullopt;
  }
  return target;
}

int next_cpu_count(int64_t suppress_milli, int current_count, int available, bool stale,
                   int min_cpus) {
  int want = static_cast<int>(
      std::max<int64_t>(ceil_div(std::max<int64_t>(suppress_milli, 0), 1000), min_cpus));
  want = std::min(want, available);
  if (want > current_count) {
    if (stale) return std::min(current_count, available);
    int step = static_cast<int>(ceil_div(available, 10));  // ceil(10% of CPUs)
    want = std::min(want, current_count + step);
  }
  return std::max(want, std::min(min_cpus, available));
}

int capped_cpu_count(int count, int max_cpus, int available, int min_cpus) {
  count = std::min(count, available);
  return std::max(std::min(count, max_cpus), std::min(min_cpus, count));
}

void cap_be_cpuset(Plan& plan, const NodeFacts& ctx, const KnobSnapshot& knobs, int max_cpus,
                   const std::string& reason, int min_cpus) {
  auto order = be_universe_order(ctx, knobs);
  if (order.empty()) return;
  const int available = static_cast<int>(order.size());
  // What BE gets after this plan: its planned write, else what it holds now (an empty v2
  // cpuset.cpus inherits the parent's: every CPU).
  std::optional<int> count;
  for (const auto& w : plan.writes) {
    if (w.resource != Resource::kCpusetCpus || w.cgroup != ctx.be_qos_dir) continue;
    if (auto ids = cgroup::parse_cpu_list(w.value); ids.ok()) count = static_cast<int>(ids->size());
  }
  if (!count) {
    auto current = knobs.ids(Resource::kCpusetCpus, ctx.be_qos_dir);
    count = current && !current->empty() ? static_cast<int>(current->size()) : available;
  }
  const int limit = capped_cpu_count(*count, max_cpus, available, min_cpus);
  if (limit >= *count) return;
  const std::set<std::string> be_dirs(ctx.be_dirs.begin(), ctx.be_dirs.end());
  std::erase_if(plan.writes, [&](const cgroup::CgroupWrite& w) {
    return w.resource == Resource::kCpusetCpus &&
           (w.cgroup == ctx.be_qos_dir || be_dirs.count(w.cgroup) > 0);
  });
  std::vector<int> chosen(order.begin(), order.begin() + limit);
  std::sort(chosen.begin(), chosen.end());
  write_cpusets(plan, ctx, knobs, chosen, reason);
}

bool suppress_ceiling_applies(const config::ResourceThresholdStrategy& strategy, bool armed) {
  return strategy.enable &&
         (strategy.cpu_suppress_mode != config::CpuSuppressMode::kOnInterference || armed);
}

Plan plan_cpu_suppress(const NodeFacts& ctx, const config::ResourceThresholdStrategy& strategy,
                       int64_t non_be_milli, int64_t system_usage_milli, const KnobSnapshot& knobs,
                       bool stale, bool armed, bool full_pass) {
  Plan plan;
  if (!suppress_ceiling_applies(strategy, armed)) {
    if (strategy.enable) {
      plan.notes.emplace_back(
          "cpu-suppress: no LS interference within the hold time, BE unbounded "
          "(cpuSuppressMode onInterference)");
    }
    plan_recover(plan, ctx, knobs, stale);
    return plan;
  }
  if (ctx.capacity_milli <= 0) {
    plan.notes.emplace_back("cpu-suppress: node has no CPU capacity, skipped");
    return plan;
  }
  auto terms = suppress_terms(ctx, strategy, non_be_milli, system_usage_milli);
  return plan_be_allowance(ctx, strategy, terms.suppress_milli, knobs, stale, full_pass);
}

Plan plan_be_allowance(const NodeFacts& ctx, const config::ResourceThresholdStrategy& strategy,
                       int64_t allowance_milli, const KnobSnapshot& knobs, bool stale,
                       bool full_pass) {
  Plan plan;
  if (stale) plan.notes.emplace_back("cpu-suppress: metrics are stale, holding (BE may not grow)");
  if (strategy.cpu_suppress_policy == config::CpuSuppressPolicy::kCfsQuota) {
    plan_cfs_quota(plan, ctx, allowance_milli, knobs, stale, full_pass);
  } else {
    plan_cpuset(plan, ctx, allowance_milli, knobs, stale,
                static_cast<int>(strategy.cpu_suppress_min_cpus));
  }
  return plan;
}

namespace {

// The suppress formula's ceiling on BE, on every full pass and on the fast path.
class CpuSuppress final : public Strategy {
 public:
  [[nodiscard]] std::string_view name() const override { return "cpuSuppress"; }
  Plan plan(const Pass& pass) override {
    if (!pass.in.cpu_measured) {
      Plan plan;
      plan.notes.emplace_back(
          "cpu-suppress: no CPU measurement yet (first pass), BE left as it is");
      return plan;
    }
    return plan_cpu_suppress(pass.node, pass.in.threshold, pass.non_be_cpu_milli,
                             pass.system_usage_milli, pass.knobs, pass.stale, pass.suppress_armed);
  }
  [[nodiscard]] bool on_fast_path() const override { return true; }
  void declare_fast_reads(const Pass& pass, KnobReads& reads) const override {
    const bool cpusets =
        pass.in.threshold.cpu_suppress_policy == config::CpuSuppressPolicy::kCpuset;
    reads.merge(suppress_reads(pass.node, cpusets));
  }
  [[nodiscard]] Plan plan_fast(const Pass& pass) const override {
    return plan_cpu_suppress(pass.node, pass.in.threshold, pass.non_be_cpu_milli,
                             pass.system_usage_milli, pass.knobs, pass.stale, pass.suppress_armed,
                             /*full_pass=*/false);
  }
};

}  // namespace

std::unique_ptr<Strategy> make_cpu_suppress_strategy() {
  return std::make_unique<CpuSuppress>();
}

}  // namespace gleaner::agent::qos
