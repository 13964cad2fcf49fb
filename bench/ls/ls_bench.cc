// LS protection while harvesting (Heracles-style), on real cgroups. A small HTTP service
// (plain sockets, a thread per connection, a fixed amount of work per request: table
// lookups calibrated to `--work-us` of CPU on the idle machine, so cache and core
// interference lengthen it) runs in an LS pod cgroup under an open-loop fixed request rate
// (by default the rate at which the service alone uses half the CPUs); latency counts from
// each request's scheduled send time, so a stalled server is not hidden by a stalled
// client. BE work is a CPU- and cache-hungry loop per CPU in a besteffort pod.
// Configurations, same load and duration:
//   a: LS alone
//   b: LS + BE, plain kubelet-style cgroups (BE cpu.shares 2, nothing else)
//   c: LS + BE, Gleaner restricted to a 1 s loop, with the suppress ceiling always applied
//      (cpuSuppressMode always), as koordlet does
//   d: LS + BE, Gleaner's loops as shipped: 1 s full pass + 50 ms fast suppress loop, eBPF
//      on, the ceiling applied only on LS interference (cpuSuppressMode onInterference, not
//      the shipped slo: bench/frontier runs that one), with the shipped cfsQuota policy
//   e: LS + BE, no agent, a fixed BE quota of 0.6 core: what the kernel's CFS bandwidth
//      throttling of BE costs LS by itself, apart from any agent's decisions
//   f: LS + BE, Gleaner with the 50 ms fast loop but the ceiling always applied: separates
//      what the fast loop buys from what the mode buys
// The load generator and the agent run in this process; the agent's thread is moved into
// its own pod cgroup. The load generator stays outside the kubepods tree and by default its
// threads run SCHED_FIFO: on a node the clients of an LS service are elsewhere, and a
// generator at normal priority competes with the whole kubepods group (where BE's low
// weight does not count), so its own wake-up delays would be measured as the service's.
// --client normal keeps the generator at normal priority, to measure that on-node case.
//
// Usage: ls_bench [--seconds S] [--repeats N] [--rate RPS] [--work-us US] [--lookups N]
//                 [--configs abcdef] [--profile steady|steps|both] [--threshold PERCENT]
//                 [--client fifo|normal] [--be cache|cpu]
// --threshold sets cpuSuppressThresholdPercent for (c), (d) and (f) (default 65, koordlet's);
// the policy is cfsQuota, as the cpuset policy cannot act on a node with 2 CPUs.
// "steps" alternates the rate every 2 s between a quarter and all of it: the load steps in
// which an agent has to take CPU back from BE quickly.
// Needs root; cleans up its cgroups and processes even when interrupted.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_cli.h"
#include "bench/bench_stats.h"
#include "bench/frontier/load.h"
#include "bench/frontier/protocols.h"
#include "bench/ls/ls_service.h"
#include "cgroup/cgroup_fs.h"
#include "common/file_io.h"
#include "common/log.h"
#include "test/support/colocated_node.h"
#include "test/support/in_process_agent.h"

