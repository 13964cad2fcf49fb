#include "agent/qos/evict.h"

#include <algorithm>
#include <set>

#include "agent/qos/pod_dirs.h"
#include "agent/qos/record_fields.h"
#include "agent/qos/strategy.h"
#include "cgroup/parsers.h"

namespace gleaner::agent::qos {
namespace {

using cgroup::Resource;

struct Candidate {
  const snapshot::PodState* pod;
  int32_t priority;
  int64_t amount;   // contended usage, for the order
  int64_t release;  // what evicting it frees
};

bool leaving(const snapshot::PodState& pod, const EvictionMemory& state) {
  return is_terminating(pod) || state.evicted_at_s.count(pod.pod.key()) != 0;
}

// Asked and not answered yet, or refused and within its back-off: not a victim now, and
// not released either.
bool waiting(const snapshot::PodState& pod, const EvictionMemory& state, double now_s) {
  const std::string key = pod.pod.key();
  if (state.eviction_asked_s.count(key) != 0) return true;
  auto refused = state.eviction_refused.find(key);
  return refused != state.eviction_refused.end() && now_s < refused->second.retry_at_s;
}

bool cooling_down(const std::optional<double>& last, double cooldown, double now_s) {
  return last && now_s - *last < cooldown;
}

// Picks victims in order until `released` reaches `need`.
std::vector<Eviction> choose(std::vector<Candidate> candidates, int64_t released, int64_t need,
                             const char* reason) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.priority != b.priority) return a.priority < b.priority;
                     if (a.amount != b.amount) return a.amount > b.amount;
                     return a.pod->pod.key() < b.pod->pod.key();
                   });
  std::vector<Eviction> out;
  for (const auto& c : candidates) {
    if (released >= need) break;
    out.push_back({c.pod->pod.key(), reason});
    released += c.release;
  }
  return out;
}

}  // namespace

Plan plan_memory_evict(const snapshot::NodeSnapshot& snap,
                       const config::ResourceThresholdStrategy& strategy,
                       const EvictionMemory& state, double now_s, bool stale) {
  Plan plan;
  if (!strategy.enable) return plan;
  auto cap_it = snap.node.capacity.find(kube::kResourceMemory);
  if (cap_it == snap.node.capacity.end() || cap_it->second.value() <= 0) return plan;
  const int64_t capacity = cap_it->second.value();
  const int64_t usage = snap.metrics.node.memory_bytes;
  const int64_t threshold = strategy.memory_evict_threshold_percent;
  const int64_t lower =
      strategy.memory_evict_lower_percent.value_or(std::max<int64_t>(threshold - 2, 0));
  // usage% >= threshold%, compared without rounding (bytes * 100 stays far below 2^63).
  if (usage * 100 < capacity * threshold) return plan;
  if (stale) {
    plan.notes.emplace_back("memory-evict: over threshold but metrics are stale, holding");
    return plan;
  }
  if (cooling_down(state.last_memory_evict_s, kMemoryEvictCooldownS, now_s)) {
    plan.notes.emplace_back("memory-evict: cooling down");
    return plan;
  }
  const int64_t need = usage - capacity * lower / 100;
  int64_t released = 0;
  std::vector<Candidate> candidates;
  for (const auto& pod : snap.pods) {
    if (!is_labelled_be(pod)) continue;
    const auto* u = snap.pod_usage(pod.pod.key());
    const int64_t mem = u ? u->memory_bytes : 0;
    if (leaving(pod, state)) {
      released += mem;
      continue;
    }
    if (waiting(pod, state, now_s)) continue;
    candidates.push_back({&pod, pod.pod.priority.value_or(0), mem, mem});
  }
  plan.evictions = choose(std::move(candidates), released, need, kReasonMemoryEvict);
  return plan;
}

int64_t be_cpu_real_limit(const std::string& be_qos_dir, int64_t capacity_milli,
                          const KnobSnapshot& knobs) {
  int64_t limit = capacity_milli;
  auto quota = knobs.integer(Resource::kCpuQuota, be_qos_dir);
  auto period = knobs.integer(Resource::kCpuPeriod, be_qos_dir);
  if (quota && *quota > 0 && period && *period > 0) {
    limit = std::min(limit, *quota * 1000 / *period);
  }
  auto cpus = knobs.ids(Resource::kCpusetCpus, be_qos_dir);
  if (cpus && !cpus->empty())
    limit = std::min<int64_t>(limit, static_cast<int64_t>(cpus->size()) * 1000);
  return limit;
}

