#include "bench/frontier/frontier_points.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <unistd.h>

#include "bench/bench_stats.h"
#include "bench/frontier/agent_process.h"
#include "bench/frontier/load.h"
#include "cgroup/cgroup_fs.h"
#include "cgroup/executor.h"
#include "cgroup/parsers.h"
#include "common/file_io.h"
#include "test/support/net.h"
#include "test/support/process_stats.h"

namespace gleaner::bench::frontier {

// One thread's /proc/<tid>/schedstat (ns on CPU, ns runnable but waiting, timeslices run) and
// the times it gave the CPU up by blocking (voluntary_ctxt_switches in /proc/<tid>/status).
// (Outside the anonymous namespace: PointRunner's window holds it.)
struct ThreadSchedstat {
  uint64_t on_cpu_ns = 0, wait_ns = 0, runs = 0;
  uint64_t blocked = 0;
};

namespace {

using namespace std::chrono_literals;

volatile std::sig_atomic_t* g_interrupted = nullptr;

bool interrupted() {
  return g_interrupted != nullptr && *g_interrupted != 0;
}

double initial_rate(ServiceKind kind) {
  return kind == ServiceKind::kNginx ? 500 : 20000;
}

// /proc/stat's busy jiffies over all CPUs, in seconds.
double busy_seconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  uint64_t v[8] = {};
  in >> cpu;
  for (auto& x : v)
    in >> x;
  const uint64_t busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];  // all but idle and iowait
  return static_cast<double>(busy) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// The resource-threshold-config a configuration's agent runs with.
std::string threshold_config(const Config& c) {
  switch (c.family) {
    case Family::kMeasureOnly:  // as shipped; --no-enforce keeps it from writing
    case Family::kGleanerSlo:
    case Family::kSloNoProbe:
    case Family::kSloNoFastPath:
    case Family::kSloNoWakeups:
    case Family::kSloBaseline:
      return R"({"clusterStrategy":{"enable":true,"cpuSuppressPolicy":"cfsQuota",)"
             R"("cpuSuppressMode":"slo","cpuSloWaitTargetMicros":)" +
             std::to_string(c.setting > 0 ? c.setting : 4000) + "}}";
    default:
      break;
  }
  const char* mode = c.family == Family::kGleanerOnInterference ? "onInterference" : "always";
  return R"({"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":)" +
         std::to_string(c.setting) + R"(,"cpuSuppressPolicy":"cfsQuota","cpuSuppressMode":")" +
         mode + R"("}})";
}

AgentFlags agent_flags(Family family) {
  AgentFlags f;
  switch (family) {
    case Family::kMeasureOnly:
      f.enforce = false;
      break;
    case Family::kKoordletStyle:
      f.fast_interval_ms = 0;
      f.ebpf = false;
      f.ebpf_wakeups = false;
      break;
    case Family::kSloNoProbe:
      f.ebpf = false;
      f.ebpf_wakeups = false;
      break;
    case Family::kSloNoFastPath:
      f.fast_interval_ms = 0;
      break;
    case Family::kSloNoWakeups:
      f.ebpf_wakeups = false;
      break;
    default:
      break;
  }
  return f;
}

// The schedstat of each thread of `relative`, by tid.
std::map<long, ThreadSchedstat> thread_schedstats(const cgroup::CgroupFs& fs,
                                                  const std::string& relative) {
  std::map<long, ThreadSchedstat> out;
  auto path = fs.path_of(cgroup::Resource::kThreads, relative);
  if (!path.ok()) return out;
  std::ifstream tids(*path);
  for (long tid = 0; tids >> tid;) {
    std::ifstream stat("/proc/" + std::to_string(tid) + "/schedstat");
    ThreadSchedstat s;
    if (!(stat >> s.on_cpu_ns >> s.wait_ns >> s.runs)) continue;
    std::ifstream status("/proc/" + std::to_string(tid) + "/status");
    for (std::string line; std::getline(status, line);) {
      constexpr std::string_view kKey = "voluntary_ctxt_switches:";
      if (line.rfind(kKey, 0) == 0)
        s.blocked = std::strtoull(line.c_str() + kKey.size(), nullptr, 10);
    }
    out[tid] = s;
  }
  return out;
}

