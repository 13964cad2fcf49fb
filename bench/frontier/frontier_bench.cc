// The harvest-latency frontier on real services: memcached, Redis and nginx (Debian
// packages) each run in an LS pod cgroup under an open-loop load (bench/frontier/load.h) at
// the rate where the service alone uses about half the machine, beside stress-ng BE in a
// besteffort pod. Every configuration is one point: the share of the CPU LS left idle that
// BE got (x) against LS p99 over LS-alone p99 (y).
//
// The configurations (--configs; LS alone and its A/A twin always run):
//   kubelet only (BE at cpu.shares 2, no agent); a fixed BE quota written once with no agent
//   (--fixed-quotas, millicores: the CFS bandwidth mechanism alone); the agent measuring only
//   (--no-enforce); koordlet-style (1 s loop, eBPF off, ceiling always), Gleaner ceiling always
//   and onInterference (each across --thresholds); Gleaner slo as shipped and slo with the probe,
//   the fast path or the probe's wake-ups off (each across --slo-targets, microseconds). Every
//   agent is `gleaner-agent run` as its own process in the agent's pod cgroup.
//
// The method (bench/frontier/rounds.h): --rounds rounds, each running every configuration for one
// window in a shuffled order (the seed is printed; --seed repeats a run's order). Each ratio is
// paired by round against the LS-alone window of the same round, with a bootstrap 95% interval;
// the A/A pair gives the floor below which a difference is "indistinguishable", and a run whose
// LS-alone windows spread beyond --max-alone-spread is marked invalid and judges nothing.
//
// Each point also carries two candidate signals for interference the run queue cannot see
// (#62 item 2): the LS pod's CPU time per request and its threads' CPU time per run
// (schedstat), each with its ratio to LS alone; a line per BE mix sets them beside their own
// A/A floors.
//
// Writes one table per service (markdown, stdout), one summary line per BE mix and, with
// --out-dir (made up front, or refused before anything is measured), the points
// (frontier-<service>.dat) and a chart per service (frontier-<service>.png, gnuplot).
//
// Usage: frontier_bench [--services memcached,redis,nginx] [--be cpu,memory] [--seconds S]
//                       [--rounds N] [--seed N] [--settle-ms MS] [--configs a,b,...]
//                       [--thresholds 65] [--slo-targets 4000] [--fixed-quotas 100,900]
//                       [--max-alone-spread 1.5] [--out-dir DIR] [--link-prefix P]
//                       [--client fifo|normal]
//        frontier_bench --replot SAVED.md --out-dir DIR [--link-prefix P]
//          (the charts of a saved run, from the tables it printed; nothing is measured)
// Needs root (real cgroups) and the service packages; what is missing is skipped and said.
// Every process it starts is in its scratch cgroups and dies with it; every value a
// configuration changes is put back (and checked) before the next window.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
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
  std::vector<Family> families;
  std::vector<int> thresholds;
  std::vector<int> slo_targets_us;
  std::vector<int> fixed_quotas_m;
  int seconds = 3;
  int rounds = 5;
  int settle_ms = 2000;
  uint64_t seed = 0;
  double max_alone_spread = 1.5;
  std::string out_dir;
  std::string link_prefix;
  std::string baseline_agent;
  bool fifo = true;
};

// Every configuration of a run: LS alone and its twin first, then each asked family across its
// settings.
std::vector<Config> configurations(const Options& opt) {
  std::vector<Config> out = {{Family::kAlone, 0}, {Family::kAloneTwin, 0}};
  for (Family family : kFamilies) {
    if (std::find(opt.families.begin(), opt.families.end(), family) == opt.families.end()) continue;
    if (takes_threshold(family)) {
      for (int t : opt.thresholds)
        out.push_back({family, t});
    } else if (takes_wait_target(family)) {
      for (int t : opt.slo_targets_us)
        out.push_back({family, t});
    } else if (family == Family::kFixedQuota) {
      for (int q : opt.fixed_quotas_m)
        out.push_back({family, q});
    } else {
      out.push_back({family, 0});
    }
  }
  return out;
}

