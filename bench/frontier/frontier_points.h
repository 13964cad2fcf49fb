#pragma once
// The frontier benchmark's points: one configuration measured for one window on a node running
// a real service (PointRunner), the rate calibration, and the report (table, goal check, chart).
// The rounds that order the windows and the statistics over them are bench/frontier/rounds.h.

#include <chrono>
#include <csignal>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "bench/frontier/rounds.h"
#include "bench/frontier/services.h"
#include "common/result.h"
#include "test/support/colocated_node.h"

namespace gleaner::bench::frontier {

// What runs beside the service in a window. Every agent is `gleaner-agent run` as its own
// process in the agent's pod cgroup, as the DaemonSet runs it.
enum class Family {
  kAlone,                  // LS alone (BE stopped)
  kAloneTwin,              // LS alone again: the A/A pair
  kKubelet,                // BE at cpu.shares 2, no agent
  kFixedQuota,             // BE's CFS quota written once (setting: millicores), no agent
  kMeasureOnly,            // the agent as shipped with --no-enforce: probe and loops, no writes
  kKoordletStyle,          // 1 s loop, eBPF off, ceiling always
  kGleanerAlways,          // 1 s pass + 50 ms fast loop + eBPF wake-ups, ceiling always
  kGleanerOnInterference,  // the same, ceiling on interference
  kGleanerSlo,             // the same loops, BE steered by LS's run-queue wait (the shipped mode)
  kSloNoProbe,             // slo with --no-ebpf
  kSloNoFastPath,          // slo with --fast-interval 0
  kSloNoWakeups,           // slo with --no-ebpf-wakeups
  kSloBaseline,            // slo as shipped, run by another build's agent (--baseline-agent)
};
inline constexpr Family kFamilies[] = {Family::kAlone,         Family::kAloneTwin,
                                       Family::kKubelet,       Family::kFixedQuota,
                                       Family::kMeasureOnly,   Family::kKoordletStyle,
                                       Family::kGleanerAlways, Family::kGleanerOnInterference,
                                       Family::kGleanerSlo,    Family::kSloNoProbe,
                                       Family::kSloNoFastPath, Family::kSloNoWakeups,
                                       Family::kSloBaseline};
const char* to_string(Family family);
// The name --configs takes ("kubelet", "slo-noprobe", ...).
const char* short_name(Family family);
std::optional<Family> parse_family(const std::string& name);
// Families whose setting is a cpuSuppressThresholdPercent, a run-queue wait target (us), or a
// fixed quota (millicores).
bool takes_threshold(Family family);
bool takes_wait_target(Family family);
bool runs_agent(Family family);

struct Config {
  Family family = Family::kAlone;
  int setting = 0;  // threshold %, wait target us, quota millicores; 0 for none
};

// A per-window figure of the LS service's own cost, and over a point's windows its median,
// spread and ratio to LS alone (paired by round, as the p99's).
struct CostSignal {
  double value = 0;         // the window's; the median window's after summarise
  double min = 0, max = 0;  // over the point's windows
  RatioEstimate vs_alone;
};

struct Point {
  BeMix mix = BeMix::kCpu;
  Family family = Family::kAlone;
  int setting = 0;                        // as Config::setting
  int rounds = 0;                         // windows behind the point
  double p50_ms = 0, p99_ms = 0;          // the median window's
  double p99_min_ms = 0, p99_max_ms = 0;  // the spread over the point's windows
  // LS p99 against the LS-alone window of the same round (paired), and against kubelet only's.
  RatioEstimate vs_alone, vs_kubelet;
  Verdict verdict_vs_kubelet = Verdict::kNoVerdict;
  double node_utilisation = 0;  // all CPU used / (CPUs x wall), median window
  double be_cpu_s = 0, ls_cpu_s = 0, wall_s = 0;
  double other_cpu_s = 0;  // the load generator, the agent and the rest of the node
  // BE CPU / (CPUs x wall - LS CPU - other CPU): BE's share of what nobody else used.
  double be_share_of_idle = 0;
  // Kernel evidence, medians over the windows: BE's CFS throttling (periods throttled and
  // time throttled per second, cpu.stat of the besteffort QoS cgroup), the run-queue delay of
  // the LS service's threads per request (schedstat), the agent process's CPU and its knob
  // writes per second.
  double be_throttled_per_s = 0, be_throttled_ms_per_s = 0;
  double ls_wait_us_per_request = 0;
  // Candidate signals for interference the run queue cannot see (the LS task on the CPU but
  // slowed by BE's cache and memory traffic): the LS pod's CPU time (its cgroup's cpuacct
  // usage) per request the generator completed, and its threads' CPU time per run (schedstat
  // fields 1 and 3: ns on CPU over timeslices run), which an agent can read knowing nothing of
  // requests. runs_per_request says how far one run is from one request. cpu_us_per_block counts
  // only the runs a thread ended by blocking (voluntary context switches), so a preemption
  // does not split a request into two.
  CostSignal cpu_us_per_request, cpu_us_per_run, cpu_us_per_block;
  double runs_per_request = 0;
  double agent_cpu_percent = 0;
  double writes_per_s = 0;
  int64_t sent = 0, late = 0, failed = 0;
};

// A point's setting as the tables print it: the threshold (65%), the wait target
// (wait 2000us), the quota (quota 900m), or "-".
std::string setting_label(Family family, int setting);
inline std::string setting_label(const Point& p) {
  return setting_label(p.family, p.setting);
}

struct Calibration {
  double rate = 0;   // requests per second
  double share = 0;  // of the node's CPUs the service alone used at that rate
};

// Where the benchmark's SIGINT handler records an interruption (checked between steps).
void set_interrupt_flag(volatile std::sig_atomic_t* flag);

class PointRunner {
 public:
  // `settle`: how long a configuration runs before its window is measured (the same for all,
  // so a switch of configuration costs every one alike).
  PointRunner(testing::ColocatedNode& node, const LsService& service, bool fifo,
              std::chrono::seconds measured, std::chrono::milliseconds settle,
              std::string work_dir);
  // The rate at which the service alone uses about half the node's CPUs, or the highest the
  // generator keeps up with (its share then says so).
  Calibration calibrate();
  void set_rate(double rate) { rate_ = rate; }
  // The BE processes to pause during LS-alone windows (SIGSTOP, SIGCONT).
  void set_be_group(pid_t pgid) { be_group_ = pgid; }
  // The agent binary of the kSloBaseline configuration (another build, for a before/after).
  void set_baseline_agent(std::string path) { baseline_agent_ = std::move(path); }
  // One window of `config`: BE paused or running, its agent (if any) started as a process, or
  // its fixed quota written; settled; the service measured under load; then everything the
  // configuration changed put back and checked (throws std::runtime_error when an agent did
  // not stop in time or left BE's quota changed).
  Point measure_window(BeMix mix, const Config& config);

