#include "agent/qos/strategy_table.h"

#include <mutex>

namespace gleaner::agent::qos {

// Each built-in strategy's factory, defined in its own file.
std::unique_ptr<Strategy> make_cpu_suppress_strategy();
std::unique_ptr<Strategy> make_cpu_idle_strategy();
std::unique_ptr<Strategy> make_be_cgroups_strategy();
std::unique_ptr<Strategy> make_memory_qos_strategy();
std::unique_ptr<Strategy> make_cpu_burst_strategy();
std::unique_ptr<Strategy> make_cfs_quota_burst_strategy();
std::unique_ptr<Strategy> make_resctrl_strategy();
std::unique_ptr<Strategy> make_system_config_strategy();
std::unique_ptr<Strategy> make_evict_strategy();

namespace {

// The order matters where one strategy's writes depend on another's: cpu.idle before the BE
// weights (leaving idle resets a weight), and eviction last, after every write of the pass.
std::unique_ptr<Strategy> (*const kBuiltIn[])() = {
    make_cpu_suppress_strategy, make_cpu_idle_strategy,      make_be_cgroups_strategy,
    make_memory_qos_strategy,   make_cpu_burst_strategy,     make_cfs_quota_burst_strategy,
    make_resctrl_strategy,      make_system_config_strategy, make_evict_strategy,
};

struct Registered {
  std::mutex mutex;
  std::vector<StrategyFactory> factories;
};

Registered& registered() {
  static Registered r;
  return r;
}

}  // namespace

std::vector<std::unique_ptr<Strategy>> make_strategies() {
  std::vector<std::unique_ptr<Strategy>> out;
  for (auto* make : kBuiltIn)
    out.push_back(make());
  auto& r = registered();
  std::lock_guard lock(r.mutex);
  for (const auto& make : r.factories)
    out.push_back(make());
  return out;
}

bool register_strategy(StrategyFactory factory) {
  auto& r = registered();
  std::lock_guard lock(r.mutex);
  r.factories.push_back(std::move(factory));
  return true;
}

}  // namespace gleaner::agent::qos
