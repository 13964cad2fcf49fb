// `gleaner-scheduler run --check-config`: "config OK" and exit 0 for a good configuration,
// every error and exit 2 (a configuration error) otherwise, without starting the server.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/cli/commands.h"
#include "test/support/temp_tree.h"

namespace gleaner::scheduler {
namespace {

struct Outcome {
  int code = -1;
  std::string out;
};

Outcome run_cli(std::vector<std::string> args) {
  CLI::App app;
  register_commands(app);
  set_exit_code(-1);
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  ::testing::internal::CaptureStdout();
  app.parse(args);
  Outcome o;
  o.out = ::testing::internal::GetCapturedStdout();
  o.code = exit_code();
  return o;
}

const std::string kKubeconfig = GLEANER_SOURCE_DIR "/test/kube/testdata/kubeconfig.yaml";

TEST(RunCheckConfig, GoodConfigurationPrintsConfigOkAndExitsZero) {
  gleaner::testing::TempDir dir;
  dir.write("token", "s3cret\n");
  dir.write("queues.json", R"([{"name": "team-a", "min": {"cpu": "4", "memory": "8Gi"}}])");
  // Port 1 would need privileges to bind: a check that started the server would fail.
  Outcome o = run_cli({"run", "--check-config", "--listen", "127.0.0.1:1", "--token-file",
                       dir / "token", "--queues-file", dir / "queues.json", "--cluster",
                       "c1=" + kKubeconfig, "--cluster", "c2=" + kKubeconfig});
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(o.out, "config OK\n");
}

TEST(RunCheckConfig, BadConfigurationPrintsEveryErrorAndExitsOne) {
  gleaner::testing::TempDir dir;
  dir.write("empty-token", "\n");
  dir.write("queues.json", R"([{"name": "team-a", "parent": "nowhere"}])");
  Outcome o = run_cli({"run",
                       "--check-config",
                       "--listen",
                       "nonsense",
                       "--token-file",
                       dir / "empty-token",
                       "--queues-file",
                       dir / "queues.json",
                       "--cluster",
                       "c1=/nonexistent/kubeconfig",
                       "--cluster",
                       "c2",
                       "--kubeconfig",
                       kKubeconfig,
                       "--cluster-name",
                       "c1",
                       "--policy",
                       "fifo",
                       "--tick-ms",
                       "0"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.out.find("config OK"), std::string::npos);
  for (const char* flag :
       {"run: --listen: ", "run: --token-file: ", "is empty", "run: --queues-file: ",
        "run: --cluster c1=/nonexistent/kubeconfig: ", "run: --cluster c2: expected NAME=",
        "run: --kubeconfig: cluster name c1 also given", "run: --policy: ", "run: --tick-ms: "}) {
    EXPECT_NE(o.out.find(flag), std::string::npos) << flag << " missing in:\n" << o.out;
  }
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 8) << o.out;
}

TEST(RunCheckConfig, UnreadableTokenFileIsAnError) {
  Outcome o = run_cli({"run", "--check-config", "--token-file", "/nonexistent/token"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.out.find("--token-file: "), std::string::npos) << o.out;
}

}  // namespace
}  // namespace gleaner::scheduler
