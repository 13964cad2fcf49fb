// bpf_bench [seconds per run] [--rounds N]: a pipe ping-pong between two processes pinned to
// one CPU (every message is a wake-up and a context switch), run with the sched probe off;
// on with pod cgroups registered but the load outside them (what a switch of an unwatched
// task costs); on with the load's own cgroup registered (a pod's task); and on tracking
// every cgroup. Prints the cost of each program (on sched_stat_runtime and on sched_switch)
// per event from BPF statistics, the probe's whole cost per context switch, and the
// ping-pong throughput, beside the published kprobe figure. One more run attaches an empty
// program to sched_switch: its cost is the floor the statistics put under any program
// (their own clock reads and the call), and the table shows each cost beyond it. Every
// configuration runs once per round, in an order rotated each round; the table gives
// medians over the rounds and, for the throughput ratio and the cost per context switch,
// their spread.
#include <algorithm>
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
#include "bench/bench_stats.h"

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
        const std::string& extra_dir = "",
        const std::optional<gleaner::agent::bpf::WakeSettings>& wake = std::nullopt) {
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
    if (wake) probe->set_wake(*wake);
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

// One configuration of the table: how to run it, and its row from every round.
struct Config {
  std::string name;
  std::optional<SchedProbeOptions> options;
  std::string extra_dir;
  bool shown = true;  // the empty program's run only gives the floor
  std::vector<Row> rounds;
  std::optional<gleaner::agent::bpf::WakeSettings> wake;
};

// The values `get` gives for the rounds that have one.
template <typename Get>
std::vector<double> across(const std::vector<Row>& rows, Get get) {
  std::vector<double> values;
  for (const Row& r : rows) {
    std::optional<double> v = get(r);
    if (v) values.push_back(*v);
  }
  return values;
}

std::optional<double> median_of(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return gleaner::bench::median(values);
}

// "median (min-max)" with `digits` decimals, "-" for no values.
std::string spread(const std::vector<double>& values, int digits) {
  if (values.empty()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f (%.*f-%.*f)", digits, gleaner::bench::median(values),
                digits, *std::min_element(values.begin(), values.end()), digits,
                *std::max_element(values.begin(), values.end()));
  return buf;
}

// Everything the probe spent in a run, spread over the context switches it watched.
std::optional<double> per_switch_ns(const Row& r) {
  if (r.switch_rate <= 0) return std::nullopt;
  return r.probe_cpu_share * 1e9 / r.switch_rate;
}

// The table: every configuration once per round, the order rotated each round so that no
// configuration always runs first or last (this machine drifts over a minute); each
// figure is the median over the rounds, ratios taken against the same round's run without
// the probe.
int measure(double seconds, int rounds) {
  SchedProbeOptions registered;
  registered.enable_stats = true;
  SchedProbeOptions all = registered;
  all.track_all = true;
  SchedProbeOptions calibrate = registered;
  calibrate.calibrate = true;

  const std::string own_dir = own_cgroup_dir();
  std::vector<Config> configs;
  configs.push_back({"probe off", std::nullopt});
  configs.push_back({"probe on, load outside registered pods", registered});
  if (!own_dir.empty()) {
    configs.push_back({"probe on, load in a registered cgroup", registered, own_dir});
    // The agent's wake-up signals armed with bounds the load never reaches: every runtime
    // event adds to the demand window and every switch compares its wait, as on a node.
    gleaner::agent::bpf::WakeSettings armed;
    armed.runq_wait_bound = std::chrono::seconds(1);
    armed.demand_millicores = 1'000'000;
    configs.push_back({"probe on, load in a registered cgroup, wake-ups armed",
                       registered,
                       own_dir,
                       true,
                       {},
                       armed});
  }
  configs.push_back({"probe on, every cgroup", all});
  configs.push_back({"empty program beside the probe", calibrate, "", false});

  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < configs.size(); ++i) {
      Config& c = configs[(i + static_cast<size_t>(round)) % configs.size()];
      c.rounds.push_back(run(c.name, c.options, seconds, c.extra_dir, c.wake));
    }
  }
  const std::vector<Row>& off = configs.front().rounds;
  const std::optional<double> floor_ns =
      median_of(across(configs.back().rounds, [](const Row& r) { return r.empty_ns; }));

  std::printf(
      "\npipe ping-pong, 2 processes pinned to CPU 0, %.1f s per run, %d rounds; medians over "
      "the rounds, (min-max) where shown\n\n",
      seconds, rounds);
  std::printf(
      "| configuration | round trips/s | vs off, same round | sched_switch events/s "
      "| ns/switch event | ns beyond an empty program | sched_stat_runtime events/s "
      "| ns/runtime event | probe ns per context switch (both programs) "
      "| probe CPU (share of 1 CPU) | per switch vs kprobe 1.6 us |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Config& c : configs) {
    if (!c.shown) continue;
    const std::vector<Row>& rows = c.rounds;
    std::vector<double> vs_off;
    for (size_t r = 0; r < rows.size() && r < off.size(); ++r)
      vs_off.push_back(rows[r].trips_per_sec / off[r].trips_per_sec);
    std::vector<double> per_switch = across(rows, per_switch_ns);
    std::optional<double> switch_ns =
        median_of(across(rows, [](const Row& r) { return r.switch_ns; }));
    std::optional<double> beyond;
    if (switch_ns && floor_ns) beyond = *switch_ns - *floor_ns;
    char vs_kprobe[32] = "-";
    if (!per_switch.empty()) {
      std::snprintf(vs_kprobe, sizeof(vs_kprobe), "%.3f",
                    *median_of(per_switch) / kKprobeReferenceNs);
    }
    auto median_field = [&](auto get) { return *median_of(across(rows, get)); };
    std::printf(
        "| %s | %.0f | %s | %.0f | %s | %s | %.0f | %s | %s | %.4f | %s |\n", c.name.c_str(),
        median_field([](const Row& r) { return std::optional(r.trips_per_sec); }),
        spread(vs_off, 3).c_str(),
        median_field([](const Row& r) { return std::optional(r.switch_rate); }),
        fmt_opt(switch_ns).c_str(), fmt_opt(beyond).c_str(),
        median_field([](const Row& r) { return std::optional(r.runtime_rate); }),
        fmt_opt(median_of(across(rows, [](const Row& r) { return r.runtime_ns; }))).c_str(),
        spread(per_switch, 0).c_str(),
        median_field([](const Row& r) { return std::optional(r.probe_cpu_share); }), vs_kprobe);
  }
  std::printf("\nreference: kprobe-based context-switch probes ~%.0f ns/event; target <= 100 ns\n",
              kKprobeReferenceNs);
  std::printf(
      "ns/switch event includes the run-time statistics' own clock reads and the call; an "
      "empty sched_switch program costs %s ns here (a figure beyond it at or below 0: the "
      "program's own work is within that floor's noise)\n",
      fmt_opt(floor_ns).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 2.0;
  int rounds = 5;
  CLI::App app{"bpf_bench: the eBPF sched probe's cost under a context-switch-heavy load"};
  gleaner::bench::positive_option(app, "seconds", seconds, "length of each run");
  gleaner::bench::positive_option(app, "--rounds", rounds,
                                  "times each configuration runs (medians are reported)");
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  if (!gleaner::agent::bpf::sched_probe_built()) {
    std::printf("bpf_bench: %s\n", gleaner::agent::bpf::sched_probe_build_reason().c_str());
    return 0;
  }
  try {
    return measure(seconds, rounds);
  } catch (const ProbeUnavailable& e) {
    std::printf("%s\n", e.what());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bpf_bench: %s\n", e.what());
    return 1;
  }
}
