// The whole agent as a process, beside prometheus-node-exporter, on real cgroups.
//
// Overhead: for each pod count, N pod cgroups with one sleeping process each under a scratch
// kubepods tree and a pods file naming them; `gleaner-agent run` as shipped (1 s full pass,
// 50 ms fast loop, eBPF on) samples them while this process scrapes its /metrics every
// second. Beside it, prometheus-node-exporter (Debian's package, default collectors) is
// scraped at the same interval on the same machine. Both are measured the same way: CPU
// from /proc/<pid>/stat over the window (after a warm-up), RSS from /proc/<pid>/status, and
// the scrape's latency and body size.
//
// Soak: the agent at 1 s sampling for M minutes while pods churn (one pod replaced every
// 3 s); RSS is sampled every second (printed every 10 s) and its growth after the first
// minute is reported.
//
// Usage: agent_process_bench [--pods 50,100,200,500] [--seconds S] [--soak-minutes M]
// Needs root (real cgroups); cleans up its cgroups and processes even when interrupted.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_cli.h"
#include "bench/bench_stats.h"
#include "bench/published_figures.h"
#include "cgroup/layout.h"
#include "common/file_io.h"
#include "kube/http_client.h"
#include "kube/yaml_json.h"
#include "test/support/net.h"
#include "test/support/process_stats.h"
#include "test/support/scratch_cgroup.h"
#include "test/support/temp_tree.h"

namespace {
using gleaner::bench::percentile;
using gleaner::testing::process_cpu_seconds;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_interrupted = 0;

// A child process killed (and reaped) when this object goes, and with this process.
class Child {
 public:
  // `quiet`: the child's stderr goes to /dev/null (node-exporter logs every failed collector).
  explicit Child(const std::vector<std::string>& argv, bool quiet = false) {
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (int null = ::open("/dev/null", O_WRONLY); quiet && null >= 0) ::dup2(null, 2);
      std::vector<char*> args;
      args.reserve(argv.size() + 1);
      for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      std::perror(args[0]);
      ::_exit(127);
    }
  }
  ~Child() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] bool alive() const { return ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
};

// Open file descriptors of `pid` (entries of /proc/<pid>/fd).
size_t open_descriptors(pid_t pid) {
  std::error_code ec;
  size_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec), end;
       !ec && it != end; it.increment(ec)) {
    ++n;
  }
  return n;
}

double process_rss_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    double kib = 0;
    return fields >> kib ? kib / 1024.0 : 0;
  }
  return 0;
}

struct Scrapes {
  std::vector<double> ms;
  size_t bytes = 0;
  int failed = 0;
};

// Scrapes /metrics once a second until `until`; one keep-alive connection, as Prometheus does.
Scrapes scrape_every_second(uint16_t port, Clock::time_point until) {
  Scrapes out;
  gleaner::kube::HttpConnection conn({"http", "127.0.0.1", port}, {});
  gleaner::net::ClientRequest req;
  req.target = "/metrics";
  for (auto next = Clock::now(); next < until && !g_interrupted; next += 1s) {
    std::this_thread::sleep_until(next);
    auto t0 = Clock::now();
    auto resp = conn.request(req, {});
    if (!resp.ok() || resp->status != 200) {
      ++out.failed;
      continue;
    }
    out.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    out.bytes = resp->body.size();
  }
  return out;
}

