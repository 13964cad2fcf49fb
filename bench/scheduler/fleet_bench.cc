// Fleet decisions in the simulator: 10 member clusters of 1,000 nodes each (3 of them with
// GPUs) and 1,000 jobs queued at once (Spark applications, PyTorchJobs on GPUs, TFJobs),
// with cluster affinity, four priorities and four tenant queues with min and max. About
// two thirds fit at first; the rest wait and are placed as others complete, so passes walk
// a long queue. Beside it, the same nodes and jobs as one 10,000-node cluster without
// affinity: what choosing among members costs.
//
// Figures printed:
//   admissions    jobs admitted, counting a job again after a preemption or reschedule
//   core jobs/s   admissions / wall time inside Scheduler::schedule()
//   core pods/s   the same in pods
//   first pass    wall time of the pass over all 1,000 queued jobs at t=0
//   p99 decision  99th percentile over jobs of (time of the pass that admitted it / jobs
//                 it admitted)
// The simulator's capacity view is exact (reports are events); live, a member's view is its
// agents' last reports (--stale-after).
#include <algorithm>
#include <chrono>
#include <cstdio>
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
constexpr int kGpuMembers = 3;

struct Shape {
  int members = 10;
  int nodes_per_member = 1000;
  int jobs = 1000;
  bool one_cluster = false;  // the reference: every node in one cluster, no affinity
};

std::string member_of(const Shape& s, int m) {
  return s.one_cluster ? std::string("single") : numbered("member-", m);
}

Scenario make_scenario(const Shape& shape) {
  Scenario s;
  for (int m = 0; m < shape.members && (m == 0 || !shape.one_cluster); ++m)
    s.clusters.push_back(member_of(shape, m));
  for (int m = 0; m < shape.members; ++m) {
    const bool gpu = m < kGpuMembers;
    for (int i = 0; i < shape.nodes_per_member; ++i) {
      ScenarioNode n;
      n.info = NodeInfo{numbered("n-", static_cast<int64_t>(m) * 100000 + i),
                        member_of(shape, m),
                        {{"zone", numbered("z", i % 3)}},
                        gpu ? Resources{16000, 64 * kGi, 4} : Resources{8000, 32 * kGi}};
      s.nodes.push_back(std::move(n));
    }
  }
  for (int q = 0; q < 4; ++q) {
    QueueSpec spec;
    spec.name = numbered("tenant-", q);
    spec.min = Resources{int64_t{20000} * 1000, 80000 * kGi};
    spec.max = Resources{int64_t{80000} * 1000, 320000 * kGi, kGpusUnlimited};
    s.queues.push_back(spec);
  }
  std::vector<std::string> gpu_members;
  std::vector<std::string> first_half;
  for (int m = 0; m < shape.members; ++m) {
    if (m < kGpuMembers) gpu_members.push_back(member_of(shape, m));
    if (m < shape.members / 2) first_half.push_back(member_of(shape, m));
  }
  for (int i = 0; i < shape.jobs; ++i) {
    ScenarioJob j;
    JobSpec& spec = j.spec;
    spec.name = numbered("job-", i);
    spec.queue = numbered("tenant-", i % 4);
    spec.priority = (i % 4) * 1000;
    spec.submit_time = 0;
    switch (i % 4) {
      case 0:  // PyTorchJob: a master and 7 workers, a GPU each, on GPU members
        spec.kind = "PyTorchJob";
        spec.roles = {RoleSpec{"master", {4000, 16 * kGi, 1}, 1, {}, std::nullopt},
                      RoleSpec{"worker", {4000, 16 * kGi, 1}, 7, {}, std::nullopt}};
        if (!shape.one_cluster) spec.allowed_clusters = gpu_members;
        break;
      case 1:  // TFJob: chief, 2 parameter servers, 8 workers
        spec.kind = "TFJob";
        spec.roles = {RoleSpec{"chief", {2000, 8 * kGi}, 1, {}, std::nullopt},
                      RoleSpec{"ps", {2000, 8 * kGi}, 2, {}, std::nullopt},
                      RoleSpec{"worker", {4000, 16 * kGi}, 8, {}, std::nullopt}};
        break;
      default:  // Spark: a driver and 60 executors; a quarter pinned to half the fleet
        spec.driver = Resources{1000, 4 * kGi};
        spec.executor = Resources{4000, 16 * kGi};
        spec.executors = 60;
        if (!shape.one_cluster && i % 8 == 2) spec.allowed_clusters = first_half;
        break;
    }
    j.duration_seconds = 600 + (i % 13) * 60;
    s.jobs.push_back(std::move(j));
  }
  return s;
}

