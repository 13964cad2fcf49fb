// Reaction time on real cgroups: best-effort busy loops run in a besteffort pod; at a random
// moment a latency-sensitive pod's busy loop starts (the surge). We time from the surge to
// the moment the agent's write that suppresses BE lands in the cgroup file (the besteffort
// QoS cgroup's CFS quota, or its cpuset), polled from a separate thread (cgroupfs offers no
// inotify events for kernel-side values, and the agent writes through ordinary writes we
// cannot hook without changing it). The agent runs in-process, on its own io_context thread,
// with the suppress ceiling always applied (cpuSuppressMode always: the shipped mode,
// onInterference, leaves an LS surge to the kernel's CPU priority and applies no ceiling
// unless LS waits): as shipped (the eBPF probe wakes the fast path when LS demand rises
// or an LS task waits, the 50 ms fast loop behind it), without the wake-ups, with the eBPF
// probe off, and restricted to a 1 s loop.
//
// The cpuset policy leaves BE at least 2 CPUs by default; on a machine with 2 CPUs it runs
// with cpuSuppressMinCPUs 1, so a surge can take one of them, and its rows say so.
//
// Every trial starts from BE's idle allowance (learnt once, held still for 300 ms), so every
// surge asks the agent for the same cut; "landed" means the allowance fell by half the
// surge's core. Trials whose start never settled are counted apart, not as reactions.
//
// With --mode slo the agent runs cpuSuppressMode slo (BE's allowance steered by the LS
// waits BE causes): at rest BE is allowed most of the node, the surge's spinner waits behind
// BE's slices, and the reaction is the first cut of the allowance (the controller cuts in
// proportion to the breach, so a cut may be smaller than half a core).
//
// Usage: reaction_bench [--trials N] [--policy cfsQuota|cpuset|both] [--configs shipped|1s|both]
//                       [--mode always|slo]
// Needs root (real cgroups); cleans up its cgroups and processes even when interrupted.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/daemon/daemon.h"
#include "bench/bench_cli.h"
#include "bench/bench_stats.h"
#include "cgroup/cgroup_fs.h"
#include "common/file_io.h"
#include "common/log.h"
#include "test/support/colocated_node.h"
#include "test/support/in_process_agent.h"

namespace {
using gleaner::bench::percentile;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using gleaner::cgroup::Resource;

volatile std::sig_atomic_t g_interrupted = 0;

struct Config {
  std::string label;
  std::chrono::milliseconds interval;
  std::chrono::milliseconds fast_interval;
  bool ebpf;
  bool wakeups;  // the probe wakes the fast path between ticks
};

// A process parked inside the LS pod cgroup that starts spinning when released: the surge
// begins at a moment we know to the microsecond, not when fork() happens to return.
class SurgeProcess {
 public:
  SurgeProcess(gleaner::testing::ScratchCgroups& scratch, const std::string& cgroup) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(fds[1]);
      char byte = 0;
      if (::read(fds[0], &byte, 1) != 1) ::_exit(1);
      volatile uint64_t spin = 0;
      for (;;)
        spin = spin + 1;
    }
    ::close(fds[0]);
    go_ = fds[1];
    scratch.move(pid_, cgroup);
  }
  ~SurgeProcess() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    ::close(go_);
  }
  SurgeProcess(const SurgeProcess&) = delete;
  SurgeProcess& operator=(const SurgeProcess&) = delete;
  void release() {
    char byte = 1;
    if (::write(go_, &byte, 1) != 1) throw std::runtime_error("surge release failed");
  }

 private:
  pid_t pid_ = -1;
  int go_ = -1;
};

// Polls `probe` every ~200 us until it reports the suppression landed or the deadline passes.
std::optional<Clock::time_point> wait_landed(const std::function<bool()>& probe,
                                             Clock::time_point deadline) {
  while (Clock::now() < deadline && !g_interrupted) {
    if (probe()) return Clock::now();
    std::this_thread::sleep_for(200us);
  }
  return std::nullopt;
}

struct Result {
  std::vector<double> ms;
  int not_settled = 0;  // BE's allowance never came back to its idle level before the trial
  int missed = 0;       // settled, surged, and no suppression landed within 10 s
  int not_run = 0;      // the --budget-seconds ran out first
};

// --budget-seconds: no wait goes past it and no trial starts after it, however busy the
// machine; what did not run is reported. time_point::max(): no budget.
Clock::time_point g_budget_end = Clock::time_point::max();
Clock::time_point within_budget(Clock::time_point deadline) {
  return std::min(deadline, g_budget_end);
}

// Waits until the allowance has held one value for `stable` (the agent's dead band keeps an
// idle node's quota still) at or above `floor`; returns that value.
std::optional<int64_t> wait_stable(const std::function<int64_t()>& allowance, int64_t floor,
                                   std::chrono::milliseconds stable, Clock::time_point deadline) {
  int64_t value = allowance();
  auto since = Clock::now();
  while (Clock::now() < deadline && !g_interrupted) {
    std::this_thread::sleep_for(20ms);
    int64_t now_value = allowance();
    if (now_value != value) {
      value = now_value;
      since = Clock::now();
    } else if (value >= floor && Clock::now() - since >= stable) {
      return value;
    }
  }
  return std::nullopt;
}