// Waits (bounded) until the endpoint answers: the process is up and serving.
bool wait_serving(uint16_t port, const Child& child) {
  gleaner::kube::HttpConnection conn({"http", "127.0.0.1", port}, {});
  gleaner::net::ClientRequest req;
  req.target = "/metrics";
  for (auto deadline = Clock::now() + 20s; Clock::now() < deadline && !g_interrupted;) {
    if (!child.alive()) return false;
    auto resp = conn.request(req, {std::chrono::milliseconds(500)});
    if (resp.ok() && resp->status == 200) return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

struct Measured {
  double cpu_percent = 0;
  double rss_mib = 0;
  Scrapes scrapes;
};

Measured measure(const Child& child, uint16_t port, std::chrono::seconds window) {
  Measured m;
  gleaner::testing::measurement_window(3s);  // warm-up: first passes, caches, BPF load
  double cpu0 = process_cpu_seconds(child.pid());
  auto t0 = Clock::now();
  m.scrapes = scrape_every_second(port, t0 + window);
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  m.cpu_percent = (process_cpu_seconds(child.pid()) - cpu0) / wall * 100.0;
  m.rss_mib = process_rss_mib(child.pid());
  return m;
}

// The scratch pods and the pods file the agent reads; pods can be replaced one at a time.
class PodSet {
 public:
  PodSet(gleaner::testing::ScratchCgroups& scratch, const gleaner::testing::TempDir& files)
      : scratch_(scratch), path_(files / "pods.json") {}
  void add() {
    const int id = next_id_++;
    const bool be = id % 3 == 0;
    const std::string uid = "bench-" + std::to_string(id);
    const auto qos =
        be ? gleaner::cgroup::KubeQos::kBestEffort : gleaner::cgroup::KubeQos::kBurstable;
    const std::string dir = layout_.pod_dir(qos, uid);
    scratch_.mkdir(dir);
    pods_.push_back({id, be, dir, scratch_.spawn_idle(dir)});
  }
  void replace_oldest() {
    Pod old = pods_.front();
    pods_.erase(pods_.begin());
    scratch_.kill_child(old.pid);
    scratch_.rmdir(old.dir);
    add();
  }
  void write() const {
    nlohmann::json items = nlohmann::json::array();
    for (const auto& p : pods_) {
      const std::string id = std::to_string(p.id);
      nlohmann::json pod = {
          {"metadata", {{"name", "pod-" + id}, {"namespace", "bench"}, {"uid", "bench-" + id}}},
          {"spec", {{"containers", {{{"name", "c"}}}}}},
          {"status", {{"phase", "Running"}, {"qosClass", p.be ? "BestEffort" : "Burstable"}}}};
      if (p.be) {
        pod["metadata"]["labels"] = {{"koordinator.sh/qosClass", "BE"}};
      } else {
        pod["spec"]["containers"][0]["resources"] = {
            {"requests", {{"cpu", "100m"}, {"memory", "64Mi"}}}};
      }
      items.push_back(std::move(pod));
    }
    std::ofstream(path_ + ".tmp") << nlohmann::json{{"items", std::move(items)}}.dump();
    std::rename((path_ + ".tmp").c_str(), path_.c_str());  // the agent never sees half a file
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  struct Pod {
    int id;
    bool be;
    std::string dir;
    pid_t pid;
  };
  gleaner::testing::ScratchCgroups& scratch_;
  gleaner::cgroup::KubeletLayout layout_{gleaner::cgroup::CgroupDriver::kCgroupfs};
  std::string path_;
  std::vector<Pod> pods_;
  int next_id_ = 0;
};

// The data of the shipped ack-slo-config ConfigMap (deploy/manifests), read once.
const gleaner::Json& shipped_slo_config() {
  static const gleaner::Json data = [] {
    const std::string manifest = GLEANER_SHIPPED_SLO_CONFIG;
    auto text = gleaner::read_file(manifest);
    if (!text.ok()) throw std::runtime_error(manifest + ": " + text.error().message);
    auto doc = gleaner::kube::yaml_to_json(*text, manifest);
    if (!doc.ok()) throw std::runtime_error(doc.error().message);
    if (!doc->contains("data") || !(*doc)["data"].is_object())
      throw std::runtime_error(manifest + ": no data in the ConfigMap");
    return (*doc)["data"];
  }();
  return data;
}

// The shipped ack-slo-config, one file per key in `dir`, as kubelet mounts it for the
// DaemonSet.
void write_shipped_slo_config(const gleaner::testing::TempDir& files, const std::string& dir) {
  files.mkdir(dir);
  for (const auto& [key, value] : shipped_slo_config().items())
    files.write(std::string(dir).append("/").append(key), value.get<std::string>());
}

// N scratch pods listed in a pods file, and `gleaner-agent run` as shipped over them: the
// DaemonSet's interval and the shipped ack-slo-config.
struct AgentOverPods {
  gleaner::testing::ScratchCgroups scratch;
  gleaner::testing::TempDir files;
  PodSet pods{scratch, files};
  uint16_t port = gleaner::testing::free_loopback_port();
  std::unique_ptr<Child> agent;

  // `suppressing`: BE CPU suppression held on throughout (cfsQuota policy, mode always, a
  // 1% threshold), so the 50 ms fast pass runs at every tick as when LS is busy.
  explicit AgentOverPods(int n, bool suppressing = false) {
    for (int i = 0; i < n; ++i)
      pods.add();
    pods.write();
    write_shipped_slo_config(files, "slo-config");
    if (suppressing) {
      files.write("slo-config/resource-threshold-config",
                  R"({"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":1,)"
                  R"("cpuSuppressPolicy":"cfsQuota","cpuSuppressMode":"always"}})");
    }
    agent = std::make_unique<Child>(std::vector<std::string>{
        GLEANER_AGENT_BINARY, "run", "--cgroup-root", scratch.root(), "--pods-file", pods.path(),
        "--config-dir", files / "slo-config", "--metrics-addr", "127.0.0.1:" + std::to_string(port),
        "--node-name", "bench-node", "--interval", "1000", "--log-level", "error", "--state-dir",
        files / "state"});
  }
  // The agent is up and serving /metrics.
  bool serving() { return wait_serving(port, *agent); }
};

// The agent's cost goal: a node's worth of pods for about a hundredth of a core.
constexpr int kGoalPods = 200;
constexpr double kGoalCpuPercent = 1.0;
constexpr double kGoalRssMib = 24.0;

void print_row(const char* what, int pods, const Measured& m) {
  std::printf("| %s | %d | %.2f | %.1f | %.2f | %.2f | %.0f | %d |\n", what, pods, m.cpu_percent,
              m.rss_mib, percentile(m.scrapes.ms, 0.5), percentile(m.scrapes.ms, 0.99),
              static_cast<double>(m.scrapes.bytes) / 1024.0, m.scrapes.failed);
  std::fflush(stdout);
}

void overhead(const std::vector<int>& sizes, std::chrono::seconds window) {
  std::printf(
      "| process | pods | CPU (%% of a core) | RSS (MiB) | /metrics p50 (ms) | p99 (ms) | "
      "body (KiB) | failed scrapes |\n|---|---|---|---|---|---|---|---|\n");
  if (::access(NODE_EXPORTER_BINARY, X_OK) == 0) {
    const uint16_t port = gleaner::testing::free_loopback_port();
    Child exporter({NODE_EXPORTER_BINARY, "--web.listen-address=127.0.0.1:" + std::to_string(port),
                    "--log.level=error"},
                   true);
    if (wait_serving(port, exporter)) {
      print_row("prometheus-node-exporter (default collectors)", 0,
                measure(exporter, port, window));
    } else {
      std::printf("| prometheus-node-exporter | - | did not start | | | | | |\n");
    }
  } else {
    std::printf("| prometheus-node-exporter | - | not installed (%s) | | | | | |\n",
                NODE_EXPORTER_BINARY);
  }
  std::optional<Measured> at_goal_size;
  for (int n : sizes) {
    if (g_interrupted) return;
    AgentOverPods run(n);
    if (!run.serving()) {
      std::printf("| gleaner-agent | %d | did not start | | | | | |\n", n);
      continue;
    }
    Measured m = measure(*run.agent, run.port, window);
    print_row("gleaner-agent (as shipped)", n, m);
    if (n == kGoalPods) at_goal_size = m;
    AgentOverPods suppressing(n, true);
    if (suppressing.serving()) {
      print_row("gleaner-agent (BE suppression on, cfsQuota)", n,
                measure(*suppressing.agent, suppressing.port, window));
    }
  }
  std::printf("\nreference: %s\n", gleaner::bench::kKoordletPublished);
  if (at_goal_size) {
    const bool met =
        at_goal_size->cpu_percent <= kGoalCpuPercent && at_goal_size->rss_mib <= kGoalRssMib;
    std::printf(
        "\n- Goal, the agent at %d pods within %.0f%% of a core and %.0f MiB RSS: %s "
        "(%.2f%%, %.1f MiB)\n",
        kGoalPods, kGoalCpuPercent, kGoalRssMib, met ? "met" : "not met", at_goal_size->cpu_percent,
        at_goal_size->rss_mib);
  }
}

void soak(double minutes) {
  constexpr int kPods = 100;
  AgentOverPods run(kPods);
  if (!run.serving()) {
    std::printf("soak: the agent did not start\n");
    return;
  }
  const Child& agent = *run.agent;
  PodSet& pods = run.pods;
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double, std::ratio<60>>(minutes));
  std::vector<std::pair<double, double>> rss;          // (seconds since start, MiB)
  std::vector<std::pair<double, size_t>> descriptors;  // (seconds since start, open files)
  int replaced = 0;
  double cpu0 = process_cpu_seconds(agent.pid());
  gleaner::kube::HttpConnection conn({"http", "127.0.0.1", run.port}, {});
  gleaner::net::ClientRequest req;
  req.target = "/metrics";
  int second = 0;
  for (auto next = t0; next < end && !g_interrupted && agent.alive(); next += 1s, ++second) {
    std::this_thread::sleep_until(next);
    const double at = std::chrono::duration<double>(Clock::now() - t0).count();
    if (second % 3 == 2) {
      pods.replace_oldest();
      pods.write();
      ++replaced;
    }
    (void)conn.request(req, {});  // scraped every second, as in production
    rss.emplace_back(at, process_rss_mib(agent.pid()));
    descriptors.emplace_back(at, open_descriptors(agent.pid()));
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = (process_cpu_seconds(agent.pid()) - cpu0) / wall * 100.0;
  // Growth after the first minute (or half of a shorter run), when the process has reached
  // its working set.
  const double settled_s = std::min(60.0, wall / 2);
  double first = 0;
  double peak = 0;
  for (const auto& [at, mib] : rss) {
    if (at >= settled_s && first == 0) first = mib;
    peak = std::max(peak, mib);
  }
  size_t files_first = 0;
  for (const auto& [at, n] : descriptors) {
    if (at >= settled_s) {
      files_first = n;
      break;
    }
  }
  const size_t files_last = descriptors.empty() ? 0 : descriptors.back().second;
  const double last = rss.empty() ? 0 : rss.back().second;
  std::printf(
      "| minutes | pods | pods replaced | agent CPU (%% of a core) | RSS at 1 min (MiB) | RSS at "
      "end (MiB) | peak (MiB) | growth after 1 min (MiB) | open files at 1 min | at end "
      "|\n|---|---|---|---|---|---|---|---|---|---|\n");
  std::printf("| %.1f | %d | %d | %.2f | %.1f | %.1f | %.1f | %+.2f | %zu | %zu |\n", wall / 60.0,
              kPods, replaced, cpu, first, last, peak, first > 0 ? last - first : 0.0, files_first,
              files_last);
  // Flat: no more than 1 MiB, or 5% of the settled RSS if that is more, over the run.
  const double allowed = std::max(1.0, 0.05 * first);
  if (first > 0) {
    std::printf("\n- Goal, RSS flat after the first minute (growth at most %.1f MiB): %s\n",
                allowed, last - first <= allowed ? "met" : "missed");
  }
  // Each pod keeps a handful of cgroup files open; churn must not leave the replaced pods'.
  if (files_first > 0) {
    const size_t files_allowed = files_first + files_first / 10;
    std::printf("- Goal, open files flat with pods replaced (at most %zu at the end): %s\n",
                files_allowed, files_last <= files_allowed ? "met" : "missed");
  }
  std::printf("\nRSS samples every 10 s (s: MiB):");
  for (size_t i = 0; i < rss.size(); i += 10) {
    const auto& [at, mib] = rss[i];
    std::printf(" %.0f:%.1f", at, mib);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {50, 100, 200, 500};
  int seconds = 30;
  double soak_minutes = 10;
  CLI::App app{"agent_process_bench: gleaner-agent beside prometheus-node-exporter, and a soak"};
  gleaner::bench::positive_option(app, "--pods", sizes, "pod counts, comma-separated")
      ->delimiter(',');
  app.add_option("--seconds", seconds, "measurement window per pod count")
      ->check(CLI::Range(2, 86400))
      ->capture_default_str();
  app.add_option("--soak-minutes", soak_minutes, "soak length; 0 skips it")
      ->check(gleaner::bench::kNonNegative)
      ->capture_default_str();
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  auto skip = gleaner::testing::real_cgroup_skip_reason();
  if (!skip.empty()) {
    std::printf("agent_process_bench: skipped: %s\n", skip.c_str());
    return 0;
  }
  std::signal(SIGINT, [](int) { g_interrupted = 1; });
  std::signal(SIGTERM, [](int) { g_interrupted = 1; });
  std::signal(SIGPIPE, SIG_IGN);
  try {
    overhead(sizes, std::chrono::seconds(seconds));
    if (soak_minutes > 0 && !g_interrupted) {
      std::printf("\nSoak at 1 s sampling with pods churning:\n\n");
      soak(soak_minutes);
    }
  } catch (const std::exception& e) {  // pods, cgroups and children are gone by now
    std::fprintf(stderr, "agent_process_bench: %s\n", e.what());
    return 1;
  }
  return g_interrupted ? 130 : 0;
}
