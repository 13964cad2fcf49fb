// LS protection while harvesting (Heracles-style), on real cgroups. A small HTTP service
// (plain sockets, a thread per connection, a fixed amount of CPU work per request) runs in
// an LS pod cgroup under an open-loop fixed request rate; latency counts from each
// request's scheduled send time, so a stalled server is not hidden by a stalled client.
// CPU-hungry BE busy loops run in a besteffort pod. Configurations, same load and duration:
//   a: LS alone
//   b: LS + BE, plain kubelet-style cgroups (BE cpu.shares 2, nothing else)
//   c: LS + BE, Gleaner restricted to koordlet's cadence and mode: a 1 s loop, and the
//      suppress ceiling always applied (cpuSuppressMode always)
//   d: LS + BE, Gleaner as shipped: 1 s full pass + 50 ms fast suppress loop, eBPF on, the
//      ceiling applied only on LS interference (cpuSuppressMode onInterference)
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
// Usage: ls_bench [--seconds S] [--repeats N] [--rate RPS] [--work-us US] [--configs abcdef]
//                 [--profile steady|steps|both] [--threshold PERCENT] [--client fifo|normal]
// --threshold sets cpuSuppressThresholdPercent for (c), (d) and (f) (default 65, koordlet's);
// the policy is cfsQuota, as the cpuset policy cannot act on a node with 2 CPUs.
// "steps" alternates the rate every 2 s between a quarter and all of it: the load steps in
// which an agent has to take CPU back from BE quickly.
// Needs root; cleans up its cgroups and processes even when interrupted.
#include <algorithm>
#include <atomic>
#include <chrono>
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
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_cli.h"
#include "bench/bench_stats.h"
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
using gleaner::cgroup::Resource;

volatile std::sig_atomic_t g_interrupted = 0;
constexpr int kConnections = 8;
int g_threshold = 65;       // cpuSuppressThresholdPercent for (c), (d) and (f)
bool g_client_fifo = true;  // the load generator's threads run SCHED_FIFO (an off-node client)
constexpr char kResponse[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

double thread_cpu_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// The service: `work_us` of CPU per request over a 1 MiB table (so it also needs cache).
[[noreturn]] void serve(int listener, int work_us) {
  std::vector<uint32_t> table(1 << 18, 1);
  for (;;) {
    int conn = ::accept(listener, nullptr, nullptr);
    if (conn < 0) continue;
    std::thread([conn, work_us, &table] {
      std::string buf;
      char chunk[4096];
      uint32_t acc = 7;
      for (;;) {
        ssize_t n = ::read(conn, chunk, sizeof chunk);
        if (n <= 0) break;
        buf.append(chunk, static_cast<size_t>(n));
        size_t end;
        while ((end = buf.find("\r\n\r\n")) != std::string::npos) {
          buf.erase(0, end + 4);
          double until = thread_cpu_us() + work_us;
          do {
            for (int i = 0; i < 512; ++i)
              acc = acc * 2654435761u + table[acc & (table.size() - 1)];
          } while (thread_cpu_us() < until);
          table[acc & 63] = acc;
          if (::write(conn, kResponse, sizeof kResponse - 1) < 0) break;
        }
      }
      ::close(conn);
    }).detach();
  }
}

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

struct Load {
  std::vector<double> latencies_ms;
  int64_t served = 0;
  int64_t failed = 0;
};

// Open loop: each connection sends on its own fixed schedule, latency from the schedule.
// `steps`: the rate alternates every 2 s between a quarter of `rate` and `rate` (load steps).
// Throws std::runtime_error when the load generator cannot run as asked.
Load generate(uint16_t port, double rate, std::chrono::milliseconds duration, bool steps) {
  std::vector<Load> per(kConnections);
  std::vector<std::thread> threads;
  threads.reserve(kConnections);
  std::atomic<bool> no_fifo{false};
  auto t0 = Clock::now() + 50ms;
  auto period_at = [rate, steps](double offset_s) {
    bool low = steps && static_cast<int64_t>(offset_s / 2.0) % 2 == 0;
    return kConnections / (low ? rate / 4 : rate);
  };
  for (int c = 0; c < kConnections; ++c) {
    threads.emplace_back([&, c] {
      Load& out = per[c];
      sched_param fifo{};
      fifo.sched_priority = 1;
      if (g_client_fifo && ::sched_setscheduler(0, SCHED_FIFO, &fifo) != 0) {
        no_fifo = true;
        return;
      }
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(port);
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        out.failed = 1;
        ::close(fd);
        return;
      }
      const std::string req = "GET / HTTP/1.1\r\nHost: ls\r\n\r\n";
      const size_t want = sizeof kResponse - 1;
      char buf[256];
      double offset_s = period_at(0) * c / kConnections;
      for (;; offset_s += period_at(offset_s)) {
        auto at = t0 + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(offset_s));
        if (at >= t0 + duration || g_interrupted) break;
        std::this_thread::sleep_until(at);
        if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) break;
        size_t got = 0;
        while (got < want) {
          ssize_t n = ::read(fd, buf, std::min(sizeof buf, want - got));
          if (n <= 0) break;
          got += static_cast<size_t>(n);
        }
        if (got < want) {
          ++out.failed;
          break;
        }
        ++out.served;
        out.latencies_ms.push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - at).count());
      }
      ::close(fd);
    });
  }
  for (auto& t : threads)
    t.join();
  if (no_fifo) {
    throw std::runtime_error(
        "SCHED_FIFO for the load generator refused (needs root or CAP_SYS_NICE; or use "
        "--client normal)");
  }
  Load all;
  for (auto& l : per) {
    all.latencies_ms.insert(all.latencies_ms.end(), l.latencies_ms.begin(), l.latencies_ms.end());
    all.served += l.served;
    all.failed += l.failed;
  }
  return all;
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
};

