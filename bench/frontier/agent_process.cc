#include "bench/frontier/agent_process.h"

#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup_fs.h"
#include "common/file_io.h"
#include "test/support/net.h"

namespace gleaner::bench::frontier {
namespace {

using namespace std::chrono_literals;

std::string tail_of(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

std::string be_quota(testing::ColocatedNode& node) {
  cgroup::CgroupFs fs(node.root(), node.scratch().version());
  auto path = fs.path_of(cgroup::Resource::kCpuQuota, node.be_qos());
  if (!path.ok()) return "";
  auto text = read_file(*path);
  return text.ok() ? *text : "";
}

}  // namespace

double metric_sum(const std::string& text, const std::string& name) {
  double sum = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != ' ' && next != '{') continue;  // another metric sharing the prefix
    const auto space = line.rfind(' ');
    if (space != std::string::npos) sum += std::strtod(line.c_str() + space + 1, nullptr);
  }
  return sum;
}

AgentProcess::AgentProcess(testing::ColocatedNode& node, const AgentFlags& flags,
                           const std::string& log_file, const std::string& binary)
    : node_(node), log_file_(log_file), be_quota_before_(be_quota(node)) {
  port_ = testing::free_loopback_port();
  std::vector<std::string> argv = {binary,
                                   "run",
                                   "--cgroup-root",
                                   node.root(),
                                   "--pods-file",
                                   node.pods_file(),
                                   "--config-dir",
                                   node.config_dir(),
                                   "--metrics-addr",
                                   "127.0.0.1:" + std::to_string(port_),
                                   "--node-name",
                                   "node-a",
                                   "--interval",
                                   std::to_string(flags.interval_ms),
                                   "--fast-interval",
                                   std::to_string(flags.fast_interval_ms),
                                   "--on-stop",
                                   "restore",
                                   "--log-level",
                                   "warn"};
  if (!flags.enforce) argv.emplace_back("--no-enforce");
  if (!flags.ebpf) argv.emplace_back("--no-ebpf");
  if (!flags.ebpf_wakeups) argv.emplace_back("--no-ebpf-wakeups");
  pid_ = node.scratch().spawn_exec(node.agent_pod(), argv, log_file);
  for (auto deadline = std::chrono::steady_clock::now() + 20s;
       std::chrono::steady_clock::now() < deadline;) {
    if (!testing::http_get_loopback(port_, "/metrics").empty()) return;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("gleaner-agent exited at start: " + tail_of(log_file));
    }
    std::this_thread::sleep_for(50ms);
  }
  node.scratch().kill_child(pid_);
  pid_ = -1;
  throw std::runtime_error("gleaner-agent did not serve /metrics within 20 s: " +
                           tail_of(log_file));
}

AgentProcess::~AgentProcess() {
  if (pid_ > 0) node_.scratch().kill_child(pid_);
}

void AgentProcess::stop() {
  if (pid_ <= 0) return;
  const pid_t pid = pid_;
  pid_ = -1;
  auto status = node_.scratch().stop_child(pid, SIGTERM, 15s);
  if (!status) {
    throw std::runtime_error("gleaner-agent did not stop within 15 s of SIGTERM: " +
                             tail_of(log_file_));
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    throw std::runtime_error("gleaner-agent stopped with status " + std::to_string(*status) + ": " +
                             tail_of(log_file_));
  }
  if (const std::string now = be_quota(node_); now != be_quota_before_) {
    throw std::runtime_error("gleaner-agent left BE's quota at " + now + " (was " +
                             be_quota_before_ + ")");
  }
}

}  // namespace gleaner::bench::frontier
