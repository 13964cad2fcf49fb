#include "bench/frontier/frontier_points.h"

#include <algorithm>
#include <fstream>
#include <thread>

#include <unistd.h>

#include "bench/bench_stats.h"
#include "bench/frontier/load.h"
#include "cgroup/cgroup_fs.h"
#include "common/file_io.h"
#include "test/support/in_process_agent.h"

namespace gleaner::bench::frontier {
namespace {

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

std::string threshold_config(Family family, int threshold) {
  if (family == Family::kGleanerSlo) {
    return R"({"clusterStrategy":{"enable":true,"cpuSuppressPolicy":"cfsQuota",)"
           R"("cpuSuppressMode":"slo","cpuSloWaitTargetMicros":)" +
           std::to_string(threshold) + "}}";
  }
  const char* mode = family == Family::kGleanerShipped ? "onInterference" : "always";
  return R"({"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":)" +
         std::to_string(threshold) + R"(,"cpuSuppressPolicy":"cfsQuota","cpuSuppressMode":")" +
         mode + R"("}})";
}

}  // namespace

std::string setting_label(const Point& p) {
  if (p.threshold <= 0) return "-";
  if (p.family == Family::kGleanerSlo) return "wait " + std::to_string(p.threshold) + "us";
  return std::to_string(p.threshold) + "%";
}

const char* to_string(Family family) {
  switch (family) {
    case Family::kAlone:
      return "LS alone";
    case Family::kKubelet:
      return "kubelet only";
    case Family::kKoordletStyle:
      return "koordlet-style (1 s loop, ceiling always)";
    case Family::kGleanerAlways:
      return "Gleaner, ceiling always";
    case Family::kGleanerShipped:
      return "Gleaner onInterference";
    case Family::kGleanerSlo:
      return "Gleaner slo (shipped)";
  }
  return "unknown";
}

void set_interrupt_flag(volatile std::sig_atomic_t* flag) {
  g_interrupted = flag;
}

struct PointRunner::Window {
  LoadResult load;
  double ls_cpu_s = 0, be_cpu_s = 0, wall_s = 0;
  double other_cpu_s = 0;  // everything else busy on the node: generator, agent, system
};

PointRunner::PointRunner(testing::ColocatedNode& node, const LsService& service, bool fifo,
                         std::chrono::seconds measured, int repeats)
    : node_(node),
      service_(service),
      fifo_(fifo),
      measured_(measured),
      repeats_(std::max(1, repeats)),
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

PointRunner::Window PointRunner::run_load(std::chrono::milliseconds duration) const {
  cgroup::CgroupFs fs(node_.root(), node_.scratch().version());
  auto usage = [&](const std::string& dir) {
    auto ns = fs.read_cpu_usage_ns(dir);
    return ns.ok() ? static_cast<double>(*ns) / 1e9 : 0.0;
  };
  Window w;
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
  return w;
}

Calibration PointRunner::calibrate() {
  // Towards half the node: scale the rate by how far the share is from it; once a rate is
  // too much for the generator (or the service), halve the step between the last rate that
  // kept up and the one that did not.
  Calibration best{0, 0};
  double too_much = 0;
  for (int i = 0; i < 8 && !interrupted(); ++i) {
    Window w = run_load(std::chrono::milliseconds(2000));
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

Point PointRunner::measure(BeMix mix, Family family, int threshold) {
  std::unique_ptr<testing::InProcessAgent> agent;
  if (family != Family::kAlone && family != Family::kKubelet) {
    (void)write_file(node_.config_dir() + "/resource-threshold-config",
                     threshold_config(family, threshold));
    agent::DaemonOptions opt = testing::agent_options(node_);
    opt.interval = std::chrono::seconds(1);
    const bool koordlet = family == Family::kKoordletStyle;
    opt.fast_interval = koordlet ? std::chrono::milliseconds(0) : std::chrono::milliseconds(50);
    opt.ebpf = !koordlet;
    opt.ebpf_wakeups = !koordlet;
    agent = std::make_unique<testing::InProcessAgent>(opt, node_.agent_tasks_file());
    testing::measurement_window(std::chrono::milliseconds(2000));  // the agent settles
  }
  // Consecutive windows under the same agent; the point is their median window (by p99),
  // so one window that caught a burst of unrelated work on the machine does not make it.
  std::vector<Point> windows;
  for (int r = 0; r < repeats_ && !interrupted(); ++r)
    windows.push_back(to_point(run_load(measured_), mix, family, threshold));
  agent.reset();  // stops it: every value it changed is put back before the next point
  if (windows.empty()) return to_point(Window{}, mix, family, threshold);
  std::sort(windows.begin(), windows.end(),
            [](const Point& a, const Point& b) { return a.p99_ms < b.p99_ms; });
  Point median = windows[windows.size() / 2];
  median.p99_min_ms = windows.front().p99_ms;
  median.p99_max_ms = windows.back().p99_ms;
  return median;
}

Point PointRunner::to_point(const Window& w, BeMix mix, Family family, int threshold) const {
  Point p;
  p.mix = mix;
  p.family = family;
  p.threshold = threshold;
  p.p50_ms = percentile(w.load.latencies_ms, 0.5);
  p.p99_ms = percentile(w.load.latencies_ms, 0.99);
  p.be_cpu_s = w.be_cpu_s;
  p.ls_cpu_s = w.ls_cpu_s;
  p.wall_s = w.wall_s;
  p.other_cpu_s = w.other_cpu_s;
  // What nobody but BE would have used: the node minus LS and everything else busy.
  const double idle = cpus_ * w.wall_s - w.ls_cpu_s - w.other_cpu_s;
  p.be_share_of_idle = idle > 0 ? std::min(1.0, w.be_cpu_s / idle) : 0;
  p.node_utilisation =
      w.wall_s > 0 ? (w.be_cpu_s + w.ls_cpu_s + w.other_cpu_s) / (cpus_ * w.wall_s) : 0;
  p.sent = w.load.sent;
  p.late = w.load.late;
  p.failed = w.load.failed;
  return p;
}

}  // namespace gleaner::bench::frontier