Run run_once(char config, double rate, int work_us, std::chrono::milliseconds duration,
             bool steps) {
  using namespace gleaner;
  const bool shipped = config == 'd';
  testing::ColocatedNode node(
      {.threshold_config = R"({"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":)" +
                           std::to_string(g_threshold) +
                           R"(,"cpuSuppressPolicy":"cfsQuota","cpuSuppressMode":")" +
                           (shipped ? "onInterference" : "always") + R"("}})"});
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
    serve(listener, work_us);
  }
  ::close(listener);
  scratch.move(server.pid, ls_pod);
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (config != 'a') {
    for (int i = 0; i < cpus; ++i)
      scratch.spawn_busy(be_pod, 8 << 20);
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
  Load load = generate(ntohs(addr.sin_port), rate, duration, steps);
  double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
  const CpuTimes stat1 = proc_stat_cpu();
  run.be_cpu_s = cpu_seconds(fs, be_qos) - be0;
  run.ls_cpu_s = cpu_seconds(fs, ls_pod) - ls0;
  run.be_throttled = throttled_periods(fs, be_qos) - throttled0;
  const auto ticks = static_cast<double>(std::max<uint64_t>(1, stat1.total - stat0.total));
  run.node_util = static_cast<double>(stat1.busy - stat0.busy) / ticks;
  run.steal = static_cast<double>(stat1.steal - stat0.steal) / ticks;
  run.idle_to_be = run.be_cpu_s / std::max(1e-9, cpus * wall - run.ls_cpu_s);
  run.p50 = percentile(load.latencies_ms, 0.5);
  run.p99 = percentile(load.latencies_ms, 0.99);
  run.p999 = percentile(load.latencies_ms, 0.999);
  run.served = static_cast<double>(load.served);
  if (load.failed > 0)
    std::fprintf(stderr, "ls_bench: %lld requests failed\n", static_cast<long long>(load.failed));

  if (agent) agent->stop();
  return run;
}

