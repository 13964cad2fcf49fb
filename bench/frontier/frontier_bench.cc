// The harvest-latency frontier on real services: memcached, Redis and nginx (Debian
// packages) each run in an LS pod cgroup under an open-loop load (bench/frontier/load.h) at
// the rate where the service alone uses about half the machine, beside stress-ng BE in a
// besteffort pod. Every configuration is one point: the share of the CPU LS left idle that
// BE got (x) against LS p99 over LS-alone p99 (y).
//   LS alone; kubelet only (BE at cpu.shares 2, no agent);
//   koordlet-style: Gleaner restricted to a 1 s loop, eBPF off, the ceiling always applied;
//   Gleaner, ceiling always applied: 1 s pass, 50 ms fast loop, eBPF and its wake-ups;
//   Gleaner onInterference: the same, the ceiling applied on LS interference;
// each agent across cpuSuppressThresholdPercent (--thresholds); and Gleaner as shipped,
// cpuSuppressMode slo (BE steered by the LS waits BE causes, no threshold), one point per
// run-queue wait target (--slo-targets, microseconds; the default 4000 is the shipped one). Each
// point is the median of --repeats windows (p99 min-max stated). A configuration on a
// better frontier harvests more at the same latency, or holds latency at the same harvest.
//
// Writes one table per service (markdown, stdout), one summary line per BE mix (each
// configuration's best harvest at LS p99 <= 1.1x alone, and the node's utilisation there) and, with
// --out-dir, the points (frontier-<service>.dat) and a chart per service (frontier-<service>.png,
// gnuplot).
//
// Usage: frontier_bench [--services memcached,redis,nginx] [--be cpu,memory] [--seconds S]
//                       [--repeats N] [--thresholds 40,60,80,100] [--slo-targets 4000]
//                       [--out-dir DIR]
//                       [--link-prefix P]
//                       [--client fifo|normal]
//        frontier_bench --replot SAVED.md --out-dir DIR [--link-prefix P]
//          (the charts of a saved run, from the tables it printed; nothing is measured)
// Needs root (real cgroups) and the service packages; what is missing is skipped and said.
// Every process it starts is in its scratch cgroups and dies with it.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "bench/bench_cli.h"
#include "bench/frontier/frontier_points.h"
#include "bench/frontier/load.h"
#include "bench/frontier/services.h"
#include "common/log.h"
#include "test/support/colocated_node.h"
#include "test/support/temp_tree.h"

namespace {
using namespace gleaner::bench::frontier;
using namespace std::chrono_literals;

volatile std::sig_atomic_t g_interrupted = 0;

struct Options {
  std::vector<ServiceKind> services;
  std::vector<BeMix> mixes;
  std::vector<int> thresholds;
  std::vector<int> slo_targets_us;
  int seconds = 5;
  int repeats = 5;
  std::string out_dir;
  std::string link_prefix;
  bool fifo = true;
};

// One service's sweep over the BE mixes: the rate is calibrated once, alone.
std::vector<Point> sweep_service(ServiceKind kind, const Options& opt) {
  std::vector<Point> points;
  std::optional<Calibration> calibration;
  for (BeMix mix : opt.mixes) {
    if (g_interrupted) break;
    gleaner::testing::ColocatedNode node;
    gleaner::testing::TempDir work;
    LsService service(kind, node.scratch(), node.ls_pod(), work.path());
    preload(service.protocol(), service.port());
    PointRunner runner(node, service, opt.fifo, std::chrono::seconds(opt.seconds), opt.repeats);
    if (!calibration) calibration = runner.calibrate();
    runner.set_rate(calibration->rate);
    std::fprintf(stderr, "frontier_bench: %s at %.0f req/s (alone: %.0f%% of the node), BE %s\n",
                 to_string(kind), calibration->rate, 100 * calibration->share, to_string(mix));
    points.push_back(runner.measure(mix, Family::kAlone, 0));
    const int cpus = static_cast<int>(std::thread::hardware_concurrency());
    node.scratch().spawn_exec(node.be_pod(), stress_ng_argv(mix, cpus), work / "stress-ng.log");
    points.push_back(runner.measure(mix, Family::kKubelet, 0));
    for (Family family :
         {Family::kKoordletStyle, Family::kGleanerAlways, Family::kGleanerShipped}) {
      for (int threshold : opt.thresholds) {
        if (g_interrupted) break;
        points.push_back(runner.measure(mix, family, threshold));
      }
    }
    // The feedback mode does not use the threshold (no hard ceiling): a point per target.
    for (int target_us : opt.slo_targets_us) {
      if (g_interrupted) break;
      points.push_back(runner.measure(mix, Family::kGleanerSlo, target_us));
    }
  }
  return points;
}

template <typename T, typename Parse>
std::vector<T> parse_list(const std::string& text, Parse parse, const char* what) {
  std::vector<T> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    auto v = parse(item);
    if (!v) throw CLI::ValidationError(what, "unknown value " + item);
    out.push_back(*v);
  }
  return out;
}

