// Job outcomes of gang admission (the scheduler core in the simulator) beside pod-by-pod
// placement (a reference model of a scheduler without gangs) on scenarios where Spark
// drivers can take the room their own executors need.
//
// The pod-by-pod reference is kube-scheduler's behaviour without a gang plugin: pods are
// tried in creation order, each on the first node with room (filters only; an
// unschedulable pod does not block the ones behind it); a driver runs as soon as it is
// bound and only then creates its executors, which join the back of the queue; a job's
// clock starts when its last executor is bound and all its pods leave when it finishes.
// Node allocatable changes and start delays in a scenario are not modelled there.
//
// Figures printed per scenario and placement:
//   completed     jobs finished within the horizon
//   makespan      time the last job finished ("-" when some never did), and its ratio
//                 to gang admission's
//   driver CPU-s waiting   sum over drivers of their CPU x the time from being bound to
//                 their job's last executor being bound (or to the horizon)
//   executor CPU-s waiting the same for executors bound while their job still waits
//
// usage: deadlock_bench [--horizon SECONDS] [SCENARIO.json ...]
//   with no file, a built-in burst scenario only.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_cli.h"
#include "common/json_util.h"
#include "common/quantity.h"
#include "scheduler/sim/simulator.h"

namespace gleaner::scheduler::sim {
namespace {

using gleaner::kGi;

struct Outcome {
  int64_t completed = 0;
  int64_t jobs = 0;
  int64_t makespan = -1;  // -1: some job never finished
  double driver_cpu_seconds_waiting = 0;
  double executor_cpu_seconds_waiting = 0;
};

// 20 nodes of 8 batch cores; 100 jobs of a driver and 4 executors of 1 core each, all
// submitted at once, 120 s each: the drivers alone take 100 of the 160 cores.
Scenario burst_scenario() {
  Scenario s;
  s.clusters = {"default"};
  for (int i = 0; i < 20; ++i) {
    ScenarioNode n;
    n.info = NodeInfo{"node-" + std::to_string(100 + i), "default", {}, Resources{8000, 32 * kGi}};
    s.nodes.push_back(std::move(n));
  }
  for (int i = 0; i < 100; ++i) {
    ScenarioJob j;
    j.spec = JobSpec{"app-" + std::to_string(100 + i), "", 0, 0, Resources{1000, 2 * kGi},
                     Resources{1000, 2 * kGi},         4,  {}};
    j.duration_seconds = 120;
    s.jobs.push_back(std::move(j));
  }
  return s;
}

double cpu(const Resources& r) {
  return static_cast<double>(r.cpu_milli) / 1000.0;
}

// The gang side: the simulator's report, with the waits read from the pods' bind times.
Result<Outcome> run_gang(const Scenario& scenario, int64_t horizon) {
  Scenario s = scenario;
  s.until_seconds = horizon;
  auto sim = Simulator::create(s);
  if (!sim) return sim.error();
  sim->run();
  const auto report = sim->report();
  Outcome o;
  o.jobs = static_cast<int64_t>(s.jobs.size());
  int64_t last = 0;
  for (size_t i = 0; i < report["jobs"].size(); ++i) {
    const auto& j = report["jobs"][i];
    if (j["state"] == "Completed") {
      ++o.completed;
      last = std::max(last, j["finishedAt"].get<int64_t>());
    }
    const auto& pods = j["pods"];
    if (pods.empty()) continue;
    const int64_t driver_bound = pods[0]["boundAt"].get<int64_t>();
    int64_t all_bound = driver_bound;
    for (const auto& p : pods)
      all_bound = std::max(all_bound, p.value("boundAt", horizon));
    o.driver_cpu_seconds_waiting +=
        cpu(s.jobs[i].spec.driver) * static_cast<double>(all_bound - driver_bound);
    for (size_t k = 1; k < pods.size(); ++k) {
      o.executor_cpu_seconds_waiting +=
          cpu(s.jobs[i].spec.executor) *
          static_cast<double>(all_bound - pods[k].value("boundAt", horizon));
    }
  }
  o.makespan = o.completed == o.jobs ? last : -1;
  return o;
}

// The pod-by-pod reference model described at the top of this file.
class PodByPod {
 public:
  PodByPod(const Scenario& s, int64_t horizon) : s_(s), horizon_(horizon) {
    for (const auto& n : s.nodes)
      free_.push_back(n.info.batch);
    jobs_.resize(s.jobs.size());
  }

