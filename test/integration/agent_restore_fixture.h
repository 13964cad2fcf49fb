#pragma once
// The real-cgroup node the agent restore tests share: a batch-limited BE pod (the standard
// Koordinator set-up), the gleaner-agent binary started over it, and the checks that the
// node is as found.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup_fs.h"
#include "test/support/colocated_node.h"
#include "test/support/eventually.h"
#include "test/support/spawn.h"
#include "test/support/temp_tree.h"

namespace gleaner::restore_test {
using gleaner::testing::agent_binary;
using gleaner::testing::eventually;
using namespace std::chrono_literals;
using cgroup::Resource;

inline constexpr const char* kContainerId =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

inline testing::ColocatedNodeSpec batch_limited_be() {
  return {.ls_containers = R"([{"name":"c","resources":{"requests":{"cpu":"1"}}}])",
          .be_containers = R"([{"name":"c","resources":{
              "requests":{"kubernetes.io/batch-cpu":"2000","kubernetes.io/batch-memory":"1Gi"},
              "limits":{"kubernetes.io/batch-cpu":"2000","kubernetes.io/batch-memory":"1Gi"}}}])",
          .threshold_config = R"({"clusterStrategy":{"enable":true,
              "cpuSuppressThresholdPercent":100,"cpuSuppressPolicy":"cfsQuota"}})",
          .be_container_id = kContainerId};
}

// Starts `gleaner-agent run` over `node` (200 ms full pass, 50 ms fast path);
// `metrics_port` 0: no metrics server.
inline pid_t start_agent(testing::ColocatedNode& node, const std::string& state_dir,
                         const std::vector<std::string>& extra = {}, uint16_t metrics_port = 0) {
  const std::string metrics = metrics_port == 0 ? "" : "127.0.0.1:" + std::to_string(metrics_port);
  std::vector<std::string> args = {agent_binary(),
                                   "run",
                                   "--cgroup-root",
                                   node.root(),
                                   "--pods-file",
                                   node.pods_file(),
                                   "--config-dir",
                                   node.config_dir(),
                                   "--metrics-addr",
                                   metrics,
                                   "--interval",
                                   "200",
                                   "--fast-interval",
                                   "50",
                                   "--node-name",
                                   "node-a",
                                   "--no-ebpf",
                                   "--log-level",
                                   "warn",
                                   "--state-dir",
                                   state_dir};
  args.insert(args.end(), extra.begin(), extra.end());
  return testing::spawn_program(std::move(args));
}

// Waits for the agent to exit (killing it after `deadline`); returns its wait status.
inline int reap(pid_t pid, std::chrono::milliseconds deadline) {
  int status = 0;
  if (!eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, deadline)) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }
  return status;
}

class AgentRestoreReal : public ::testing::Test {
 protected:
  void SetUp() override {
    auto reason = testing::real_cgroup_skip_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    if (::access(agent_binary().c_str(), X_OK) != 0) GTEST_SKIP() << agent_binary() << " not built";
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs 2 CPUs";
    node_ = std::make_unique<testing::ColocatedNode>(batch_limited_be());
    fs_ = std::make_unique<cgroup::CgroupFs>(node_->root(), node_->scratch().version());
    original_shares_ = *fs_->read_raw(Resource::kCpuShares, node_->be_container());
    original_cpus_ = *fs_->read_raw(Resource::kCpusetCpus, node_->be_qos());
    // Two busy BE processes: the executor wants both CPUs.
    node_->scratch().spawn_busy(node_->be_container());
    node_->scratch().spawn_busy(node_->be_container());
  }

  int64_t quota(const std::string& cg) const {
    return fs_->read_int(Resource::kCpuQuota, cg).value_or(-2);
  }
  int64_t be_quota() const { return quota(node_->be_qos()); }
  int64_t container_quota() const { return quota(node_->be_container()); }
  // BE is held by a quota, and the batch-limited container fits under it (v1 refuses
  // anything else; on v2 the container keeps its own quota and the minimum applies).
  bool suppressed_consistently() const {
    const int64_t be = be_quota();
    if (be <= 0) return false;
    if (node_->scratch().version() == cgroup::CgroupVersion::kV2) return container_quota() > 0;
    return container_quota() > 0 && container_quota() <= be;
  }
  // An agent suppresses BE and is killed with SIGKILL: its changes stay, its record too.
  void suppress_then_sigkill() {
    pid_t first = start_agent(*node_, state_.path());
    ASSERT_GT(first, 0);
    ASSERT_TRUE(eventually([&] { return suppressed_consistently(); }, 10s))
        << "BE quota " << be_quota() << ", container quota " << container_quota();
    ::kill(first, SIGKILL);
    const int killed = reap(first, 5s);
    ASSERT_TRUE(WIFSIGNALED(killed) && WTERMSIG(killed) == SIGKILL) << "status " << killed;
    ASSERT_TRUE(suppressed_consistently()) << "a killed agent restores nothing";
  }
  void expect_node_as_found() const {
    EXPECT_EQ(be_quota(), cgroup::kUnlimited);
    EXPECT_EQ(container_quota(), cgroup::kUnlimited);
    EXPECT_EQ(*fs_->read_raw(Resource::kCpuShares, node_->be_container()), original_shares_);
    // On v2 an inherited (empty) cpuset stays inherited: the cfsQuota policy never needed
    // to spell out the CPUs BE had anyway.
    EXPECT_EQ(*fs_->read_raw(Resource::kCpusetCpus, node_->be_qos()), original_cpus_);
  }

  std::unique_ptr<testing::ColocatedNode> node_;
  std::unique_ptr<cgroup::CgroupFs> fs_;
  testing::TempDir state_;
  std::string original_shares_;
  std::string original_cpus_;
};

}  // namespace gleaner::restore_test