namespace {
using gleaner::bench::median;
using gleaner::bench::percentile;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using gleaner::bench::ls::calibrate_iterations;
using gleaner::bench::ls::serve;
using gleaner::bench::ls::service_table;
using gleaner::cgroup::Resource;

std::atomic<bool> g_interrupted{false};  // lock-free: set from the signal handler
constexpr int kConnections = 8;
int g_threshold = 65;       // cpuSuppressThresholdPercent for (c), (d) and (f)
bool g_client_fifo = true;  // the load generator's threads run SCHED_FIFO (an off-node client)
bool g_be_cache = true;     // BE sweeps a buffer (CPU and cache); false: CPU only

// A forked child killed and reaped when the run ends, also when it ends by an exception.
struct ChildProcess {
  pid_t pid;
  explicit ChildProcess(pid_t child) : pid(child) {
    if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

// The load: the frontier benchmark's open-loop generator (bench/frontier/load.h) speaking
// HTTP/1.1 keep-alive to the service, which answers every request alike, whatever its path.
gleaner::bench::frontier::LoadResult generate(uint16_t port, double rate,
                                              std::chrono::milliseconds duration, bool steps) {
  static const auto http = gleaner::bench::frontier::http_protocol();
  gleaner::bench::frontier::LoadOptions options;
  options.rate = rate;
  options.duration = duration;
  options.connections = kConnections;
  options.fifo = g_client_fifo;
  options.steps = steps;
  options.stop = &g_interrupted;
  try {
    return gleaner::bench::frontier::generate(*http, port, options);
  } catch (const std::runtime_error& e) {
    // The advice fits this benchmark's flag.
    if (std::string(e.what()).starts_with("SCHED_FIFO")) {
      throw std::runtime_error(
          "SCHED_FIFO for the load generator refused (needs root or CAP_SYS_NICE; or use "
          "--client normal)");
    }
    throw;
  }
}

struct CpuTimes {
  uint64_t busy = 0, total = 0, steal = 0;
};

// /proc/stat's "cpu" line: user nice system idle iowait irq softirq steal ...
CpuTimes proc_stat_cpu() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  uint64_t v[10] = {};
  in >> cpu;
  for (auto& x : v)
    in >> x;
  uint64_t total = 0;
  for (int i = 0; i < 8; ++i)
    total += v[i];
  return {total - v[3] - v[4], total, v[7]};
}

double cpu_seconds(gleaner::cgroup::CgroupFs& fs, const std::string& cgroup) {
  auto ns = fs.read_cpu_usage_ns(cgroup);
  return ns.ok() ? static_cast<double>(*ns) / 1e9 : 0;
}

// How many CFS periods the group spent throttled.
double throttled_periods(gleaner::cgroup::CgroupFs& fs, const std::string& cgroup) {
  auto throttle = fs.read_cpu_throttle(cgroup);
  return throttle.ok() ? static_cast<double>(throttle->nr_throttled) : 0;
}

struct Run {
  double p50 = 0, p99 = 0, p999 = 0;
  double served = 0;
  double be_cpu_s = 0, ls_cpu_s = 0, node_util = 0, idle_to_be = 0;
  double steal = 0;         // share of the node's CPU time the hypervisor gave to others
  double be_throttled = 0;  // CFS periods the besteffort QoS group spent throttled
  double wall_s = 0;
};

// The LS service: its table (built once; every run's forked server shares it), the work
// per request (`iterations` lookups, calibrated to `work_us` of CPU with the table in
// cache, so interference lengthens it), and the share of the machine's CPUs the service
// alone used at the chosen rate (0: not measured).
struct Service {
  std::vector<uint32_t> table = service_table();
  int work_us = 600;
  int64_t iterations = 0;
  bool calibrated = false;  // `iterations` measured here from `work_us`, not given
  double alone_share = 0;
};

Run run_once(char config, double rate, const Service& service, std::chrono::milliseconds duration,
             bool steps) {
  using namespace gleaner;
  const bool on_interference = config == 'd';
  testing::ColocatedNode node(
      {.threshold_config = R"({"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":)" +
                           std::to_string(g_threshold) +
                           R"(,"cpuSuppressPolicy":"cfsQuota","cpuSuppressMode":")" +
                           (on_interference ? "onInterference" : "always") + R"("}})"});
  testing::ScratchCgroups& scratch = node.scratch();  // removed with `node`, also after SIGINT
  const std::string& be_qos = node.be_qos();
  const std::string& ls_pod = node.ls_pod();
  const std::string& be_pod = node.be_pod();
  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  const bool v2 = scratch.version() == cgroup::CgroupVersion::kV2;
  for (const auto& dir : {be_qos, be_pod}) {  // kubelet: BestEffort gets the minimum shares
    if (auto p = fs.path_of(Resource::kCpuShares, dir); p.ok() && !v2) (void)write_file(*p, "2");
  }

  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 64) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    ::close(listener);
    throw std::system_error(err, std::generic_category(), "LS service listen on loopback");
  }
  ChildProcess server(::fork());  // before any thread of ours exists in this run
  if (server.pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    serve(listener, service.table, service.iterations);
  }
  ::close(listener);
  scratch.move(server.pid, ls_pod);
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (config != 'a') {
    for (int i = 0; i < cpus; ++i) {
      if (g_be_cache) {
        scratch.spawn_cache_hungry(be_pod, 16 << 20);
      } else {
        scratch.spawn_busy(be_pod, 16 << 20);
      }
    }
  }

  std::unique_ptr<testing::InProcessAgent> agent;
  if (config == 'e') {
    if (auto p = fs.path_of(Resource::kCpuQuota, be_qos); p.ok()) (void)write_file(*p, "60000");
  }
  if (config == 'c' || config == 'd' || config == 'f') {
    agent::DaemonOptions opt = testing::agent_options(node);
    opt.interval = 1000ms;
    opt.fast_interval = config == 'c' ? 0ms : 50ms;
    // In its own pod, as the DaemonSet runs it: it competes with LS at its pod weight. A
    // start failure throws; the server, the busy loops and the cgroups go on the way out.
    agent = std::make_unique<testing::InProcessAgent>(opt, node.agent_tasks_file());
  }
  (void)generate(ntohs(addr.sin_port), rate, 1500ms, steps);  // warm-up: agent settles, caches fill

  Run run;
  const CpuTimes stat0 = proc_stat_cpu();
  double be0 = cpu_seconds(fs, be_qos);
  double ls0 = cpu_seconds(fs, ls_pod);
  const double throttled0 = throttled_periods(fs, be_qos);
  auto wall0 = Clock::now();
  gleaner::bench::frontier::LoadResult load = generate(ntohs(addr.sin_port), rate, duration, steps);
  double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
  const CpuTimes stat1 = proc_stat_cpu();
  run.be_cpu_s = cpu_seconds(fs, be_qos) - be0;
  run.ls_cpu_s = cpu_seconds(fs, ls_pod) - ls0;
  run.be_throttled = throttled_periods(fs, be_qos) - throttled0;
  const auto ticks = static_cast<double>(std::max<uint64_t>(1, stat1.total - stat0.total));
  run.node_util = static_cast<double>(stat1.busy - stat0.busy) / ticks;
  run.steal = static_cast<double>(stat1.steal - stat0.steal) / ticks;
  run.idle_to_be = run.be_cpu_s / std::max(1e-9, cpus * wall - run.ls_cpu_s);
  run.wall_s = wall;
  run.p50 = percentile(load.latencies_ms, 0.5);
  run.p99 = percentile(load.latencies_ms, 0.99);
  run.p999 = percentile(load.latencies_ms, 0.999);
  run.served = static_cast<double>(load.sent - load.failed);
  if (load.failed > 0)
    std::fprintf(stderr, "ls_bench: %lld requests failed\n", static_cast<long long>(load.failed));

  if (agent) agent->stop();
  return run;
}

