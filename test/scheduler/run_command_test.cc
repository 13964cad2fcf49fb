// `gleaner-scheduler run --check-config`: "config OK" and exit 0 for a good configuration,
// every error and exit 2 (a configuration error) otherwise, without starting the server.
// `run` itself goes the same way: a flag outside its own range fails the parse, and
// validate() stops it before anything starts; both exit 2 naming the flag.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/cli_main.h"
#include "scheduler/cli/commands.h"
#include "scheduler/cli/run_options.h"
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
  Outcome o = run_cli({"run", "--check-config", "--listen", "nonsense", "--token-file",
                       dir / "empty-token", "--queues-file", dir / "queues.json", "--cluster",
                       "c1=/nonexistent/kubeconfig", "--cluster", "c2", "--kubeconfig", kKubeconfig,
                       "--cluster-name", "c1", "--degrade-after", "30"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.out.find("config OK"), std::string::npos);
  for (const char* flag :
       {"run: --listen: ", "run: --token-file: ", "is empty", "run: --queues-file: ",
        "run: --cluster c1=/nonexistent/kubeconfig: ", "run: --cluster c2: expected NAME=",
        "run: --kubeconfig: cluster name c1 also given", "run: --degrade-after: "}) {
    EXPECT_NE(o.out.find(flag), std::string::npos) << flag << " missing in:\n" << o.out;
  }
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 7) << o.out;
}