 private:
  struct Window;
  struct Evidence;
  Window run_load(std::chrono::milliseconds duration, pid_t agent, uint16_t agent_port) const;
  Evidence evidence(pid_t agent, uint16_t agent_port) const;
  Point to_point(const Window& w, BeMix mix, const Config& config) const;
  void set_be_running(bool running);

  testing::ColocatedNode& node_;
  const LsService& service_;
  bool fifo_;
  std::chrono::seconds measured_;
  std::chrono::milliseconds settle_;
  std::string work_dir_;
  double rate_ = 0;
  int cpus_;
  pid_t be_group_ = -1;
  std::string baseline_agent_;
  bool be_running_ = true;
};

// The points of one (service, mix) after its rounds: each configuration's windows (in round
// order) summarised, ratios paired by round against LS alone and kubelet only.
struct MixResult {
  BeMix mix = BeMix::kCpu;
  std::vector<Point> points;  // kFamilies order, then by setting
  RatioEstimate aa;           // LS alone (A/A twin) against LS alone
  double floor = 1;           // aa_floor(aa)
  Baseline baseline;          // the LS-alone windows' spread
  uint64_t seed = 0;
};
MixResult summarise(BeMix mix, const std::vector<Config>& configs,
                    const std::vector<std::vector<Point>>& windows, uint64_t seed,
                    double max_alone_spread);

// Markdown: the points of one service, with the run's A/A floor and baseline, and whether the
// shipped mode's LS p99 is at or below kubelet only's, per BE mix.
void print_table(ServiceKind kind, const std::vector<MixResult>& mixes);
// One line per BE mix: each configuration's p99, CPU per request and CPU per run against LS
// alone, each beside its own A/A floor (the twin's interval), and whether it moved beyond it.
void print_signals(ServiceKind kind, const std::vector<MixResult>& mixes);
// One line per BE mix: the harvest each configuration reaches at LS p99 <= 1.1x of LS alone
// (its best such point) and the node's CPU utilisation there.
void print_summary(ServiceKind kind, const std::vector<MixResult>& mixes);
// <dir>/frontier-<service>.dat and, with gnuplot installed, <dir>/frontier-<service>.png.
enum class Chart { kDrawn, kNoGnuplot, kFailed };

// A service's points as a saved run's tables state them (mix, configuration, setting, p50,
// p99, p99 / alone, BE share of idle CPU: what the tables and charts need).
struct SavedService {
  ServiceKind kind;
  std::vector<Point> points;
};
// Every "### <service>" table of frontier_bench's markdown output; a row that names no known
// BE mix or configuration is an error naming its line.
Result<std::vector<SavedService>> parse_saved_run(std::istream& in);
Chart write_chart(ServiceKind kind, const std::vector<Point>& points, const std::string& dir);

}  // namespace gleaner::bench::frontier