struct Row {
  int64_t jobs_admitted = 0;
  int64_t pods_admitted = 0;
  int64_t completed = 0;
  double core_seconds = 0;
  double first_pass_seconds = 0;
  double p99_seconds = 0;
};

std::optional<Row> run(const Shape& shape) {
  Scenario scenario = make_scenario(shape);
  auto sim = Simulator::create(scenario);
  if (!sim) {
    std::fprintf(stderr, "fleet_bench: scenario: %s\n", sim.error().message.c_str());
    return std::nullopt;
  }
  Row row;
  std::vector<double> per_job;
  bool first = true;
  sim->set_pass_observer([&](int64_t, size_t admitted, double seconds) {
    row.core_seconds += seconds;
    if (first) row.first_pass_seconds = seconds;
    first = false;
    for (size_t i = 0; i < admitted; ++i)
      per_job.push_back(seconds / static_cast<double>(admitted));
  });
  sim->run();
  row.jobs_admitted = static_cast<int64_t>(per_job.size());
  std::sort(per_job.begin(), per_job.end());
  if (!per_job.empty()) row.p99_seconds = per_job[per_job.size() * 99 / 100];
  const auto report = sim->report();
  for (const auto& j : report["jobs"]) {
    if (j["state"] == "Completed") ++row.completed;
    row.pods_admitted += static_cast<int64_t>(j["pods"].size()) *
                         (1 + j["reschedules"].get<int>() + j["preemptions"].get<int>());
  }
  return row;
}

void print(const char* name, const Shape& shape, const Row& r) {
  const double jobs_rate = static_cast<double>(r.jobs_admitted) / r.core_seconds;
  const double pods_rate = static_cast<double>(r.pods_admitted) / r.core_seconds;
  std::printf("%-28s %7d %6d %10lld %9lld %11.0f %11.0f %13.2f %11.1f us\n", name,
              shape.members * shape.nodes_per_member, shape.jobs,
              static_cast<long long>(r.jobs_admitted), static_cast<long long>(r.completed),
              jobs_rate, pods_rate, r.first_pass_seconds * 1e3, r.p99_seconds * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  Shape shape;
  CLI::App app{"fleet_bench: fleet decisions across member clusters in the simulator"};
  gleaner::bench::positive_option(app, "--members", shape.members, "member clusters");
  gleaner::bench::positive_option(app, "--nodes-per-member", shape.nodes_per_member,
                                  "nodes in each member");
  gleaner::bench::positive_option(app, "--jobs", shape.jobs, "jobs queued at t=0");
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  std::printf(
      "%d members x %d nodes (%d with 4 GPUs a node), %d jobs queued at t=0: 1/4 PyTorchJob "
      "(master + 7 workers, a GPU each, GPU members only), 1/4 TFJob (chief, 2 ps, 8 workers), "
      "1/2 Spark (driver + 60 executors, a quarter of them pinned to half the members); 4 "
      "tenant queues, 4 priorities\n\n",
      shape.members, shape.nodes_per_member, std::min(shape.members, kGpuMembers), shape.jobs);
  std::printf("%-28s %7s %6s %10s %9s %11s %11s %13s %14s\n", "run", "nodes", "jobs", "admissions",
              "completed", "core jobs/s", "core pods/s", "first pass ms", "p99 decision");
  auto fleet = run(shape);
  Shape single = shape;
  single.one_cluster = true;
  auto reference = run(single);
  if (!fleet || !reference) return 1;
  print("fleet (members, affinity)", shape, *fleet);
  print("reference: one cluster", single, *reference);
  const double ratio = (static_cast<double>(fleet->jobs_admitted) / fleet->core_seconds) /
                       (static_cast<double>(reference->jobs_admitted) / reference->core_seconds);
  std::printf(
      "\nratio fleet / one cluster, core jobs/s: %.2fx\n"
      "core: wall time inside the scheduler's passes; first pass: the pass over every queued "
      "job at t=0; p99 decision: over jobs, the time of the pass that admitted it divided by "
      "the jobs it admitted.\n",
      ratio);
  return 0;
}
