// Agent overhead on real cgroups: N pod cgroups with one process each under a scratch
// kubepods tree; measures CPU time per full pod sampling pass, CPU per second of wall
// time at a 1 s interval, and RSS with a full 30-minute metric history, beside koordlet's
// published figures. Needs root (real cgroups); cleans up even when interrupted.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/metrics/metric_store.h"
#include "agent/metrics/pod_sampler.h"
#include "bench/bench_cli.h"
#include "bench/published_figures.h"
#include "cgroup/layout.h"
#include "test/support/scratch_cgroup.h"

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  long size = 0;      // NOLINT(google-runtime-int)
  long resident = 0;  // NOLINT(google-runtime-int)
  statm >> size >> resident;
  return static_cast<double>(resident * ::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

volatile std::sig_atomic_t g_interrupted = 0;

}  // namespace

int main(int argc, char** argv) {
  using namespace gleaner;
  std::vector<int> sizes = {50, 100, 200};
  CLI::App app{"agent_overhead_bench: the agent's sampling pass and store at N pod cgroups"};
  gleaner::bench::positive_option(app, "pods", sizes, "pod counts to measure");
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  auto skip = testing::real_cgroup_skip_reason();
  if (!skip.empty()) {
    std::printf("agent_overhead_bench: skipped: %s\n", skip.c_str());
    return 0;
  }
  std::signal(SIGINT, [](int) { g_interrupted = 1; });
  std::signal(SIGTERM, [](int) { g_interrupted = 1; });

  std::printf(
      "| pods | CPU per pass (ms) p50 | p99 | sampling CPU at a 1 s interval (%% of a core) | "
      "benchmark process RSS with 30 min history (MiB) |\n");
  std::printf("|---|---|---|---|---|\n");
  for (int n : sizes) {
    testing::ScratchCgroups scratch;  // removed at scope end, also after SIGINT
    cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
    std::vector<agent::PodCgroup> pods;
    for (int i = 0; i < n && !g_interrupted; ++i) {
      std::string uid = "bench-" + std::to_string(i);
      std::string dir = layout.pod_dir(cgroup::KubeQos::kBurstable, uid);
      scratch.mkdir(dir);
      scratch.spawn_idle(dir);
      pods.push_back({"bench/pod-" + std::to_string(i), dir});
    }
    cgroup::CgroupFs fs(scratch.root(), scratch.version());
    agent::PodSampler sampler(fs);
    auto epoch = std::chrono::steady_clock::now();
    agent::MetricStore store(epoch, 1800);
    std::vector<double> pass_ms;
    constexpr int kPasses = 200;
    for (int pass = 0; pass < kPasses && !g_interrupted; ++pass) {
      // Simulated time advances one interval per pass so the store fills as in 200 s.
      auto at = epoch + std::chrono::seconds(pass + 1);
      double c0 = thread_cpu_seconds();
      auto result = sampler.sample(pods, at);
      for (const auto& s : result.pods) {
        store.add("pod/" + s.key + "/cpu", at, static_cast<double>(s.cpu_milli));
        store.add("pod/" + s.key + "/memory", at, static_cast<double>(s.memory_bytes));
      }
      pass_ms.push_back((thread_cpu_seconds() - c0) * 1000.0);
    }
    if (g_interrupted) break;  // `scratch` removes the pods on the way out
    // Fill the rest of the 30-minute history so RSS reflects a full store.
    for (int sec = kPasses + 1; sec <= 1800; ++sec) {
      auto at = epoch + std::chrono::seconds(sec);
      for (const auto& p : pods) {
        store.add("pod/" + p.key + "/cpu", at, 1);
        store.add("pod/" + p.key + "/memory", at, 1);
      }
    }
    std::sort(pass_ms.begin(), pass_ms.end());
    double p50 = pass_ms[pass_ms.size() / 2];
    double p99 = pass_ms[pass_ms.size() * 99 / 100];
    std::printf("| %d | %.2f | %.2f | %.2f | %.1f |\n", n, p50, p99, p50 / 1000.0 * 100.0,
                rss_mib());
  }
  if (!g_interrupted) std::printf("\nreference: %s\n", gleaner::bench::kKoordletPublished);
  return g_interrupted ? 130 : 0;
}