// One service's rounds over each BE mix: the rate is calibrated once, alone.
std::vector<MixResult> sweep_service(ServiceKind kind, const Options& opt) {
  std::vector<MixResult> results;
  std::optional<Calibration> calibration;
  const std::vector<Config> configs = configurations(opt);
  for (size_t m = 0; m < opt.mixes.size() && !g_interrupted; ++m) {
    const BeMix mix = opt.mixes[m];
    // Each (service, mix) shuffles with its own seed, derived from the run's.
    const uint64_t seed = opt.seed + 7919 * m + 104729 * static_cast<uint64_t>(kind);
    gleaner::testing::ColocatedNode node;
    gleaner::testing::TempDir work;
    LsService service(kind, node.scratch(), node.ls_pod(), work.path());
    preload(service.protocol(), service.port());
    PointRunner runner(node, service, opt.fifo, std::chrono::seconds(opt.seconds),
                       std::chrono::milliseconds(opt.settle_ms), work.path());
    if (!calibration) calibration = runner.calibrate();
    runner.set_rate(calibration->rate);
    runner.set_baseline_agent(opt.baseline_agent);
    std::fprintf(stderr,
                 "frontier_bench: %s at %.0f req/s (alone: %.0f%% of the node), BE %s, %zu "
                 "configurations x %d rounds, seed %llu\n",
                 to_string(kind), calibration->rate, 100 * calibration->share, to_string(mix),
                 configs.size(), opt.rounds, static_cast<unsigned long long>(seed));
    const int cpus = static_cast<int>(std::thread::hardware_concurrency());
    runner.set_be_group(node.scratch().spawn_exec(node.be_pod(), stress_ng_argv(mix, cpus),
                                                  work / "stress-ng.log"));
    std::vector<std::vector<Point>> windows(configs.size());
    for (int r = 0; r < opt.rounds && !g_interrupted; ++r) {
      for (int i : round_order(static_cast<int>(configs.size()), seed, r)) {
        if (g_interrupted) break;
        windows[static_cast<size_t>(i)].push_back(
            runner.measure_window(mix, configs[static_cast<size_t>(i)]));
      }
      std::fprintf(stderr, "frontier_bench: %s BE %s round %d of %d done\n", to_string(kind),
                   to_string(mix), r + 1, opt.rounds);
    }
    results.push_back(summarise(mix, configs, windows, seed, opt.max_alone_spread));
  }
  return results;
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
  std::string thresholds = "65";
  std::string slo_targets = "4000";
  std::string fixed_quotas = "100,900";
  std::string families =
      "kubelet,fixed,measure,koordlet,always,oninterference,slo,slo-noprobe,slo-nofast,"
      "slo-nowakeups";
  std::string seed;
  std::string baseline_agent;
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
  gleaner::bench::positive_option(app, "--rounds,--repeats", opt.rounds,
                                  "rounds: each runs every configuration for one window, shuffled");
  app.add_option("--seed", seed, "the order's seed (default: drawn, and printed)");
  gleaner::bench::non_negative_option(app, "--settle-ms", opt.settle_ms,
                                      "how long each configuration runs before its window");
  app.add_option("--configs", families,
                 "configurations besides LS alone and its A/A twin: kubelet, fixed, measure, "
                 "koordlet, always, oninterference, slo, slo-noprobe, slo-nofast, slo-nowakeups")
      ->capture_default_str();
  app.add_option("--baseline-agent", baseline_agent,
                 "another build's gleaner-agent: adds the configuration slo-baseline, the shipped "
                 "mode run by that binary, beside this build's (a before/after in one run)")
      ->check(CLI::ExistingFile);
  app.add_option("--fixed-quotas", fixed_quotas,
                 "BE quotas (millicores) for the fixed-quota configuration")
      ->capture_default_str();
  app.add_option("--max-alone-spread", opt.max_alone_spread,
                 "a run whose LS-alone p99 max/min exceeds this judges nothing")
      ->check(CLI::Range(1.0, 100.0))
      ->capture_default_str();
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
    opt.fixed_quotas_m = parse_list<int>(
        fixed_quotas, int_in(1, 1000 * static_cast<long>(std::thread::hardware_concurrency())),
        "--fixed-quotas");
    opt.families = parse_list<Family>(families, parse_family, "--configs");
    if (seed.empty()) {
      opt.seed = std::random_device{}();
    } else {
      char* end = nullptr;
      opt.seed = std::strtoull(seed.c_str(), &end, 10);
      if (end == seed.c_str() || *end != '\0')
        throw CLI::ValidationError("--seed", "not a number: " + seed);
    }
  } catch (const CLI::Error& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  opt.fifo = client == "fifo";
  opt.baseline_agent = baseline_agent;
  const bool wants_baseline = std::find(opt.families.begin(), opt.families.end(),
                                        Family::kSloBaseline) != opt.families.end();
  if (!baseline_agent.empty() && !wants_baseline) opt.families.push_back(Family::kSloBaseline);
  if (baseline_agent.empty() && wants_baseline) {
    std::fprintf(stderr, "frontier_bench: --configs slo-baseline needs --baseline-agent\n");
    return 2;
  }
  if (!opt.out_dir.empty()) {
    // Made (or refused) before anything is measured: a chart that cannot be written after an
    // hour of measuring would lose the run.
    std::error_code ec;
    std::filesystem::create_directories(opt.out_dir, ec);
    if (ec || ::access(opt.out_dir.c_str(), W_OK) != 0) {
      std::fprintf(stderr, "frontier_bench: --out-dir %s: cannot be made or written: %s\n",
                   opt.out_dir.c_str(), ec ? ec.message().c_str() : "not writable");
      return 2;
    }
  }
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
  std::printf("Run seed %llu (`--seed %llu` repeats this run's order of configurations).\n\n",
              static_cast<unsigned long long>(opt.seed), static_cast<unsigned long long>(opt.seed));

  bool failed_chart = false;
  for (ServiceKind kind : opt.services) {
    if (auto missing = missing_binary(kind); !missing.empty()) {
      std::printf("### %s\n\nNot run: %s\n\n", to_string(kind), missing.c_str());
      continue;
    }
    std::vector<MixResult> results;
    try {
      results = sweep_service(kind, opt);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "frontier_bench: %s: %s\n", to_string(kind), e.what());
      return 1;
    }
    if (g_interrupted) return 130;
    print_table(kind, results);
    print_summary(kind, results);
    print_signals(kind, results);
    std::printf("\n");
    std::vector<Point> points;
    for (const auto& m : results)
      points.insert(points.end(), m.points.begin(), m.points.end());
    if (!opt.out_dir.empty() && !chart(kind, points, opt)) {
      failed_chart = true;  // said on stderr; the other services are still measured
    }
    std::fflush(stdout);
  }
  return failed_chart ? 1 : 0;
}