TEST(RunCheckConfig, UnreadableTokenFileIsAnError) {
  Outcome o = run_cli({"run", "--check-config", "--token-file", "/nonexistent/token"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.out.find("--token-file: "), std::string::npos) << o.out;
}

// As main() runs the binary: the exit code and what went to stderr.
Outcome run_main(std::vector<std::string> args) {
  CLI::App app("gleaner-scheduler");
  register_commands(app);
  set_exit_code(-1);
  args.insert(args.begin(), "gleaner-scheduler");
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  Outcome o;
  o.code = gleaner::run_cli(app, static_cast<int>(argv.size()), argv.data());
  o.out = ::testing::internal::GetCapturedStderr();
  return o;
}

// Each flag's own check, for `run` and --check-config alike. "--listen nonsense" makes a
// run that got past the flags fail at once (exit 1) rather than serve.
TEST(RunFlags, AValueOutsideTheFlagsRangeExitsTwoNamingTheFlag) {
  const std::vector<std::vector<std::string>> cases = {{"--tick-ms", "0"},
                                                       {"--stale-after", "0"},
                                                       {"--qps", "-1"},
                                                       {"--burst", "0"},
                                                       {"--degrade-after", "-5"},
                                                       {"--max-report-bytes", "0"},
                                                       {"--reservation-ttl", "0"},
                                                       {"--driver-start-timeout", "0"},
                                                       {"--update-time-threshold", "0"},
                                                       {"--policy", "fifo"},
                                                       {"--log-level", "loud"},
                                                       {"--log-format", "xml"},
                                                       {"--report-auth", "maybe"},
                                                       {"--hub-policy-group", "policy.example.com"},
                                                       {"--tick-ms", "ten"},
                                                       {"--reclaim-hold", "-1"},
                                                       {"--reclaim-hold", "5m"}};
  for (const auto& c : cases) {
    for (bool check : {false, true}) {
      std::vector<std::string> args = {"run", "--listen", "nonsense", c[0], c[1]};
      if (check) args.emplace_back("--check-config");
      Outcome o = run_main(args);
      EXPECT_EQ(o.code, 2) << c[0] << " " << c[1] << ":\n" << o.out;
      EXPECT_NE(o.out.find(c[0] + ": "), std::string::npos) << c[0] << " " << c[1] << ":\n"
                                                            << o.out;
    }
  }
}

TEST(RunFlags, ValuesInsideTheirRangesPass) {
  Outcome o = run_cli({"run",
                       "--check-config",
                       "--tick-ms",
                       "1",
                       "--stale-after",
                       "1",
                       "--degrade-after",
                       "1",
                       "--qps",
                       "0",
                       "--burst",
                       "1",
                       "--policy",
                       "blocking",
                       "--log-level",
                       "debug",
                       "--log-format",
                       "json",
                       "--hub-policy-group",
                       "policy.one.alibabacloud.com"});
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(o.out, "config OK\n");
}

// What only validate() finds (flags that conflict, files they name) stops `run` too, before
// it binds a port: every error on stderr, exit 2.
TEST(RunValidate, RunStopsAtEveryErrorCheckConfigWouldReport) {
  gleaner::testing::TempDir dir;
  dir.write("empty-token", "\n");
  Outcome o =
      run_main({"run", "--listen", "nonsense", "--stale-after", "60", "--degrade-after", "30",
                "--token-file", dir / "empty-token", "--quota-tree-cluster", "nowhere"});
  EXPECT_EQ(o.code, 2) << o.out;
  for (const char* flag : {"run: --listen: ", "run: --degrade-after: must not be below",
                           "run: --token-file: ", "run: --quota-tree-cluster: no cluster named"}) {
    EXPECT_NE(o.out.find(flag), std::string::npos) << flag << " missing in:\n" << o.out;
  }
}

// The policy run starts with, as the flags parse into RunOptions (which were given).
Result<LiveConfig> parsed_config(std::vector<std::string> args) {
  CLI::App app;
  RunOptions o;
  add_run_flags(app, o);
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  app.parse(args);
  return live_config(o);
}

// --policy-file is a scenario's "policy" object, read by simulate's parser: its gpuBinPack
// is the live scheduler's, and a policy flag given on the command line (even at its
// default value) overrides the file's field; one not given leaves it.
TEST(RunPolicyFile, TheFilesPolicyIsRunsWithTheFlagsGivenOverIt) {
  gleaner::testing::TempDir dir;
  dir.write("policy.json", R"({"queueing": "blocking", "reservationTtlSeconds": 120,
                              "gpuBinPack": {"cpu": 1, "memory": 2, "nvidia.com/gpu": 10}})");
  auto c = parsed_config({"--policy-file", dir / "policy.json"});
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->policy.scores.gpu_bin_pack.has_value());
  EXPECT_EQ(*c->policy.scores.gpu_bin_pack, (ResourceWeights{1, 2, 10}));
  EXPECT_EQ(c->policy.queueing, QueueingPolicy::kBlocking);
  EXPECT_EQ(c->policy.reservation_ttl_seconds, 120);
  EXPECT_EQ(c->policy.driver_start_timeout_seconds, 300);  // the default
  auto flags = parsed_config({"--policy-file", dir / "policy.json", "--policy", "nonblocking",
                              "--reservation-ttl", "600", "--driver-start-timeout", "30"});
  ASSERT_TRUE(flags) << flags.error().message;
  EXPECT_EQ(flags->policy.queueing, QueueingPolicy::kNonBlocking);
  EXPECT_EQ(flags->policy.reservation_ttl_seconds, 600);
  EXPECT_EQ(flags->policy.driver_start_timeout_seconds, 30);
  EXPECT_TRUE(flags->policy.scores.gpu_bin_pack.has_value());
  // Without a file the flags' defaults hold, and no bin-pack.
  auto none = parsed_config({});
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(none->policy.queueing, QueueingPolicy::kNonBlocking);
  EXPECT_EQ(none->policy.reservation_ttl_seconds, 600);
  EXPECT_FALSE(none->policy.scores.gpu_bin_pack.has_value());
}