bool print_table(bool steps, const std::string& configs, double rate, int work_us, double seconds,
                 int repeats) {
  const char* const labels[] = {
      "(a) LS alone",
      "(b) LS + BE, kubelet-style cgroups (BE cpu.shares 2)",
      "(c) LS + BE, Gleaner restricted to koordlet's cadence and mode (1 s loop, ceiling always)",
      "(d) LS + BE, Gleaner as shipped (50 ms loop, ceiling on interference)",
      "(e) LS + BE, no agent, fixed BE quota of 0.6 core (CFS throttling alone)",
      "(f) LS + BE, Gleaner with the 50 ms loop and the ceiling always applied"};
  if (steps) {
    std::printf("\nLoad steps: %.0f req/s for 2 s, then %.0f req/s for 2 s, repeated", rate / 4,
                rate);
  } else {
    std::printf("\nSteady load: %.0f req/s", rate);
  }
  std::printf(
      " open loop over %d connections, %d us CPU per request, %.0f s per run, median of %d "
      "runs (p99 spread: min-max); the agent's cpuSuppressThresholdPercent is %d; the load "
      "generator runs %s\n\n",
      kConnections, work_us, seconds, repeats, g_threshold,
      g_client_fifo ? "SCHED_FIFO (an off-node client)"
                    : "at normal priority beside the kubepods tree (an on-node client)");
  std::printf(
      "| configuration | LS p50 (ms) | LS p99 (ms) | p99 spread | LS p99.9 (ms) | p99 / (a) "
      "| requests served | BE CPU-s | BE share of CPU LS left idle | node CPU util | CPU stolen "
      "by the host | BE throttled periods |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  // Round robin over the configurations, so a spell of noise from other work on the
  // machine spreads over all of them instead of landing on one configuration's runs.
  std::map<char, std::vector<Run>> runs;
  for (int r = 0; r < repeats; ++r) {
    for (char c : configs) {
      if (c < 'a' || c > 'f') continue;
      runs[c].push_back(run_once(
          c, rate, work_us, std::chrono::milliseconds(static_cast<int>(seconds * 1000)), steps));
      if (g_interrupted) return false;
    }
  }
  double base_p99 = 0;
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
    double m99 = median(p99);
    if (c == 'a') base_p99 = m99;
    p99_of[c - 'a'] = m99;
    harvest_of[c - 'a'] = med(&Run::idle_to_be);
    char ratio[16] = "-";
    if (base_p99 > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", m99 / base_p99);
    std::printf(
        "| %s | %.2f | %.2f | %.2f-%.2f | %.2f | %s | %.0f | %.1f | %.0f%% | %.0f%% | %.1f%% | "
        "%.0f |\n",
        labels[c - 'a'], med(&Run::p50), m99, *std::min_element(p99.begin(), p99.end()),
        *std::max_element(p99.begin(), p99.end()), med(&Run::p999), ratio, med(&Run::served),
        med(&Run::be_cpu_s), 100 * harvest_of[c - 'a'], 100 * med(&Run::node_util),
        100 * med(&Run::steal), med(&Run::be_throttled));
  }
  // The issue's goals, checked on this table's medians.
  const double a = p99_of[0], d = p99_of[3];
  if (a > 0 && d > 0) {
    bool met = d <= 1.10 * a && harvest_of[3] >= 0.80;
    std::printf(
        "\n- Goal, (d) within 10%% of (a) on LS p99 with at least 80%% of the idle CPU "
        "harvested: %s (%.2fx, %.0f%%)\n",
        met ? "met" : "missed", d / a, 100 * harvest_of[3]);
  }
  if (steps && p99_of[2] > 0 && d > 0) {
    std::printf("- Goal, (d) beats (c) on LS p99 during load steps: %s (%.2f ms against %.2f ms)\n",
                d < p99_of[2] ? "met" : "missed", d, p99_of[2]);
  }
  std::printf("\n");
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  int repeats = 3;
  double rate = 800;
  int work_us = 600;
  std::string configs = "abcdef";
  std::string profiles = "both";
  std::string client = "fifo";
  CLI::App app{"ls_bench: LS protection while harvesting, configurations (a)-(f) side by side"};
  gleaner::bench::positive_option(app, "--seconds", seconds, "duration of each run");
  app.add_option("--repeats", repeats, "runs per configuration (interleaved; medians)")
      ->check(gleaner::bench::kPositive)
      ->capture_default_str();
  gleaner::bench::positive_option(app, "--rate", rate, "requests per second at full load");
  gleaner::bench::positive_option(app, "--work-us", work_us, "CPU work per request (us)");
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
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  g_client_fifo = client == "fifo";
  auto skip = gleaner::testing::real_cgroup_skip_reason();
  if (!skip.empty()) {
    std::printf("ls_bench: skipped: %s\n", skip.c_str());
    return 0;
  }
  (void)gleaner::init_logging("warn");
  std::signal(SIGINT, [](int) { g_interrupted = 1; });
  std::signal(SIGTERM, [](int) { g_interrupted = 1; });
  std::signal(SIGPIPE, SIG_IGN);
  try {
    for (const std::string profile : {"steady", "steps"}) {
      if (profiles != "both" && profiles != profile) continue;
      if (!print_table(profile == "steps", configs, rate, work_us, seconds, repeats)) return 130;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ls_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