Plan plan_cpu_evict(const snapshot::NodeSnapshot& snap,
                    const config::ResourceThresholdStrategy& strategy, int64_t be_limit_milli,
                    const EvictionMemory& state, double now_s, bool stale) {
  Plan plan;
  if (!strategy.enable || !strategy.cpu_evict_be_satisfaction_lower_percent ||
      !strategy.cpu_evict_be_satisfaction_upper_percent) {
    return plan;
  }
  int64_t be_usage = be_cpu_usage(snap);
  int64_t be_request = 0;
  for (const auto& pod : snap.pods) {
    if (is_labelled_be(pod)) be_request += pod.batch.cpu_request_milli;
  }
  if (const auto& window = strategy.cpu_evict_time_window_seconds) {
    const double from = now_s - static_cast<double>(*window);
    double oldest = now_s;
    int64_t usage_sum = be_usage;
    int64_t limit_sum = be_limit_milli;
    int64_t n = 1;
    for (const auto& s : state.be_cpu_history) {
      if (s.at_s < from || s.at_s >= now_s) continue;
      oldest = std::min(oldest, s.at_s);
      usage_sum += s.usage_milli;
      limit_sum += s.limit_milli;
      ++n;
    }
    if (now_s - oldest < static_cast<double>(*window) / 2) return plan;  // not a trend yet
    be_usage = usage_sum / n;
    be_limit_milli = limit_sum / n;
  }
  if (be_request <= 0 || be_limit_milli <= 0) return plan;
  // Only when BE actually runs into its limit: otherwise it is not starved, just idle.
  if (be_usage * 100 < be_limit_milli * strategy.cpu_evict_be_usage_threshold_percent) return plan;
  const int64_t satisfaction = be_limit_milli * 100 / be_request;
  if (satisfaction > *strategy.cpu_evict_be_satisfaction_lower_percent) return plan;
  if (stale) {
    plan.notes.emplace_back("cpu-evict: BE starved but metrics are stale, holding");
    return plan;
  }
  if (cooling_down(state.last_cpu_evict_s, kCpuEvictCooldownS, now_s)) {
    plan.notes.emplace_back("cpu-evict: cooling down");
    return plan;
  }
  const int64_t need =
      be_request * (*strategy.cpu_evict_be_satisfaction_upper_percent - satisfaction) / 100;
  int64_t released = 0;
  std::vector<Candidate> candidates;
  for (const auto& pod : snap.pods) {
    if (!is_labelled_be(pod)) continue;
    if (leaving(pod, state)) {
      released += pod.batch.cpu_request_milli;
      continue;
    }
    if (waiting(pod, state, now_s)) continue;
    const auto* u = snap.pod_usage(pod.pod.key());
    candidates.push_back(
        {&pod, pod.pod.priority.value_or(0), u ? u->cpu_milli : 0, pod.batch.cpu_request_milli});
  }
  plan.evictions = choose(std::move(candidates), released, need, kReasonCpuEvict);
  return plan;
}

int64_t be_cpu_usage(const snapshot::NodeSnapshot& snap) {
  int64_t usage = 0;
  for (const auto& pod : snap.pods) {
    if (!is_labelled_be(pod)) continue;
    if (const auto* u = snap.pod_usage(pod.pod.key())) usage += u->cpu_milli;
  }
  return usage;
}

void record_be_cpu(EvictionMemory& state, const config::ResourceThresholdStrategy& strategy,
                   BeCpuSample sample) {
  auto& history = state.be_cpu_history;
  const double window = static_cast<double>(strategy.cpu_evict_time_window_seconds.value_or(0));
  history.push_back(sample);
  while (!history.empty() && history.front().at_s < sample.at_s - window)
    history.pop_front();
  if (window <= 0) history.clear();
}

void record_evictions(const Plan& plan, const snapshot::NodeSnapshot& snap, double now_s,
                      EvictionMemory& state) {
  for (const auto& e : plan.evictions) {
    state.eviction_asked_s[e.pod] = now_s;
    if (e.reason == kReasonMemoryEvict) state.last_memory_evict_s = now_s;
    if (e.reason == kReasonCpuEvict) state.last_cpu_evict_s = now_s;
  }
  std::set<std::string> present;
  for (const auto& pod : snap.pods)
    present.insert(pod.pod.key());
  const auto gone = [&](const auto& entry) { return present.count(entry.first) == 0; };
  std::erase_if(state.evicted_at_s, gone);
  std::erase_if(state.eviction_asked_s, gone);
  std::erase_if(state.eviction_refused, gone);
}

void record_eviction_answer(const std::string& pod, bool accepted, double now_s,
                            EvictionMemory& state) {
  state.eviction_asked_s.erase(pod);
  if (accepted) {
    state.eviction_refused.erase(pod);
    state.evicted_at_s[pod] = now_s;
    return;
  }
  auto& r = state.eviction_refused[pod];
  ++r.refusals;
  double wait = kEvictRetryMinS;
  for (int i = 1; i < r.refusals && wait < kEvictRetryMaxS; ++i)
    wait *= 2;
  r.retry_at_s = now_s + std::min(wait, kEvictRetryMaxS);
}

namespace {

// Memory first: a pod the memory eviction chooses counts as released for the CPU decision.
// One strategy for both, since they share the cool-downs and the pods asked to leave.
class Evict final : public Strategy {
 public:
  [[nodiscard]] std::string_view name() const override { return "evict"; }