// `min_cpus`: cpuSuppressMinCPUs for the cpuset policy (0: the default, 2).
Result run_config(const Config& cfg, const std::string& policy, int min_cpus, int trials, bool slo,
                  std::mt19937& rng) {
  using namespace gleaner;
  // 90%: an idle LS leaves BE ~1.8 cores minus system use, a 1-core surge takes ~1 core away.
  const std::string min_field =
      min_cpus > 0 ? R"(,"cpuSuppressMinCPUs":)" + std::to_string(min_cpus) : "";
  testing::ColocatedNode node(
      {.threshold_config = R"({"clusterStrategy":{"enable":true,)"
                           R"("cpuSuppressThresholdPercent":90,"cpuSuppressPolicy":")" +
                           policy + "\"" + min_field + (slo ? R"(,"cpuSuppressMode":"slo")" : "") +
                           "}}"});  // removed at scope end, also after SIGINT
  testing::ScratchCgroups& scratch = node.scratch();
  const std::string& ls_pod = node.ls_pod();
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  for (int i = 0; i < cpus; ++i)
    scratch.spawn_busy(node.be_pod());

  agent::DaemonOptions opt = testing::agent_options(node);
  opt.interval = cfg.interval;
  opt.fast_interval = cfg.fast_interval;
  opt.ebpf = cfg.ebpf;
  opt.ebpf_wakeups = cfg.wakeups;
  // The interference rule holds BE down for its hold time after LS run-queue latency trips
  // (every surge trips it); a short hold keeps the trials minutes, not hours, apart.
  opt.interference_hold = "2s";

  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  const bool quota_policy = policy == "cfsQuota";
  // The BE allowance as one number: quota in us per 100 ms period, or CPUs in the cpuset
  // (scaled to the same units so one threshold works for both).
  auto allowance = [&]() -> int64_t {
    if (quota_policy) {
      auto quota = fs.read_int(Resource::kCpuQuota, node.be_qos());
      if (!quota.ok()) return -2;
      return *quota < 0 ? int64_t{100000} * cpus : *quota;
    }
    auto cpuset = fs.read_cpuset(node.be_qos());
    if (!cpuset.ok()) return -2;
    return int64_t{100000} * static_cast<int64_t>(cpuset->size());
  };

  // A start failure throws; the scratch cgroups and children are removed on the way out.
  auto agent = std::make_unique<testing::InProcessAgent>(opt);

  Result result;
  // The idle level: what BE is allowed while LS idles. Each trial starts from it, so every
  // surge asks for the same cut; a level that drifts (other work on a shared machine moves
  // the system-usage term) is re-learnt when the allowance holds still elsewhere for long.
  // In slo mode the allowance grows a step each pass towards the node; a level most of the
  // node and held between two passes is where trials start.
  const int64_t idle_floor = slo ? int64_t{75000} * cpus : 60000;
  auto baseline = wait_stable(allowance, idle_floor, slo ? 300ms : 1s,
                              within_budget(Clock::now() + (slo ? 60s : 30s)));
  if (!baseline) {
    std::fprintf(stderr, "reaction_bench: BE allowance never settled (now %lld)\n",
                 static_cast<long long>(allowance()));
    result.not_settled = trials;
  }
  std::uniform_int_distribution<int> phase_ms(0, 999);
  for (int t = 0; baseline && t < trials && !g_interrupted; ++t) {
    if (Clock::now() >= g_budget_end) {
      result.not_run = trials - t;
      break;
    }
    auto settled = wait_stable(allowance, slo ? idle_floor : *baseline - 10000, 300ms,
                               within_budget(Clock::now() + (slo ? 40s : 20s)));
    if (!settled && !slo) {
      settled = wait_stable(allowance, 110000, 2s, within_budget(Clock::now() + 10s));
      if (settled) baseline = settled;
    }
    if (!settled) {
      std::fprintf(stderr, "reaction_bench: trial %d skipped: idle level %lld, allowance %lld\n", t,
                   static_cast<long long>(*baseline), static_cast<long long>(allowance()));
      ++result.not_settled;
      continue;
    }
    SurgeProcess surge(scratch, ls_pod);
    std::this_thread::sleep_for(std::chrono::milliseconds(phase_ms(rng)));  // random phase
    // Landed: the allowance fell by at least half of the surge's core (slo: any cut, a
    // hundredth of a core or more; at rest it only grows).
    const int64_t target = *settled - (slo ? 1000 : 50000);
    auto start = Clock::now();
    surge.release();
    spdlog::info("trial {}: LS surge released (BE allowance {})", t, *settled);
    auto landed = wait_landed([&] { return allowance() <= target; }, start + 10s);
    if (landed) {
      result.ms.push_back(std::chrono::duration<double, std::milli>(*landed - start).count());
      spdlog::info("trial {}: landed after {:.1f} ms", t, result.ms.back());
    } else {
      ++result.missed;
      spdlog::info("trial {}: not landed within 10 s", t);
    }
  }  // the surge process is killed here, LS goes idle again

  agent->stop();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 50;
  std::string policies = "both";
  std::string which = "both";
  int budget_seconds = 0;
  std::string log_level = "warn";
  std::string mode = "always";
  CLI::App app{"reaction_bench: LS surge -> BE throttle landed, per policy and configuration"};
  gleaner::bench::positive_option(app, "--trials", trials, "surges per configuration");
  app.add_option("--policy", policies, "CPU suppress policy")
      ->check(CLI::IsMember({"cfsQuota", "cpuset", "both"}))
      ->capture_default_str();
  app.add_option("--configs", which, "the shipped loops, the 1 s loop, or both")
      ->check(CLI::IsMember({"shipped", "1s", "both"}))
      ->capture_default_str();
  app.add_option("--mode", mode, "cpuSuppressMode: always (the threshold ceiling) or slo")
      ->check(CLI::IsMember({"always", "slo"}))
      ->capture_default_str();
  gleaner::bench::non_negative_option(
      app, "--budget-seconds", budget_seconds,
      "wall-clock budget for all trials (0: none); trials left when it runs out are reported");
  app.add_option("--log-level", log_level,
                 "the agent's log level; info also logs each trial's surge and landing, beside "
                 "the agent's cgroup writes (to see where a slow trial's time went)")
      ->check(CLI::IsMember({"warn", "info", "debug"}))
      ->capture_default_str();
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  if (budget_seconds > 0) g_budget_end = Clock::now() + std::chrono::seconds(budget_seconds);
  auto skip = gleaner::testing::real_cgroup_skip_reason();
  if (!skip.empty()) {
    std::printf("reaction_bench: skipped: %s\n", skip.c_str());
    return 0;
  }
  (void)gleaner::init_logging(log_level);
  std::signal(SIGINT, [](int) { g_interrupted = 1; });
  std::signal(SIGTERM, [](int) { g_interrupted = 1; });

  const std::vector<Config> configs = {
      {"Gleaner as shipped: eBPF wake-ups, 50 ms fast loop", 1000ms, 50ms, true, true},
      {"Gleaner, 50 ms fast loop, eBPF on, wake-ups off", 1000ms, 50ms, true, false},
      {"Gleaner, 50 ms fast loop, eBPF off", 1000ms, 50ms, false, false},
      {"Gleaner restricted to a 1 s loop (koordlet's cadence), eBPF off", 1000ms, 0ms, false,
       false},
  };
  std::vector<std::string> policy_list;
  if (policies == "both" || policies == "cfsQuota") policy_list.emplace_back("cfsQuota");
  if (policies == "both" || policies == "cpuset") policy_list.emplace_back("cpuset");
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  std::mt19937 rng(std::random_device{}());

  std::printf(
      "| policy | configuration | landed / surged | not settled | p50 (ms) | p99 (ms) | max (ms) "
      "| p99 ratio to Gleaner as shipped |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const auto& policy : policy_list) {
    // By default the cpuset policy leaves BE at least 2 CPUs, so on a node of 2 or fewer a
    // surge cannot shrink the set: there it runs with cpuSuppressMinCPUs 1, and says so.
    const int min_cpus = policy == "cpuset" && cpus <= 2 ? 1 : 0;
    std::string policy_label =
        min_cpus > 0 ? policy + " (cpuSuppressMinCPUs " + std::to_string(min_cpus) + ")" : policy;
    if (mode == "slo") policy_label += ", cpuSuppressMode slo";
    double shipped_p99 = 0;
    for (const auto& cfg : configs) {
      const bool shipped = cfg.fast_interval.count() > 0;
      if ((which == "shipped" && !shipped) || (which == "1s" && shipped)) continue;
      Result r;
      try {
        r = run_config(cfg, policy, min_cpus, trials, mode == "slo", rng);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "reaction_bench: %s\n", e.what());
        return 1;
      }
      if (g_interrupted) return 130;
      const double p99 = percentile(r.ms, 0.99);
      if (shipped_p99 == 0) shipped_p99 = p99;
      std::printf("| %s | %s | %zu / %d | %d | %.1f | %.1f | %.1f | %.2fx |\n",
                  policy_label.c_str(), cfg.label.c_str(), r.ms.size(),
                  static_cast<int>(r.ms.size()) + r.missed, r.not_settled, percentile(r.ms, 0.5),
                  p99, r.ms.empty() ? 0.0 : *std::max_element(r.ms.begin(), r.ms.end()),
                  shipped_p99 > 0 ? p99 / shipped_p99 : 0.0);
      if (r.not_run > 0) {
        std::printf("| %s | %s: %d trial(s) not run, the budget of %d s ran out | | | | | | |\n",
                    policy_label.c_str(), cfg.label.c_str(), r.not_run, budget_seconds);
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
