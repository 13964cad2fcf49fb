#pragma once
// The frontier benchmark's points: one configuration measured on a node running a real
// service (PointRunner), the rate calibration, and the report (table, goal check, chart).

#include <chrono>
#include <csignal>
#include <istream>
#include <string>
#include <vector>

#include "bench/frontier/services.h"
#include "common/result.h"
#include "test/support/colocated_node.h"

namespace gleaner::bench::frontier {

enum class Family {
  kAlone,           // LS alone
  kKubelet,         // BE at cpu.shares 2, no agent
  kKoordletStyle,   // 1 s loop, eBPF off, ceiling always
  kGleanerAlways,   // 1 s pass + 50 ms fast loop + eBPF wake-ups, ceiling always
  kGleanerShipped,  // the same, ceiling on interference (onInterference)
  kGleanerSlo,      // the same loops, BE steered by LS's run-queue wait (slo, the shipped mode)
};
const char* to_string(Family family);

struct Point {
  BeMix mix = BeMix::kCpu;
  Family family = Family::kAlone;
  // cpuSuppressThresholdPercent; for the feedback mode its run-queue wait target (us); 0
  // without an agent.
  int threshold = 0;
  double p50_ms = 0, p99_ms = 0;
  double p99_min_ms = 0, p99_max_ms = 0;  // the spread over the point's windows
  double node_utilisation = 0;            // all CPU used / (CPUs x wall), median window
  double be_cpu_s = 0, ls_cpu_s = 0, wall_s = 0;
  double other_cpu_s = 0;  // the load generator, the agent and the rest of the node
  // BE CPU / (CPUs x wall - LS CPU - other CPU): BE's share of what nobody else used.
  double be_share_of_idle = 0;
  int64_t sent = 0, late = 0, failed = 0;
};

// A point's agent setting as the tables print it: the threshold (65%), the wait target
// (wait 2000us), or "-".
std::string setting_label(const Point& p);

struct Calibration {
  double rate = 0;   // requests per second
  double share = 0;  // of the node's CPUs the service alone used at that rate
};

// Where the benchmark's SIGINT handler records an interruption (checked between steps).
void set_interrupt_flag(volatile std::sig_atomic_t* flag);

class PointRunner {
 public:
  // `repeats` measured windows per point (the median one stands).
  PointRunner(testing::ColocatedNode& node, const LsService& service, bool fifo,
              std::chrono::seconds measured, int repeats);
  // The rate at which the service alone uses about half the node's CPUs, or the highest the
  // generator keeps up with (its share then says so).
  Calibration calibrate();
  void set_rate(double rate) { rate_ = rate; }
  // One point: the family's agent (if any) started with `threshold`, warmed up for 2 s, then
  // the service measured under load for `repeats` windows of the measured duration; the
  // window with the median p99 is the point.
  Point measure(BeMix mix, Family family, int threshold);

 private:
  struct Window;
  Window run_load(std::chrono::milliseconds duration) const;
  Point to_point(const Window& w, BeMix mix, Family family, int threshold) const;

  testing::ColocatedNode& node_;
  const LsService& service_;
  bool fifo_;
  std::chrono::seconds measured_;
  int repeats_;
  double rate_ = 0;
  int cpus_;
};

// Markdown: the points of one service, and whether Gleaner's frontier lies on or below the
// others at every harvest level, per BE mix.
void print_table(ServiceKind kind, const std::vector<Point>& points);
// One line per BE mix: the harvest each configuration reaches at LS p99 <= 1.1x of LS alone
// (its best such point) and the node's CPU utilisation there.
void print_summary(ServiceKind kind, const std::vector<Point>& points);
// <dir>/frontier-<service>.dat and, with gnuplot installed, <dir>/frontier-<service>.png.
enum class Chart { kDrawn, kNoGnuplot, kFailed };

// A service's points as a saved run's tables state them (mix, configuration, setting, p50,
// p99, BE share of idle CPU: what the tables and charts need).
struct SavedService {
  ServiceKind kind;
  std::vector<Point> points;
};
// Every "### <service>" table of frontier_bench's markdown output; a row that names no known
// BE mix or configuration is an error naming its line.
Result<std::vector<SavedService>> parse_saved_run(std::istream& in);
Chart write_chart(ServiceKind kind, const std::vector<Point>& points, const std::string& dir);

}  // namespace gleaner::bench::frontier
