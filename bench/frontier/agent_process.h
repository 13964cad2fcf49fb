#pragma once
// `gleaner-agent run` as the DaemonSet runs it, for one frontier window: its own process in
// the agent's pod cgroup (ColocatedNode::agent_pod), over the node's pods file and config,
// serving /metrics on a loopback port. Stopped with SIGTERM and --on-stop restore, so it puts
// back every value it changed before the next window; a stop that does not finish in time, or a
// BE quota left changed, is an error (the next configuration would be measured on a node the
// last one left behind).

#include <cstdint>
#include <string>

#include <sys/types.h>

#include "test/support/colocated_node.h"

namespace gleaner::bench::frontier {

struct AgentFlags {
  bool enforce = true;
  bool ebpf = true;
  bool ebpf_wakeups = true;
  int fast_interval_ms = 50;  // 0: no fast path
  int interval_ms = 1000;
};

class AgentProcess {
 public:
  // Starts the agent and waits (bounded, 20 s) until it serves /metrics; throws
  // std::runtime_error with the tail of its log when it does not.
  // `binary`: the gleaner-agent to run (this build's, or another's for a before/after).
  AgentProcess(testing::ColocatedNode& node, const AgentFlags& flags, const std::string& log_file,
               const std::string& binary);
  ~AgentProcess();
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] uint16_t port() const { return port_; }
  // SIGTERM, then waits for it to have restored and exited; throws when it had to be killed,
  // exited non-zero, or BE's quota is not what it was before the agent started.
  void stop();

 private:
  testing::ColocatedNode& node_;
  std::string log_file_;
  std::string be_quota_before_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
};

// The sum of every series of `name` in Prometheus text (all label sets); 0 when absent.
double metric_sum(const std::string& text, const std::string& name);

}  // namespace gleaner::bench::frontier