// Prints a chart's markdown link (when drawn and asked for); whether it was drawn or not
// to be drawn here (no gnuplot), false when drawing failed.
bool chart(ServiceKind kind, const std::vector<Point>& points, const Options& opt) {
  switch (write_chart(kind, points, opt.out_dir)) {
    case Chart::kDrawn:
      if (!opt.link_prefix.empty()) {
        std::printf("![%s: BE harvest against LS p99](%sfrontier-%s.png)\n\n", to_string(kind),
                    opt.link_prefix.c_str(), to_string(kind));
      }
      return true;
    case Chart::kNoGnuplot:
      return true;
    case Chart::kFailed:
      return false;  // a chart that should have been drawn was not: said on stderr
  }
  return false;
}

int replot_saved(const std::string& path, const Options& opt) {
  if (opt.out_dir.empty()) {
    std::fprintf(stderr, "frontier_bench: --replot needs --out-dir\n");
    return 2;
  }
  std::ifstream in(path);
  auto saved = parse_saved_run(in);
  if (!saved) {
    std::fprintf(stderr, "frontier_bench: %s: %s\n", path.c_str(), saved.error().message.c_str());
    return 2;
  }
  for (const auto& service : *saved) {
    if (!chart(service.kind, service.points, opt)) return 1;
  }
  return 0;
}

// A parser of whole numbers in [low, high] for parse_list.
auto int_in(long low, long high) {
  return [low, high](const std::string& s) -> std::optional<int> {
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (end == s.c_str() || *end != '\0' || v < low || v > high) return std::nullopt;
    return static_cast<int>(v);
  };
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::string services = "memcached,redis,nginx";
  std::string mixes = "cpu,memory";
  std::string thresholds = "40,60,80,100";
  std::string slo_targets = "4000";
  std::string client = "fifo";
  std::string replot;
  CLI::App app{"frontier_bench: BE harvest against LS p99 on memcached, Redis and nginx"};
  app.add_option("--services", services, "services, comma-separated")->capture_default_str();
  app.add_option("--be", mixes, "stress-ng BE mixes: cpu, memory")->capture_default_str();
  app.add_option("--thresholds", thresholds, "cpuSuppressThresholdPercent values")
      ->capture_default_str();
  app.add_option("--slo-targets", slo_targets,
                 "cpuSloWaitTargetMicros values for the feedback mode (4000: the default)")
      ->capture_default_str();
  gleaner::bench::positive_option(app, "--seconds", opt.seconds, "seconds per measured window");
  gleaner::bench::positive_option(app, "--repeats", opt.repeats,
                                  "measured windows per point (the median one stands)");
  app.add_option("--out-dir", opt.out_dir, "where the points and charts go (none: tables only)");
  app.add_option("--link-prefix", opt.link_prefix,
                 "with --out-dir: show each chart under its table, as a markdown image at this "
                 "path prefix (e.g. img/)");
  app.add_option("--replot", replot,
                 "draw the charts of a saved run from its printed tables into --out-dir; "
                 "nothing is measured")
      ->check(CLI::ExistingFile);
  app.add_option("--client", client, "load generator threads: fifo (off-node client) or normal")
      ->check(CLI::IsMember({"fifo", "normal"}))
      ->capture_default_str();
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  try {
    opt.services = parse_list<ServiceKind>(services, parse_service, "--services");
    opt.mixes = parse_list<BeMix>(mixes, parse_be_mix, "--be");
    opt.thresholds = parse_list<int>(thresholds, int_in(1, 100), "--thresholds");
    opt.slo_targets_us = parse_list<int>(slo_targets, int_in(1, 1000000), "--slo-targets");
  } catch (const CLI::Error& e) {
    return app.exit(e);
  }
  opt.fifo = client == "fifo";
  if (!replot.empty()) return replot_saved(replot, opt);
  auto skip = gleaner::testing::real_cgroup_skip_reason();
  if (!skip.empty()) {
    std::printf("frontier_bench: skipped: %s\n", skip.c_str());
    return 0;
  }
  if (::access("/usr/bin/stress-ng", X_OK) != 0) {
    std::printf(
        "frontier_bench: skipped: /usr/bin/stress-ng not found (Debian package "
        "stress-ng; scripts/install-deps.sh)\n");
    return 0;
  }
  (void)gleaner::init_logging("warn");
  std::signal(SIGINT, [](int) { g_interrupted = 1; });
  std::signal(SIGTERM, [](int) { g_interrupted = 1; });
  set_interrupt_flag(&g_interrupted);

  for (ServiceKind kind : opt.services) {
    if (auto missing = missing_binary(kind); !missing.empty()) {
      std::printf("### %s\n\nNot run: %s\n\n", to_string(kind), missing.c_str());
      continue;
    }
    std::vector<Point> points;
    try {
      points = sweep_service(kind, opt);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "frontier_bench: %s: %s\n", to_string(kind), e.what());
      return 1;
    }
    if (g_interrupted) return 130;
    print_table(kind, points);
    print_summary(kind, points);
    std::printf("\n");
    if (!opt.out_dir.empty() && !chart(kind, points, opt)) return 1;
    std::fflush(stdout);
  }
  return 0;
}
