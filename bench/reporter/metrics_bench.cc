// /metrics serialisation latency and size for a node with N pods.
// Prints p50/p99 latency and the body size as counters next to Google Benchmark's mean.

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "reporter/metrics/metrics_registry.h"

namespace gleaner::reporter {
namespace {

AgentState node_with_pods(int pods) {
  AgentState s;
  s.node_capacity = {96000, 384LL << 30};
  s.node_allocatable = {94000, 376LL << 30};
  s.node_usage = {40000, 200LL << 30};
  s.system_usage = {2000, 8LL << 30};
  s.ls_usage = {30000, 150LL << 30};
  s.be_usage = {8000, 42LL << 30};
  s.colocation = ColocationState::kEnabled;
  s.batch_allocatable = ResourceAmounts{30000, 120LL << 30};
  s.suppress = {true, "cpuset", 20000};
  for (int i = 0; i < pods; ++i) {
    PodState p;
    p.namespace_name = i % 3 ? "online-services-prod" : "spark-batch-jobs";
    p.name = "deployment-name-" + std::to_string(i) + "-7c9f8d6b5-x2k4q";
    p.qos = i % 3 ? "LS" : "BE";
    p.cpu_usage_millicores = 100 + i * 7;
    p.memory_usage_bytes = (256LL + i) << 20;
    p.cpu_throttled_seconds_total = 12.345 * i;
    p.cpu_throttled_periods_total = static_cast<uint64_t>(i) * 1000;
    p.pressure = {1.25, 0.5, 2.5, 1.0, 0.75, 0.25};
    p.runqueue_latency_p99_us = 120 + i;
    s.pods.push_back(std::move(p));
  }
  for (const char* r : {"cpu-evict", "memory-evict"})
    s.evictions_total[r] = 3;
  for (const char* r : {"cpu.cfs_quota_us", "cpuset.cpus", "memory.limit_in_bytes",
                        "resctrl.schemata", "cpu.shares"}) {
    s.cgroup_writes_total[r] = 1000;
    s.cgroup_write_failures_total[r] = 1;
  }
  s.sampling_pass_seconds = {0.004};
  return s;
}

// NOLINTNEXTLINE(readability-identifier-naming): Google Benchmark names its cases BM_*.
void BM_MetricsSerialize(benchmark::State& state) {
  MetricsRegistry registry;
  registry.update(node_with_pods(static_cast<int>(state.range(0))));
  std::vector<double> ms;
  size_t bytes = 0;
  for ([[maybe_unused]] auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    std::string body = registry.serialize();
    auto end = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(body.data());
    bytes = body.size();
    ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {
    return ms[static_cast<size_t>(p * static_cast<double>(ms.size() - 1))];
  };
  state.counters["p50_ms"] = pct(0.50);
  state.counters["p99_ms"] = pct(0.99);
  state.counters["body_KiB"] = static_cast<double>(bytes) / 1024.0;
  state.counters["p99_ok(<=20ms)"] = pct(0.99) <= 20.0 ? 1 : 0;
  state.counters["size_ok(<512KiB)"] = bytes < size_t{512} * 1024 ? 1 : 0;
}
BENCHMARK(BM_MetricsSerialize)
    ->Arg(50)
    ->Arg(110)
    ->Arg(200)
    ->Arg(250)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gleaner::reporter

BENCHMARK_MAIN();