  Outcome run() {
    std::multimap<int64_t, size_t> submits;
    for (size_t i = 0; i < s_.jobs.size(); ++i)
      submits.emplace(s_.jobs[i].spec.submit_time, i);
    std::multimap<int64_t, size_t> finishes;
    int64_t now = 0;
    while (now <= horizon_ && (!submits.empty() || !finishes.empty())) {
      const int64_t next_submit = submits.empty() ? horizon_ + 1 : submits.begin()->first;
      const int64_t next_finish = finishes.empty() ? horizon_ + 1 : finishes.begin()->first;
      now = std::min(next_submit, next_finish);
      if (now > horizon_) break;
      for (auto it = finishes.begin(); it != finishes.end() && it->first == now;) {
        finish(it->second, now);
        it = finishes.erase(it);
      }
      for (auto it = submits.begin(); it != submits.end() && it->first == now;) {
        queue_.push_back({it->second, -1});
        it = submits.erase(it);
      }
      place_all(now, finishes);
    }
    return outcome();
  }

 private:
  struct Pod {
    size_t job;
    int executor;  // -1: the driver
  };
  struct JobRun {
    int64_t driver_bound = -1;
    std::vector<int64_t> executors_bound;
    std::vector<size_t> nodes;  // where each pod went, driver first
    int64_t started = -1;
    int64_t finished = -1;
  };

  const Resources& request(const Pod& p) const {
    return p.executor < 0 ? s_.jobs[p.job].spec.driver : s_.jobs[p.job].spec.executor;
  }

  void place_all(int64_t now, std::multimap<int64_t, size_t>& finishes) {
    // One pass over the queue in order; executors a driver creates join its back and are
    // reached in the same pass.
    std::deque<Pod> unplaced;
    while (!queue_.empty()) {
      const Pod p = queue_.front();
      queue_.pop_front();
      auto node = std::find_if(free_.begin(), free_.end(),
                               [&](const Resources& room) { return request(p).fits_in(room); });
      if (node == free_.end()) {
        unplaced.push_back(p);
        continue;
      }
      *node -= request(p);
      JobRun& run = jobs_[p.job];
      run.nodes.push_back(static_cast<size_t>(node - free_.begin()));
      const ScenarioJob& job = s_.jobs[p.job];
      if (p.executor < 0) {
        run.driver_bound = now;
        for (int e = 0; e < job.spec.executors; ++e)
          queue_.push_back({p.job, e});
      } else {
        run.executors_bound.push_back(now);
      }
      if (static_cast<int>(run.executors_bound.size()) == job.spec.executors) {
        run.started = now;
        finishes.emplace(now + job.duration_seconds, p.job);
      }
    }
    queue_ = std::move(unplaced);
  }

  void finish(size_t job, int64_t now) {
    JobRun& run = jobs_[job];
    run.finished = now;
    for (size_t k = 0; k < run.nodes.size(); ++k) {
      free_[run.nodes[k]] += k == 0 ? s_.jobs[job].spec.driver : s_.jobs[job].spec.executor;
    }
  }

