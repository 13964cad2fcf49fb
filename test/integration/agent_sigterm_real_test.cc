// The gleaner-agent binary on real cgroups: once it has throttled BE, SIGTERM makes it
// restore every value it changed and exit cleanly within 5 s.
#include <chrono>
#include <functional>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup_fs.h"
#include "test/support/colocated_node.h"
#include "test/support/eventually.h"
#include "test/support/spawn.h"

namespace gleaner {
namespace {
using gleaner::testing::eventually;
using namespace std::chrono_literals;
using cgroup::Resource;

TEST(AgentSigtermReal, RestoresEveryValueAndExitsWithinFiveSeconds) {
  auto reason = testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  const std::string agent = testing::agent_binary();
  if (::access(agent.c_str(), X_OK) != 0) GTEST_SKIP() << agent << " not built";

  testing::ColocatedNode node({.ls_containers = "[]", .be_containers = "[]"});
  node.scratch().spawn_busy(node.be_pod());
  node.scratch().spawn_busy(node.ls_pod());
  const std::string& be_qos = node.be_qos();
  const std::string& be_pod = node.be_pod();

  cgroup::CgroupFs fs(node.root(), node.scratch().version());
  const std::string shares_before = *fs.read_raw(Resource::kCpuShares, be_pod);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string root = node.root();
    const std::string pods = node.pods_file();
    const std::string config = node.config_dir();
    ::execl(agent.c_str(), agent.c_str(), "run", "--cgroup-root", root.c_str(), "--pods-file",
            pods.c_str(), "--config-dir", config.c_str(), "--metrics-addr", "", "--interval", "200",
            "--node-name", "node-a", "--log-level", "warn", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  auto quota = [&] { return fs.read_int(Resource::kCpuQuota, be_qos).value_or(-2); };
  bool throttled = eventually([&] { return quota() > 0; }, 10s);
  ::kill(pid, SIGTERM);
  int status = 0;
  auto start = std::chrono::steady_clock::now();
  bool exited = eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, 5s);
  auto took = std::chrono::steady_clock::now() - start;
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ASSERT_TRUE(throttled) << "the agent never wrote a BE quota";
  ASSERT_TRUE(exited) << "no exit within 5 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_LT(took, 5s);
  EXPECT_EQ(quota(), cgroup::kUnlimited);
  EXPECT_EQ(*fs.read_raw(Resource::kCpuShares, be_pod), shares_before);
}

}  // namespace
}  // namespace gleaner