// What the threads of `after` did since `before`, summed: a thread born in between counts
// from zero, one that exited in between is left out (thread ids are matched, so its exit does
// not subtract what it had used before the window).
ThreadSchedstat since(const std::map<long, ThreadSchedstat>& before,
                      const std::map<long, ThreadSchedstat>& after) {
  ThreadSchedstat sum;
  for (const auto& [tid, now] : after) {
    const auto it = before.find(tid);
    const ThreadSchedstat then = it == before.end() ? ThreadSchedstat{} : it->second;
    sum.on_cpu_ns += now.on_cpu_ns - std::min(now.on_cpu_ns, then.on_cpu_ns);
    sum.wait_ns += now.wait_ns - std::min(now.wait_ns, then.wait_ns);
    sum.runs += now.runs - std::min(now.runs, then.runs);
    sum.blocked += now.blocked - std::min(now.blocked, then.blocked);
  }
  return sum;
}

// BE's CFS throttling counters: periods throttled, and seconds throttled.
std::pair<double, double> throttling(const cgroup::CgroupFs& fs, const std::string& relative) {
  auto path = fs.path_of(cgroup::Resource::kCpuStat, relative);
  if (!path.ok()) return {0, 0};
  auto text = read_file(*path);
  if (!text.ok()) return {0, 0};
  auto stat = cgroup::parse_flat_keyed(*text);
  if (!stat.ok()) return {0, 0};
  auto value = [&](const char* key) {
    auto it = stat->find(key);
    return it == stat->end() ? 0.0 : static_cast<double>(it->second);
  };
  const double seconds =
      stat->count("throttled_usec") ? value("throttled_usec") / 1e6 : value("throttled_time") / 1e9;
  return {value("nr_throttled"), seconds};
}