  Outcome outcome() const {
    Outcome o;
    o.jobs = static_cast<int64_t>(s_.jobs.size());
    int64_t last = 0;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      const JobRun& run = jobs_[i];
      if (run.finished >= 0) {
        ++o.completed;
        last = std::max(last, run.finished);
      }
      if (run.driver_bound < 0) continue;
      const int64_t waited_until = run.started >= 0 ? run.started : horizon_;
      o.driver_cpu_seconds_waiting +=
          cpu(s_.jobs[i].spec.driver) * static_cast<double>(waited_until - run.driver_bound);
      for (int64_t bound : run.executors_bound) {
        o.executor_cpu_seconds_waiting +=
            cpu(s_.jobs[i].spec.executor) * static_cast<double>(waited_until - bound);
      }
    }
    o.makespan = o.completed == o.jobs ? last : -1;
    return o;
  }

  const Scenario& s_;
  int64_t horizon_;
  std::vector<Resources> free_;
  std::vector<JobRun> jobs_;
  std::deque<Pod> queue_;
};

std::string makespan_text(const Outcome& o) {
  return o.makespan < 0 ? std::string("-") : std::to_string(o.makespan);
}

// `gang` is the row the makespan ratio is taken against.
void print_row(const std::string& scenario, const char* placement, const Outcome& o,
               const Outcome& gang) {
  std::string ratio = "-";
  if (o.makespan > 0 && gang.makespan > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx",
                  static_cast<double>(o.makespan) / static_cast<double>(gang.makespan));
    ratio = buf;
  } else if (gang.makespan > 0) {
    ratio = "never done";
  }
  std::printf("| %s | %s | %lld / %lld | %s | %s | %.0f | %.0f |\n", scenario.c_str(), placement,
              static_cast<long long>(o.completed), static_cast<long long>(o.jobs),
              makespan_text(o).c_str(), ratio.c_str(), o.driver_cpu_seconds_waiting,
              o.executor_cpu_seconds_waiting);
}

}  // namespace
}  // namespace gleaner::scheduler::sim

int main(int argc, char** argv) {
  using gleaner::scheduler::sim::burst_scenario;
  using gleaner::scheduler::sim::Outcome;
  using gleaner::scheduler::sim::PodByPod;
  using gleaner::scheduler::sim::print_row;
  using gleaner::scheduler::sim::run_gang;
  using gleaner::scheduler::sim::Scenario;
  int64_t horizon = 3600;
  std::vector<std::pair<std::string, Scenario>> scenarios;
  std::vector<std::string> files;
  CLI::App app{"deadlock_bench: job outcomes of gang admission beside pod-by-pod placement"};
  gleaner::bench::positive_option(app, "--horizon", horizon, "simulated seconds");
  app.add_option("scenarios", files, "scenario files (JSON)")->check(CLI::ExistingFile);
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  for (const std::string& arg : files) {
    std::ifstream in(arg);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      std::fprintf(stderr, "deadlock_bench: cannot read %s\n", arg.c_str());
      return 2;
    }
    auto s = gleaner::scheduler::sim::parse_scenario_text(text.str(), arg);
    if (!s) {
      std::fprintf(stderr, "deadlock_bench: %s\n", s.error().message.c_str());
      return 2;
    }
    scenarios.emplace_back(arg.substr(arg.rfind('/') + 1), std::move(*s));
  }
  scenarios.emplace_back("burst: 100 x (1 driver + 4 executors) on 160 cores", burst_scenario());

  std::printf(
      "Horizon %lld s. Pod-by-pod: pods in creation order, first node with room, a "
      "driver's executors created when it is bound.\n\n",
      static_cast<long long>(horizon));
  std::printf(
      "| scenario | placement | jobs completed | makespan (s) | makespan / gang | "
      "driver CPU-s waiting | executor CPU-s waiting |\n|---|---|---|---|---|---|---|\n");
  for (const auto& [name, scenario] : scenarios) {
    const auto gang = run_gang(scenario, horizon);
    if (!gang) {
      std::fprintf(stderr, "deadlock_bench: %s: %s\n", name.c_str(), gang.error().message.c_str());
      return 1;
    }
    print_row(name, "Gleaner gang admission", *gang, *gang);
    print_row(name, "pod-by-pod (no gang)", PodByPod(scenario, horizon).run(), *gang);
  }
  return 0;
}