  Plan plan(const Pass& pass) override {
    const auto& in = pass.in;
    const auto& snap = *in.snapshot;
    Plan plan = plan_memory_evict(snap, in.threshold, state_, in.now_s, in.stale);
    record_evictions(plan, snap, in.now_s, state_);
    if (!in.cpu_measured) return plan;
    const int64_t be_limit =
        be_cpu_real_limit(pass.node.be_qos_dir, pass.node.capacity_milli, pass.knobs);
    Plan cpu = plan_cpu_evict(snap, in.threshold, be_limit, state_, in.now_s, in.stale);
    record_evictions(cpu, snap, in.now_s, state_);
    if (!in.stale) record_be_cpu(state_, in.threshold, {in.now_s, be_cpu_usage(snap), be_limit});
    append_plan(plan, std::move(cpu));
    return plan;
  }

  void eviction_answered(const std::string& pod, bool accepted, double now_s) override {
    record_eviction_answer(pod, accepted, now_s, state_);
  }

  // agent.evictions {lastMemorySecondsAgo, lastCpuSecondsAgo, pods: {pod: secondsAgo}} and
  // agent.beCpuWindow [{secondsAgo, usage, limit}].
  void save(Json& agent, double now_s) const override {
    Json evictions = Json::object();
    if (state_.last_memory_evict_s)
      evictions["lastMemorySecondsAgo"] = now_s - *state_.last_memory_evict_s;
    if (state_.last_cpu_evict_s) evictions["lastCpuSecondsAgo"] = now_s - *state_.last_cpu_evict_s;
    if (!state_.evicted_at_s.empty()) {
      Json pods = Json::object();
      for (const auto& [pod, at] : state_.evicted_at_s)
        pods[pod] = now_s - at;
      evictions["pods"] = pods;
    }
    if (!evictions.empty()) agent["evictions"] = evictions;
    if (!state_.be_cpu_history.empty()) {
      Json window = Json::array();
      for (const auto& s : state_.be_cpu_history) {
        window.push_back({{"secondsAgo", now_s - s.at_s},
                          {"usage", std::to_string(s.usage_milli) + "m"},
                          {"limit", std::to_string(s.limit_milli) + "m"}});
      }
      agent["beCpuWindow"] = window;
    }
  }

  Status load(const Json& agent, const std::string& where, double now_s) override {
    EvictionMemory loaded;
    if (auto ok = load_evictions(agent, where, now_s, loaded); !ok) return ok;
    if (auto ok = load_window(agent, where, now_s, loaded); !ok) return ok;
    state_ = std::move(loaded);
    return ok_status();
  }

 private:
  static Status load_evictions(const Json& agent, const std::string& where, double now_s,
                               EvictionMemory& out) {
    auto it = agent.find("evictions");
    if (it == agent.end() || it->is_null()) return ok_status();
    if (!it->is_object()) return record_field_error(where, "agent.evictions", "expected an object");
    auto moment = [&](const char* key, std::optional<double>& into) -> Status {
      if (auto v = it->find(key); v != it->end()) {
        auto at = record_moment(*v, where, std::string("agent.evictions.") + key, now_s);
        if (!at) return at.error();
        into = *at;
      }
      return ok_status();
    };
    if (auto ok = moment("lastMemorySecondsAgo", out.last_memory_evict_s); !ok) return ok;
    if (auto ok = moment("lastCpuSecondsAgo", out.last_cpu_evict_s); !ok) return ok;
    if (auto pods = it->find("pods"); pods != it->end()) {
      if (!pods->is_object())
        return record_field_error(where, "agent.evictions.pods", "expected an object");
      for (const auto& [pod, v] : pods->items()) {
        auto at = record_moment(v, where, "agent.evictions.pods." + pod, now_s);
        if (!at) return at.error();
        out.evicted_at_s[pod] = *at;
      }
    }
    return ok_status();
  }

  static Status load_window(const Json& agent, const std::string& where, double now_s,
                            EvictionMemory& out) {
    auto it = agent.find("beCpuWindow");
    if (it == agent.end() || it->is_null()) return ok_status();
    if (!it->is_array()) return record_field_error(where, "agent.beCpuWindow", "expected a list");
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& e = (*it)[i];
      const std::string field = "agent.beCpuWindow[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("secondsAgo") || !e.contains("usage") ||
          !e.contains("limit")) {
        return record_field_error(where, field, "expected {secondsAgo, usage, limit}");
      }
      auto at = record_moment(e["secondsAgo"], where, field + ".secondsAgo", now_s);
      if (!at) return at.error();
      auto usage = record_milli(e["usage"], where, field + ".usage");
      if (!usage) return usage.error();
      auto limit = record_milli(e["limit"], where, field + ".limit");
      if (!limit) return limit.error();
      out.be_cpu_history.push_back({*at, *usage, *limit});
    }
    return ok_status();
  }

  EvictionMemory state_;
};

}  // namespace

std::unique_ptr<Strategy> make_evict_strategy() {
  return std::make_unique<Evict>();
}

}  // namespace gleaner::agent::qos