// The rate at which the service alone uses half the machine's CPUs. Between requests the
// table cools in the caches, so a request costs more than `work_us`, and how much more
// depends on the rate: measured with the service alone and corrected, until it is within
// 5% of half (at most four measurements); `alone_share` is the share at the rate returned.
double rate_for_half_the_machine(Service& service) {
  const double cpus = std::max(1U, std::thread::hardware_concurrency());
  double rate = std::round(cpus / 2 * 1e6 / service.work_us / 10) * 10;
  for (int step = 0; step < 4 && !g_interrupted; ++step) {
    const Run alone = run_once('a', rate, service, 2000ms, false);
    service.alone_share = alone.ls_cpu_s / std::max(1e-9, alone.wall_s) / cpus;
    if (service.alone_share <= 0 || std::abs(service.alone_share - 0.5) <= 0.025 || step == 3)
      break;
    rate = std::max(10.0, std::round(rate * 0.5 / service.alone_share / 10) * 10);
  }
  return rate;
}

bool print_table(bool steps, const std::string& configs, double rate, const Service& service,
                 double seconds, int repeats) {
  const char* const labels[] = {
      "(a) LS alone",
      "(b) LS + BE, kubelet-style cgroups (BE cpu.shares 2)",
      "(c) LS + BE, Gleaner restricted to a 1 s loop (ceiling always applied, as koordlet)",
      "(d) LS + BE, Gleaner, ceiling on interference (50 ms loop; onInterference, cfsQuota)",
      "(e) LS + BE, no agent, fixed BE quota of 0.6 core (CFS throttling alone)",
      "(f) LS + BE, Gleaner with the 50 ms loop and the ceiling always applied"};
  // What is known of the request's cost: its calibration, and the service alone's share.
  std::string work_note;
  char buf[96];
  if (service.calibrated) {
    std::snprintf(buf, sizeof buf, " (%d us of CPU with the table in cache)", service.work_us);
    work_note = buf;
  }
  if (service.alone_share > 0) {
    std::snprintf(buf, sizeof buf, "; at this rate the service alone used %.0f%% of the CPUs",
                  100 * service.alone_share);
    work_note += buf;
  }
  if (steps) {
    std::printf("\nLoad steps: %.0f req/s for 2 s, then %.0f req/s for 2 s, repeated", rate / 4,
                rate);
  } else {
    std::printf("\nSteady load: %.0f req/s", rate);
  }
  std::printf(
      " open loop over %d connections, %lld table lookups per request%s, %.0f s per run, median "
      "of %d runs (p99 spread: min-max); BE: %s per CPU; the agent's "
      "cpuSuppressThresholdPercent is %d; the load generator runs %s\n\n",
      kConnections, static_cast<long long>(service.iterations), work_note.c_str(), seconds, repeats,
      g_be_cache ? "a cache-hungry loop" : "a CPU-only busy loop (its 16 MiB touched once)",
      g_threshold,
      g_client_fifo ? "SCHED_FIFO (an off-node client)"
                    : "at normal priority beside the kubepods tree (an on-node client)");
  std::printf(
      "| configuration | LS p50 (ms) | LS p99 (ms) | p99 spread | LS p99.9 (ms) | p50 / (a) "
      "| p99 / (a) | p99.9 / (a) | requests served | BE CPU-s | BE share of CPU LS left idle "
      "| node CPU util | CPU stolen by the host | BE throttled periods |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  // Round robin over the configurations, so a spell of noise from other work on the
  // machine spreads over all of them instead of landing on one configuration's runs.
  std::map<char, std::vector<Run>> runs;
  for (int r = 0; r < repeats; ++r) {
    for (char c : configs) {
      if (c < 'a' || c > 'f') continue;
      runs[c].push_back(run_once(
          c, rate, service, std::chrono::milliseconds(static_cast<int>(seconds * 1000)), steps));
      if (g_interrupted) return false;
    }
  }
  Run base;  // (a)'s medians, the denominators of the ratios
  double p99_of[6] = {}, harvest_of[6] = {};
  for (char c : configs) {
    if (runs.count(c) == 0) continue;
    auto med = [&](double Run::*field) {
      std::vector<double> v;
      for (const Run& run : runs[c])
        v.push_back(run.*field);
      return median(v);
    };
    std::vector<double> p99;
    for (const Run& run : runs[c])
      p99.push_back(run.p99);
    const double m50 = med(&Run::p50), m99 = median(p99), m999 = med(&Run::p999);
    if (c == 'a') base = Run{.p50 = m50, .p99 = m99, .p999 = m999};
    p99_of[c - 'a'] = m99;
    harvest_of[c - 'a'] = med(&Run::idle_to_be);
    auto ratio = [](double value, double of_a) {
      char buf[16] = "-";
      if (of_a > 0) std::snprintf(buf, sizeof buf, "%.2fx", value / of_a);
      return std::string(buf);
    };
    std::printf(
        "| %s | %.2f | %.2f | %.2f-%.2f | %.2f | %s | %s | %s | %.0f | %.1f | %.0f%% | %.0f%% "
        "| %.1f%% | %.0f |\n",
        labels[c - 'a'], m50, m99, *std::min_element(p99.begin(), p99.end()),
        *std::max_element(p99.begin(), p99.end()), m999, ratio(m50, base.p50).c_str(),
        ratio(m99, base.p99).c_str(), ratio(m999, base.p999).c_str(), med(&Run::served),
        med(&Run::be_cpu_s), 100 * harvest_of[c - 'a'], 100 * med(&Run::node_util),
        100 * med(&Run::steal), med(&Run::be_throttled));
  }
  // The goals are not judged here: the configurations run in a fixed order with no LS-alone
  // A/A twin, so a ratio can be the machine's drift (frontier_bench judges them).
  constexpr const char* kNotJudged =
      "not judged (%s): a fixed-order run with no LS-alone A/A floor, so the ratio may be noise "
      "(the interleaved frontier below is the judged one)\n";
  const double a = p99_of[0], d = p99_of[3];
  if (a > 0 && d > 0) {
    char figures[64];
    std::snprintf(figures, sizeof figures, "%.2fx, %.0f%%", d / a, 100 * harvest_of[3]);
    std::printf(
        "\n- Goal, (d) within 10%% of (a) on LS p99 with at least 80%% of the idle CPU "
        "harvested: ");
    std::printf(kNotJudged, figures);
  }
  if (steps && p99_of[2] > 0 && d > 0) {
    char figures[64];
    std::snprintf(figures, sizeof figures, "%.2f ms against %.2f ms", d, p99_of[2]);
    std::printf("- Goal, (d) beats (c) on LS p99 during load steps: ");
    std::printf(kNotJudged, figures);
  }
  std::printf("\n");
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  int repeats = 3;
  double rate = 0;  // 0: half the machine's CPUs at `work_us` per request
  Service service;
  std::string configs = "abcdef";
  std::string profiles = "both";
  std::string client = "fifo";
  CLI::App app{"ls_bench: LS protection while harvesting, configurations (a)-(f) side by side"};
  gleaner::bench::positive_option(app, "--seconds", seconds, "duration of each run");
  app.add_option("--repeats", repeats, "runs per configuration (interleaved; medians)")
      ->check(gleaner::bench::kPositive)
      ->capture_default_str();
  gleaner::bench::non_negative_option(
      app, "--rate", rate,
      "requests per second at full load (0: the service alone uses half the CPUs)");
  gleaner::bench::positive_option(app, "--work-us", service.work_us,
                                  "CPU time per request with the table in cache (us)");
  gleaner::bench::non_negative_option(app, "--lookups", service.iterations,
                                      "table lookups per request (0: as many as take --work-us)");
  app.add_option("--configs", configs, "which configurations to run, e.g. ad")
      ->check([](const std::string& value) {
        return !value.empty() && value.find_first_not_of("abcdef") == std::string::npos
                   ? std::string()
                   : std::string("letters a-f only");
      })
      ->capture_default_str();
  app.add_option("--profile", profiles, "load profile")
      ->check(CLI::IsMember({"steady", "steps", "both"}))
      ->capture_default_str();
  app.add_option("--threshold", g_threshold, "cpuSuppressThresholdPercent of (c), (d), (f)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--client", client, "load generator priority: fifo (off-node) or normal")
      ->check(CLI::IsMember({"fifo", "normal"}))
      ->capture_default_str();
  std::string be = "cache";
  app.add_option("--be", be, "BE work: cache (sweeps 16 MiB per CPU) or cpu (a busy loop)")
      ->check(CLI::IsMember({"cache", "cpu"}))
      ->capture_default_str();
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  g_client_fifo = client == "fifo";
  g_be_cache = be == "cache";
  auto skip = gleaner::testing::real_cgroup_skip_reason();
  if (!skip.empty()) {
    std::printf("ls_bench: skipped: %s\n", skip.c_str());
    return 0;
  }
  (void)gleaner::init_logging("warn");
  std::signal(SIGINT, [](int) { g_interrupted = true; });
  std::signal(SIGTERM, [](int) { g_interrupted = true; });
  std::signal(SIGPIPE, SIG_IGN);
  if (service.iterations == 0) {
    service.iterations = calibrate_iterations(service.table, service.work_us);
    service.calibrated = true;
  }
  try {
    if (rate == 0) rate = rate_for_half_the_machine(service);
    for (const std::string profile : {"steady", "steps"}) {
      if (profiles != "both" && profiles != profile) continue;
      if (!print_table(profile == "steps", configs, rate, service, seconds, repeats)) return 130;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ls_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