// The queues file's policy is not shadowed by flags that were not given.
TEST(RunPolicyFile, TheQueuesFilesPolicyHoldsUnlessAFlagIsGiven) {
  gleaner::testing::TempDir dir;
  dir.write("queues.json", R"({"queues": [{"name": "team-a"}],
                              "policy": {"queueing": "blocking", "driverStartTimeoutSeconds": 90,
                                         "gpuBinPack": {"nvidia.com/gpu": 5}}})");
  auto c = parsed_config({"--queues-file", dir / "queues.json"});
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->queues.size(), 1U);
  EXPECT_EQ(c->policy.queueing, QueueingPolicy::kBlocking);
  EXPECT_EQ(c->policy.driver_start_timeout_seconds, 90);
  EXPECT_EQ(c->policy.scores.gpu_bin_pack, (ResourceWeights{0, 0, 5}));
  auto flag = parsed_config({"--queues-file", dir / "queues.json", "--policy", "nonblocking"});
  ASSERT_TRUE(flag) << flag.error().message;
  EXPECT_EQ(flag->policy.queueing, QueueingPolicy::kNonBlocking);
}

// A bad policy file stops run and --check-config alike: exit 2, the flag, the file and the
// field named.
TEST(RunPolicyFile, ABadPolicyFileExitsTwoNamingTheField) {
  gleaner::testing::TempDir dir;
  dir.write("zero-gpu.json", R"({"gpuBinPack": {"cpu": 1, "nvidia.com/gpu": 0}})");
  dir.write("typo.json", R"({"gpuBinpack": {"nvidia.com/gpu": 10}})");
  dir.write("until.json", R"({"untilSeconds": 60})");
  dir.write("array.json", R"([])");
  dir.write("queues.json", R"({"queues": [], "policy": {"queueing": "blocking"}})");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--policy-file", dir / "zero-gpu.json"},
       "--policy-file: " + dir / "zero-gpu.json" +
           ": policy.gpuBinPack.nvidia.com/gpu: expected a weight >= 1"},
      {{"--policy-file", dir / "typo.json"}, "policy.gpuBinpack"},
      {{"--policy-file", dir / "until.json"}, "policy.untilSeconds"},
      {{"--policy-file", dir / "array.json"}, "expected an object"},
      {{"--policy-file", dir / "missing.json"}, "--policy-file: "},
      {{"--policy-file", dir / "until.json", "--queues-file", dir / "queues.json"},
       "has a policy too"}};
  for (const auto& [flags, message] : cases) {
    for (bool check : {false, true}) {
      std::vector<std::string> args = {"run", "--listen", "127.0.0.1:0"};
      args.insert(args.end(), flags.begin(), flags.end());
      if (check) args.emplace_back("--check-config");
      Outcome o = check ? run_cli(args) : run_main(args);
      EXPECT_EQ(o.code, 2) << message << ":\n" << o.out;
      EXPECT_NE(o.out.find(message), std::string::npos) << message << " missing in:\n" << o.out;
    }
  }
}

TEST(RunValidate, FindsFlagsThatConflict) {
  RunOptions o;
  o.listen = "nonsense";
  o.stale_after = 60;
  o.degrade_after = 30;
  o.webhook.listen = ":9443";
  o.webhook.cluster = "hub";
  o.hub = "hub=" + kKubeconfig;
  o.clusters = {"m1=" + kKubeconfig};
  o.webhook.cert_dir = "/nonexistent";
  const auto errors = validate(o);
  auto has = [&](const std::string& prefix) {
    return std::any_of(errors.begin(), errors.end(),
                       [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  };
  EXPECT_TRUE(has("--listen: "));
  EXPECT_TRUE(has("--degrade-after: "));
  // The hub is not where pods are made: the webhook does not serve it.
  EXPECT_TRUE(has("--webhook-cluster: no member cluster named hub"));
  o.webhook.cluster = "m1";
  const auto member = validate(o);
  EXPECT_FALSE(std::any_of(member.begin(), member.end(), [](const std::string& e) {
    return e.rfind("--webhook-cluster", 0) == 0;
  }));
}

}  // namespace
}  // namespace gleaner::scheduler