// The states of `relative`'s processes: true when every one shows `state` in /proc.
bool all_in_state(const cgroup::CgroupFs& fs, const std::string& relative, char state) {
  auto path = fs.path_of(cgroup::Resource::kThreads, relative);
  if (!path.ok()) return true;
  std::ifstream tids(*path);
  for (long tid = 0; tids >> tid;) {
    std::ifstream stat("/proc/" + std::to_string(tid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size() && text[close + 2] != state) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string setting_label(Family family, int setting) {
  if (setting <= 0) return "-";
  if (takes_wait_target(family)) return "wait " + std::to_string(setting) + "us";
  if (family == Family::kFixedQuota) return "quota " + std::to_string(setting) + "m";
  return std::to_string(setting) + "%";
}

const char* to_string(Family family) {
  switch (family) {
    case Family::kAlone:
      return "LS alone";
    case Family::kAloneTwin:
      return "LS alone (A/A twin)";
    case Family::kKubelet:
      return "kubelet only";
    case Family::kFixedQuota:
      return "fixed BE quota, no agent";
    case Family::kMeasureOnly:
      return "agent measuring only";
    case Family::kKoordletStyle:
      return "koordlet-style (1 s loop, ceiling always)";
    case Family::kGleanerAlways:
      return "Gleaner, ceiling always";
    case Family::kGleanerOnInterference:
      return "Gleaner onInterference";
    case Family::kGleanerSlo:
      return "Gleaner slo (shipped)";
    case Family::kSloNoProbe:
      return "slo, probe off";
    case Family::kSloNoFastPath:
      return "slo, fast path off";
    case Family::kSloNoWakeups:
      return "slo, wake-ups off";
    case Family::kSloBaseline:
      return "slo, baseline build";
  }
  return "unknown";
}

const char* short_name(Family family) {
  switch (family) {
    case Family::kAlone:
      return "alone";
    case Family::kAloneTwin:
      return "alone-twin";
    case Family::kKubelet:
      return "kubelet";
    case Family::kFixedQuota:
      return "fixed";
    case Family::kMeasureOnly:
      return "measure";
    case Family::kKoordletStyle:
      return "koordlet";
    case Family::kGleanerAlways:
      return "always";
    case Family::kGleanerOnInterference:
      return "oninterference";
    case Family::kGleanerSlo:
      return "slo";
    case Family::kSloNoProbe:
      return "slo-noprobe";
    case Family::kSloNoFastPath:
      return "slo-nofast";
    case Family::kSloNoWakeups:
      return "slo-nowakeups";
    case Family::kSloBaseline:
      return "slo-baseline";
  }
  return "unknown";
}

std::optional<Family> parse_family(const std::string& name) {
  for (Family f : kFamilies)
    if (name == short_name(f)) return f;
  return std::nullopt;
}

bool takes_threshold(Family family) {
  return family == Family::kKoordletStyle || family == Family::kGleanerAlways ||
         family == Family::kGleanerOnInterference;
}

bool takes_wait_target(Family family) {
  return family == Family::kGleanerSlo || family == Family::kSloNoProbe ||
         family == Family::kSloNoFastPath || family == Family::kSloNoWakeups ||
         family == Family::kSloBaseline;
}

bool runs_agent(Family family) {
  return family != Family::kAlone && family != Family::kAloneTwin && family != Family::kKubelet &&
         family != Family::kFixedQuota;
}

void set_interrupt_flag(volatile std::sig_atomic_t* flag) {
  g_interrupted = flag;
}

struct PointRunner::Evidence {
  double throttled_periods = 0, throttled_s = 0;
  double agent_cpu_s = 0;
  double writes = 0;
  std::map<long, ThreadSchedstat> ls_threads;  // the snapshot's; empty in a window's delta
};

struct PointRunner::Window {
  LoadResult load;
  double ls_cpu_s = 0, be_cpu_s = 0, wall_s = 0;
  double other_cpu_s = 0;      // everything else busy on the node: generator, agent, system
  Evidence delta;              // over the window
  ThreadSchedstat ls_threads;  // the LS service's threads over the window, summed
};

PointRunner::PointRunner(testing::ColocatedNode& node, const LsService& service, bool fifo,
                         std::chrono::seconds measured, std::chrono::milliseconds settle,
                         std::string work_dir)
    : node_(node),
      service_(service),
      fifo_(fifo),
      measured_(measured),
      settle_(settle),
      work_dir_(std::move(work_dir)),
      rate_(initial_rate(service.kind())),
      cpus_(static_cast<int>(std::thread::hardware_concurrency())) {
  // kubelet gives BestEffort the minimum shares.
  cgroup::CgroupFs fs(node_.root(), node_.scratch().version());
  if (node_.scratch().version() != cgroup::CgroupVersion::kV2) {
    for (const auto& dir : {node_.be_qos(), node_.be_pod()}) {
      if (auto p = fs.path_of(cgroup::Resource::kCpuShares, dir); p.ok()) (void)write_file(*p, "2");
    }
  }
}

PointRunner::Evidence PointRunner::evidence(pid_t agent, uint16_t agent_port) const {
  cgroup::CgroupFs fs(node_.root(), node_.scratch().version());
  Evidence e;
  std::tie(e.throttled_periods, e.throttled_s) = throttling(fs, node_.be_qos());
  e.ls_threads = thread_schedstats(fs, node_.ls_pod());
  if (agent > 0) {
    e.agent_cpu_s = testing::threads_on_cpu_seconds(agent);
    e.writes = metric_sum(testing::http_get_loopback(agent_port, "/metrics"),
                          "gleaner_cgroup_writes_total");
  }
  return e;
}

PointRunner::Window PointRunner::run_load(std::chrono::milliseconds duration, pid_t agent,
                                          uint16_t agent_port) const {
  cgroup::CgroupFs fs(node_.root(), node_.scratch().version());
  auto usage = [&](const std::string& dir) {
    auto ns = fs.read_cpu_usage_ns(dir);
    return ns.ok() ? static_cast<double>(*ns) / 1e9 : 0.0;
  };
  Window w;
  const Evidence e0 = evidence(agent, agent_port);
  const double ls0 = usage(node_.ls_pod());
  const double be0 = usage(node_.be_qos());
  const double busy0 = busy_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  w.load = generate(service_.protocol(), service_.port(),
                    {.rate = rate_, .duration = duration, .connections = 8, .fifo = fifo_});
  w.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  w.ls_cpu_s = usage(node_.ls_pod()) - ls0;
  w.be_cpu_s = usage(node_.be_qos()) - be0;
  w.other_cpu_s = std::max(0.0, busy_seconds() - busy0 - w.ls_cpu_s - w.be_cpu_s);
  const Evidence e1 = evidence(agent, agent_port);
  w.delta = {e1.throttled_periods - e0.throttled_periods,
             e1.throttled_s - e0.throttled_s,
             e1.agent_cpu_s - e0.agent_cpu_s,
             e1.writes - e0.writes,
             {}};
  w.ls_threads = since(e0.ls_threads, e1.ls_threads);
  return w;
}

Calibration PointRunner::calibrate() {
  // Towards half the node: scale the rate by how far the share is from it; once a rate is
  // too much for the generator (or the service), halve the step between the last rate that
  // kept up and the one that did not.
  set_be_running(false);
  Calibration best{0, 0};
  double too_much = 0;
  for (int i = 0; i < 8 && !interrupted(); ++i) {
    Window w = run_load(std::chrono::milliseconds(2000), -1, 0);
    const double share = w.ls_cpu_s / (cpus_ * w.wall_s);
    const bool kept_up = w.load.late * 20 < w.load.scheduled && w.load.failed == 0;
    if (kept_up) {
      best = {rate_, share};
      if (share > 0.45 && share < 0.55) break;
      rate_ *= std::clamp(0.5 / std::max(share, 0.01), 0.5, 3.0);
      if (too_much > 0 && rate_ >= too_much) rate_ = (best.rate + too_much) / 2;
    } else {
      too_much = rate_;
      if (best.rate == 0) {
        rate_ /= 2;
      } else {
        if (too_much - best.rate < 0.1 * best.rate) break;
        rate_ = (best.rate + too_much) / 2;
      }
    }
  }
  if (best.rate == 0) best.rate = rate_;
  rate_ = best.rate;
  return best;
}

void PointRunner::set_be_running(bool running) {
  if (be_group_ <= 0 || running == be_running_) return;
  cgroup::CgroupFs fs(node_.root(), node_.scratch().version());
  // Every BE thread, not only the group leader's: stress-ng's workers are its children.
  if (auto path = fs.path_of(cgroup::Resource::kProcs, node_.be_pod()); path.ok()) {
    std::ifstream pids(*path);
    for (long pid = 0; pids >> pid;)
      ::kill(static_cast<pid_t>(pid), running ? SIGCONT : SIGSTOP);
  }
  ::kill(-be_group_, running ? SIGCONT : SIGSTOP);
  be_running_ = running;
  if (running) return;
  // A stop is delivered asynchronously: LS alone is measured only once every BE task is
  // stopped (bounded; what is still running after 2 s would show as BE CPU in the window).
  for (auto deadline = std::chrono::steady_clock::now() + 2s;
       std::chrono::steady_clock::now() < deadline && !all_in_state(fs, node_.be_pod(), 'T');) {
    std::this_thread::sleep_for(5ms);
  }
}

Point PointRunner::measure_window(BeMix mix, const Config& config) {
  const Family family = config.family;
  set_be_running(family != Family::kAlone && family != Family::kAloneTwin);
  std::unique_ptr<AgentProcess> agent;
  std::unique_ptr<cgroup::WriteExecutor> fixed;
  cgroup::CgroupFs fs(node_.root(), node_.scratch().version());
  if (runs_agent(family)) {
    (void)write_file(node_.config_dir() + "/resource-threshold-config", threshold_config(config));
    agent = std::make_unique<AgentProcess>(
        node_, agent_flags(family), work_dir_ + "/agent-" + short_name(family) + ".log",
        family == Family::kSloBaseline ? baseline_agent_ : std::string(GLEANER_AGENT_BINARY));
  } else if (family == Family::kFixedQuota) {
    // The CFS bandwidth mechanism alone: BE's quota written once, as an agent settled at that
    // allowance would hold it, with nothing else running.
    fixed = std::make_unique<cgroup::WriteExecutor>(fs);
    const int64_t period_us = 100000;
    auto report = fixed->apply({{cgroup::Resource::kCpuQuota, node_.be_qos(),
                                 std::to_string(config.setting * period_us / 1000), "bench"}});
    if (!report.rejected.empty()) {
      throw std::runtime_error("fixed BE quota refused: " + report.rejected.front().describe());
    }
  }
  testing::measurement_window(settle_);
  const Window w = run_load(measured_, agent ? agent->pid() : -1, agent ? agent->port() : 0);
  if (agent) agent->stop();
  if (fixed) fixed->restore_all();
  return to_point(w, mix, config);
}

Point PointRunner::to_point(const Window& w, BeMix mix, const Config& config) const {
  Point p;
  p.mix = mix;
  p.family = config.family;
  p.setting = config.setting;
  p.rounds = 1;
  p.p50_ms = percentile(w.load.latencies_ms, 0.5);
  p.p99_ms = percentile(w.load.latencies_ms, 0.99);
  p.p99_min_ms = p.p99_max_ms = p.p99_ms;
  p.be_cpu_s = w.be_cpu_s;
  p.ls_cpu_s = w.ls_cpu_s;
  p.wall_s = w.wall_s;
  p.other_cpu_s = w.other_cpu_s;
  // What nobody but BE would have used: the node minus LS and everything else busy.
  const double idle = cpus_ * w.wall_s - w.ls_cpu_s - w.other_cpu_s;
  p.be_share_of_idle = idle > 0 ? std::min(1.0, w.be_cpu_s / idle) : 0;
  p.node_utilisation =
      w.wall_s > 0 ? (w.be_cpu_s + w.ls_cpu_s + w.other_cpu_s) / (cpus_ * w.wall_s) : 0;
  if (w.wall_s > 0) {
    p.be_throttled_per_s = w.delta.throttled_periods / w.wall_s;
    p.be_throttled_ms_per_s = 1000 * w.delta.throttled_s / w.wall_s;
    p.agent_cpu_percent = 100 * w.delta.agent_cpu_s / w.wall_s;
    p.writes_per_s = w.delta.writes / w.wall_s;
  }
  p.sent = w.load.sent;
  p.late = w.load.late;
  p.failed = w.load.failed;
  p.ls_wait_us_per_request =
      p.sent > 0 ? static_cast<double>(w.ls_threads.wait_ns) / 1e3 / static_cast<double>(p.sent)
                 : 0;
  // Per request completed (a request still in flight at the window's end has used CPU that
  // counts against the others: at most 8 of thousands).
  const auto completed = static_cast<double>(w.load.latencies_ms.size());
  const double runs = static_cast<double>(w.ls_threads.runs);
  auto signal = [](double value) { return CostSignal{value, value, value, {}}; };
  p.cpu_us_per_request = signal(completed > 0 ? 1e6 * w.ls_cpu_s / completed : 0);
  p.cpu_us_per_run =
      signal(runs > 0 ? static_cast<double>(w.ls_threads.on_cpu_ns) / 1e3 / runs : 0);
  p.runs_per_request = completed > 0 ? runs / completed : 0;
  const double blocked = static_cast<double>(w.ls_threads.blocked);
  p.cpu_us_per_block =
      signal(blocked > 0 ? static_cast<double>(w.ls_threads.on_cpu_ns) / 1e3 / blocked : 0);
  return p;
}

}  // namespace gleaner::bench::frontier
