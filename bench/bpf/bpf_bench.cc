// bpf_bench [seconds per run]: a pipe ping-pong between two processes pinned to one CPU
// (every message is a wake-up and a context switch), run with the sched probe off; on with
// pod cgroups registered but the load outside them (what a switch of an unwatched task
// costs); on with the load's own cgroup registered (a pod's task); and on tracking every
// cgroup. Prints the cost of each program (on sched_stat_runtime and on sched_switch) per
// event from BPF statistics, the probe's whole cost per context switch, and the ping-pong
// throughput, beside the published kprobe figure. A last run also attaches an empty
// program to sched_switch: its cost is the floor the statistics put under any program
// (their own clock reads and the call), and the table shows each cost beyond it.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/bpf/sched_probe.h"
#include "bench/bench_cli.h"

namespace {
using gleaner::agent::bpf::SchedProbe;
using gleaner::agent::bpf::SchedProbeOptions;

constexpr double kKprobeReferenceNs = 1600;  // kprobe-based context-switch probes, per event

void pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ::sched_setaffinity(0, sizeof(set), &set);
}

// This process's cgroup directory in the hierarchy the probe uses: the cpu controller's
// on v1/hybrid, the unified one on v2; empty when it cannot be told.
std::string own_cgroup_dir() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::string unified;
  while (std::getline(in, line)) {
    auto first = line.find(':');
    auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controllers.empty()) unified = "/sys/fs/cgroup" + path;
    std::string padded = "," + controllers + ",";
    if (padded.find(",cpu,") != std::string::npos) return "/sys/fs/cgroup/cpu" + path;
  }
  return unified;
}

// Round trips per second over `seconds`.
double ping_pong(double seconds) {
  int to_child[2];
  int to_parent[2];
  if (::pipe(to_child) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  if (::pipe(to_parent) != 0) {
    const int err = errno;
    ::close(to_child[0]);
    ::close(to_child[1]);
    throw std::system_error(err, std::generic_category(), "pipe");
  }
  pid_t child = ::fork();
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    pin_self(0);
    ::close(to_child[1]);  // so the read sees end of file when the parent is done
    ::close(to_parent[0]);
    char c;
    while (::read(to_child[0], &c, 1) == 1)
      if (::write(to_parent[1], &c, 1) != 1) break;
    ::_exit(0);
  }
  ::close(to_child[0]);
  ::close(to_parent[1]);
  pin_self(0);
  char c = 'x';
  long trips = 0;
  bool broken = false;
  auto start = std::chrono::steady_clock::now();
  auto end = start + std::chrono::duration<double>(seconds);
  while (!broken && std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 1000 && !broken; ++i, ++trips)
      broken = ::write(to_child[1], &c, 1) != 1 || ::read(to_parent[0], &c, 1) != 1;
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(to_child[1]);
  ::waitpid(child, nullptr, 0);
  ::close(to_parent[0]);
  if (broken) throw std::runtime_error("ping-pong partner stopped answering");
  return static_cast<double>(trips) / elapsed;
}

// The probe cannot run here (no BPF, no permission): the benchmark says why and skips.
struct ProbeUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Row {
  std::string name;
  double trips_per_sec = 0;
  std::optional<double> switch_ns;
  double switch_rate = 0;
  std::optional<double> runtime_ns;
  double runtime_rate = 0;
  double probe_cpu_share = 0;      // all programs' run time / wall time
  std::optional<double> empty_ns;  // the empty program's, when attached
};

Row run(const std::string& name, std::optional<SchedProbeOptions> options, double seconds,
        const std::string& extra_dir = "") {
  Row row{name};
  std::unique_ptr<SchedProbe> probe;
  if (options) {
    auto opened = SchedProbe::open(*options);
    if (!opened) throw ProbeUnavailable(name + ": " + opened.error().describe());
    probe = std::move(*opened);
    // Pod directories as the agent registers them (the load itself is not in one).
    for (const char* dir : {"/sys/fs/cgroup/cpu/kubepods", "/sys/fs/cgroup/kubepods"})
      (void)probe->track(dir);
    if (!extra_dir.empty()) {
      if (auto tracked = probe->track(extra_dir); !tracked) {
        throw ProbeUnavailable(name + ": " + tracked.error().describe());
      }
    }
    (void)probe->program_costs();
  }
  row.trips_per_sec = ping_pong(seconds);
  if (probe) {
    auto costs = probe->program_costs();
    if (costs) {
      for (const auto& c : *costs) {
        if (c.name == "gleaner_switch") {
          row.switch_ns = c.ns_per_event;
          row.switch_rate = c.events_per_sec;
        }
        if (c.name == "gleaner_runtime") {
          row.runtime_ns = c.ns_per_event;
          row.runtime_rate = c.events_per_sec;
        }
        if (c.name == "gleaner_calibrate") {
          row.empty_ns = c.ns_per_event;
          continue;  // not part of the probe
        }
        if (c.ns_per_event) row.probe_cpu_share += *c.ns_per_event * c.events_per_sec / 1e9;
      }
    }
  }
  return row;
}

