// The gleaner-agent binary on real cgroups with a state directory it cannot write: it must
// change nothing it could not put back after a crash, say so in /readyz and /metrics, and
// take over as soon as the directory works again (a later SIGKILL and restart then restore
// the node as found).
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "common/file_io.h"
#include "kube/api_client.h"
#include "test/integration/agent_restore_fixture.h"
#include "test/support/net.h"

namespace gleaner {
namespace {
using namespace restore_test;

// The status and body of GET `path` on the agent's metrics port.
std::optional<std::pair<int, std::string>> get(uint16_t port, const std::string& path) {
  kube::HttpConnection conn(net::HttpUrl{"http", "127.0.0.1", port}, {});
  auto resp = conn.request(net::ClientRequest{"GET", path, {}, ""}, {});
  if (!resp) return std::nullopt;
  return std::make_pair(resp->status, resp->body);
}

std::optional<double> metric(uint16_t port, const std::string& series) {
  return testing::metric_value(testing::http_get_loopback(port, "/metrics"), series);
}

TEST_F(AgentRestoreReal, AStateDirThatCannotBeWrittenChangesNothingUntilItCan) {
  // A file where the state directory's parent should be: nothing can be created under it
  // (as root, a mode cannot stop the agent; a path that is not a directory does).
  state_.write("blocked", "");
  const std::string state_dir = state_ / "blocked/state";
  const uint16_t port = testing::free_loopback_port();
  pid_t agent = start_agent(*node_, state_dir, {}, port);
  ASSERT_GT(agent, 0);
  const std::string held = R"(gleaner_cgroup_writes_unrecorded_total{resource="cpu_quota"})";
  // Suppression wants BE's quota: the write is held, pass after pass.
  ASSERT_TRUE(eventually([&] { return metric(port, held).value_or(0) >= 5; }, 20s))
      << "no held BE quota write";
  EXPECT_EQ(metric(port, "gleaner_agent_originals_recorded"), 0);
  auto ready = get(port, "/readyz");
  ASSERT_TRUE(ready.has_value());
  EXPECT_EQ(ready->first, 503);
  EXPECT_NE(ready->second.find("originals: cannot be recorded"), std::string::npos)
      << ready->second;
  expect_node_as_found();

  // The directory works again: the originals go on record, then the writes land.
  ASSERT_EQ(::unlink((state_ / "blocked").c_str()), 0);
  ASSERT_TRUE(eventually([&] { return suppressed_consistently(); }, 15s))
      << "BE quota " << be_quota() << ", container quota " << container_quota();
  EXPECT_TRUE(path_exists(state_dir + "/originals.json"));
  EXPECT_FALSE(path_exists(state_dir + "/originals.json.tmp"));
  EXPECT_TRUE(
      eventually([&] { return metric(port, "gleaner_agent_originals_recorded") == 1; }, 10s));
  EXPECT_TRUE(eventually(
      [&] {
        auto r = get(port, "/readyz");
        return r && r->first == 200;
      },
      10s));

  // Killed, then a successor's passes and stop: the node as found.
  ::kill(agent, SIGKILL);
  reap(agent, 5s);
  pid_t second = start_agent(*node_, state_dir, {"--max-ticks", "5"});
  const int status = reap(second, 20s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  expect_node_as_found();
}

}  // namespace
}  // namespace gleaner
