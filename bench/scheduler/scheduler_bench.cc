// Placement throughput of the scheduler core inside the simulator, at 1,000, 5,000 and 10,000
// nodes, with Spark jobs of one driver and ten executors (100,000 pods by default).
// Jobs arrive one per simulated second and run long enough to keep the clusters busy,
// so passes also walk a queue of waiting jobs, as in production.
//
// Figures printed:
//   core pods/s   pods placed / wall time spent inside Scheduler::schedule()
//   sim pods/s    pods placed / wall time of the whole simulation (events, timers, core)
//   p99 decision  99th percentile of the wall time of a pass that admitted a job,
//                 divided by the jobs it admitted (almost every pass admits one)
// kube-scheduler's scheduler_perf threshold for 5,000 nodes is 680-810 pods/s; the
// ratio column divides our core figure by the upper end.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_cli.h"
#include "common/json_util.h"
#include "common/quantity.h"
#include "scheduler/sim/simulator.h"

namespace {

using gleaner::bench::numbered;

using namespace gleaner::scheduler;
using namespace gleaner::scheduler::sim;

using gleaner::kGi;
constexpr int kExecutors = 10;
constexpr double kKubeSchedulerHigh = 810.0;

struct Row {
  int nodes = 0;
  int64_t pods = 0;
  int64_t jobs = 0;
  double core_seconds = 0;
  double sim_seconds = 0;
  double p99_seconds = 0;
  int64_t completed = 0;
};

Scenario make_scenario(int nodes, int64_t pods) {
  Scenario s;
  s.clusters = {"default"};
  for (int i = 0; i < nodes; ++i) {
    ScenarioNode n;
    n.info = NodeInfo{numbered("node-", 100000 + i),
                      "default",
                      {{"zone", numbered("z", i % 3)}},
                      Resources{32000, 128 * kGi}};
    s.nodes.push_back(std::move(n));
  }
  const int64_t jobs = (pods + kExecutors) / (kExecutors + 1);
  // Long enough that 1,000 nodes run close to full (32,000 cores / 11 per job).
  const int64_t duration = static_cast<int64_t>(nodes) * 32 / (kExecutors + 1) * 9 / 10;
  for (int64_t i = 0; i < jobs; ++i) {
    ScenarioJob j;
    // A few priorities and executor sizes so ordering and packing have work to do.
    j.spec = JobSpec{numbered("app-", i),
                     "",
                     static_cast<int32_t>(i % 4) * 1000,
                     i,
                     Resources{1000, 2 * kGi},
                     Resources{1000 + (i % 3) * 500, 4 * kGi},
                     kExecutors,
                     {}};
    j.duration_seconds = duration + (i % 7) * 10;
    s.jobs.push_back(std::move(j));
  }
  return s;
}

std::optional<Row> run(int nodes, int64_t pods) {
  Scenario scenario = make_scenario(nodes, pods);
  auto sim = Simulator::create(scenario);
  if (!sim) {
    std::fprintf(stderr, "scheduler_bench: scenario: %s\n", sim.error().message.c_str());
    return std::nullopt;
  }
  Row row;
  row.nodes = nodes;
  row.jobs = static_cast<int64_t>(scenario.jobs.size());
  std::vector<double> per_job;
  per_job.reserve(scenario.jobs.size() * 2);
  sim->set_pass_observer([&](int64_t, size_t admitted, double seconds) {
    row.core_seconds += seconds;
    if (admitted == 0) return;
    for (size_t i = 0; i < admitted; ++i)
      per_job.push_back(seconds / static_cast<double>(admitted));
  });
  auto start = std::chrono::steady_clock::now();
  sim->run();
  row.sim_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.pods = static_cast<int64_t>(per_job.size()) * (kExecutors + 1);
  std::sort(per_job.begin(), per_job.end());
  if (!per_job.empty()) row.p99_seconds = per_job[per_job.size() * 99 / 100];
  const auto report = sim->report();
  for (const auto& j : report["jobs"]) {
    if (j["state"] == "Completed") ++row.completed;
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t pods = 100000;
  std::vector<int> sizes{1000, 5000, 10000};
  int nodes_only = 0;
  CLI::App app{"scheduler_bench: simulator placement throughput and decision latency"};
  gleaner::bench::positive_option(app, "pods", pods, "pods to place");
  app.add_option("nodes", nodes_only, "one cluster size (default: 1000, 5000 and 10000)")
      ->check(gleaner::bench::kPositive);
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  if (nodes_only > 0) sizes = {nodes_only};
  const int64_t whole_gangs = (pods + kExecutors) / (kExecutors + 1) * (kExecutors + 1);
  std::printf(
      "Spark gangs of 1 driver + %d executors, %lld pods (%lld asked for, rounded up to whole "
      "gangs), one job per simulated second\n\n",
      kExecutors, static_cast<long long>(whole_gangs), static_cast<long long>(pods));
  std::printf("%6s %8s %6s %10s %12s %11s %14s %22s %7s\n", "nodes", "placed", "jobs", "completed",
              "core pods/s", "sim pods/s", "p99 decision", "kube-scheduler pods/s", "ratio");
  for (int nodes : sizes) {
    auto row = run(nodes, pods);
    if (!row) return 1;
    const Row& r = *row;
    double core_rate = static_cast<double>(r.pods) / r.core_seconds;
    double sim_rate = static_cast<double>(r.pods) / r.sim_seconds;
    std::printf("%6d %8lld %6lld %10lld %12.0f %11.0f %11.1f us %22s %6.1fx\n", r.nodes,
                static_cast<long long>(r.pods), static_cast<long long>(r.jobs),
                static_cast<long long>(r.completed), core_rate, sim_rate, r.p99_seconds * 1e6,
                "680-810 (5,000 nodes)", core_rate / kKubeSchedulerHigh);
  }
  std::printf(
      "\ncore pods/s: pods placed per second spent in the scheduler's passes (passes that "
      "admit nothing included); sim pods/s: per second of the whole simulation; p99 decision: "
      "over jobs, the time of the pass that admitted the job divided by the jobs it "
      "admitted.\nkube-scheduler: scheduler_perf threshold at 5,000 nodes (one pod per cycle, "
      "full filter/score plugins, end to end); ratio = core pods/s / 810.\n");
  return 0;
}