std::string fmt_opt(const std::optional<double>& v) {
  char buf[32];
  if (!v) return "-";
  std::snprintf(buf, sizeof(buf), "%.0f", *v);
  return buf;
}

// The table: every configuration, one after another, on the same load.
int measure(double seconds) {
  SchedProbeOptions registered;
  registered.enable_stats = true;
  SchedProbeOptions all = registered;
  all.track_all = true;

  const std::string own_dir = own_cgroup_dir();
  std::vector<Row> rows;
  rows.push_back(run("probe off", std::nullopt, seconds));
  rows.push_back(run("probe on, load outside registered pods", registered, seconds));
  if (!own_dir.empty()) {
    rows.push_back(run("probe on, load in a registered cgroup", registered, seconds, own_dir));
  }
  rows.push_back(run("probe on, every cgroup", all, seconds));
  const double off = rows.front().trips_per_sec;
  SchedProbeOptions calibrate = registered;
  calibrate.calibrate = true;
  const std::optional<double> floor_ns =
      run("empty program beside the probe", calibrate, seconds).empty_ns;

  std::printf("\npipe ping-pong, 2 processes pinned to CPU 0, %.1f s per run\n\n", seconds);
  std::printf(
      "| configuration | round trips/s | vs off | sched_switch events/s | ns/switch event "
      "| ns beyond an empty program | sched_stat_runtime events/s | ns/runtime event "
      "| probe ns per context switch (both programs) | probe CPU (share of 1 CPU) "
      "| per switch vs kprobe 1.6 us |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    // Everything the probe spends, spread over the context switches it watched.
    std::optional<double> per_switch;
    if (r.switch_rate > 0) per_switch = r.probe_cpu_share * 1e9 / r.switch_rate;
    char ratio[32] = "-";
    if (per_switch) std::snprintf(ratio, sizeof(ratio), "%.3f", *per_switch / kKprobeReferenceNs);
    std::optional<double> beyond;
    if (r.switch_ns && floor_ns) beyond = *r.switch_ns - *floor_ns;
    std::printf("| %s | %.0f | %.3f | %.0f | %s | %s | %.0f | %s | %s | %.4f | %s |\n",
                r.name.c_str(), r.trips_per_sec, r.trips_per_sec / off, r.switch_rate,
                fmt_opt(r.switch_ns).c_str(), fmt_opt(beyond).c_str(), r.runtime_rate,
                fmt_opt(r.runtime_ns).c_str(), fmt_opt(per_switch).c_str(), r.probe_cpu_share,
                ratio);
  }
  std::printf("\nreference: kprobe-based context-switch probes ~%.0f ns/event; target <= 100 ns\n",
              kKprobeReferenceNs);
  std::printf(
      "ns/switch event includes the run-time statistics' own clock reads and the call; an "
      "empty sched_switch program costs %s ns here\n",
      fmt_opt(floor_ns).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3.0;
  CLI::App app{"bpf_bench: the eBPF sched probe's cost under a context-switch-heavy load"};
  gleaner::bench::positive_option(app, "seconds", seconds, "length of each run");
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  if (!gleaner::agent::bpf::sched_probe_built()) {
    std::printf("bpf_bench: %s\n", gleaner::agent::bpf::sched_probe_build_reason().c_str());
    return 0;
  }
  try {
    return measure(seconds);
  } catch (const ProbeUnavailable& e) {
    std::printf("%s\n", e.what());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bpf_bench: %s\n", e.what());
    return 1;
  }
}
