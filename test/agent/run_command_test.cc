// `gleaner-agent run` and `run --check-config` share one validation path: a flag outside
// its own range fails the parse, and validate() stops `run` before anything on the node is
// touched; both exit 2 naming the flag, with the same words. Only what the running daemon
// re-reads and survives (the config dir's keys, the pods file) is --check-config's alone.
//
// Each run goes in-process as main() runs the binary, on a fake node (cgroup v2 tree, proc
// root, pods and Node files) with --dry-run --no-ebpf --max-ticks 1: a configuration that
// got past the checks makes one dry pass and returns, so a missing check fails the
// expectation instead of starting a daemon.
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "agent/cli/commands.h"
#include "cgroup/layout.h"
#include "common/cli_main.h"
#include "test/agent/qos/qos_test_util.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent {
namespace {

using testing::TempDir;

struct AgentRunOutcome {
  int code = -1;
  std::string out;
  std::string err;
};

// As main() runs the binary: the exit code and what went to stdout and stderr.
AgentRunOutcome run_agent_main(std::vector<std::string> args) {
  CLI::App app("gleaner-agent");
  register_commands(app);
  set_exit_code(-1);
  args.insert(args.begin(), "gleaner-agent");
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  AgentRunOutcome o;
  o.code = gleaner::run_cli(app, static_cast<int>(argv.size()), argv.data());
  o.err = ::testing::internal::GetCapturedStderr();
  o.out = ::testing::internal::GetCapturedStdout();
  return o;
}

// A node good enough for the daemon to make one dry pass on.
class FakeAgentHost {
 public:
  FakeAgentHost() {
    qos::test::make_node_tree(cgroup_, cgroup::CgroupVersion::kV2,
                              cgroup::KubeletLayout(cgroup::CgroupDriver::kCgroupfs), {});
    proc_.write("stat",
                "cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 50 0 25 500 0 0 0 0 0 0\n"
                "cpu1 50 0 25 500 0 0 0 0 0 0\n");
    proc_.write("meminfo",
                "MemTotal:       16384000 kB\nMemFree:         8000000 kB\n"
                "MemAvailable:   12000000 kB\n");
    files_.write("pods.json", R"({"kind": "PodList", "apiVersion": "v1", "items": []})");
    files_.write("node.json", R"({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"capacity": {"cpu": "2", "memory": "16Gi"},
                   "allocatable": {"cpu": "2", "memory": "16Gi"}}})");
    files_.write("token", "t0ken\n");
    files_.write("not-a-ca.crt", "not a certificate\n");
    files_.write("bad-node.json", R"({"kind": "Node", "metadata": )");
    files_.mkdir("slo-config");
    files_.mkdir("empty");
  }

  // `run` on this node, each flag of `flags` replacing the default one: kBare gives the
  // flag alone, kLeftOut leaves it out, any other value (even "") follows the flag.
  static constexpr const char* kBare = "<bare>";
  static constexpr const char* kLeftOut = "<left out>";
  [[nodiscard]] std::vector<std::string> args(const std::map<std::string, std::string>& flags,
                                              bool check_config) const {
    std::map<std::string, std::string> all = {{"--node-name", "n1"},
                                              {"--cgroup-root", cgroup_.path()},
                                              {"--proc-root", proc_.path()},
                                              {"--resctrl-root", files_ / "empty"},
                                              {"--sys-root", files_ / "empty"},
                                              {"--pods-file", files_ / "pods.json"},
                                              {"--node-file", files_ / "node.json"},
                                              {"--config-dir", files_ / "slo-config"},
                                              {"--metrics-addr", ""},
                                              {"--state-dir", ""},
                                              {"--interval", "50"},
                                              {"--max-ticks", "1"},
                                              {"--dry-run", kBare},
                                              {"--no-ebpf", kBare}};
    for (const auto& [flag, value] : flags)
      all[flag] = value;
    std::vector<std::string> out = {"run"};
    for (const auto& [flag, value] : all) {
      if (value == kLeftOut) continue;
      out.push_back(flag);
      if (value != kBare) out.push_back(value);
    }
    if (check_config) out.emplace_back("--check-config");
    return out;
  }
  [[nodiscard]] std::string file(const std::string& name) const { return files_ / name; }

 private:
  TempDir cgroup_;
  TempDir proc_;
  TempDir files_;
};

// Each flag's own check, for `run` and --check-config alike.
TEST(AgentRunFlags, AValueOutsideTheFlagsRangeExitsTwoNamingTheFlag) {
  FakeAgentHost node;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--log-level", "loud"},      {"--log-format", "xml"},   {"--interval", "0"},
      {"--interval", "ten"},        {"--fast-interval", "-1"}, {"--kubelet-port", "0"},
      {"--kubelet-port", "65536"},  {"--on-stop", "never"},    {"--cgroup-version", "v3"},
      {"--cgroup-driver", "openrc"}};
  for (const auto& [flag, value] : cases) {
    for (bool check : {false, true}) {
      AgentRunOutcome o = run_agent_main(node.args({{flag, value}}, check));
      EXPECT_EQ(o.code, 2) << flag << " " << value << " check=" << check << ":\n" << o.err;
      EXPECT_NE(o.err.find(flag + ": "), std::string::npos)
          << flag << " " << value << " check=" << check << ":\n"
          << o.err;
    }
  }
  // --max-ticks -1 through --check-config only: a run that took it would never stop.
  AgentRunOutcome o = run_agent_main(node.args({{"--max-ticks", "-1"}}, true));
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("--max-ticks: \"-1\" must be 0 or more"), std::string::npos) << o.err;
}

// What only validate() finds (flags that conflict, the node's roots, the files Daemon::create
// reads once) stops `run` before the daemon is made, with the same lines --check-config
// prints for the same command line.
TEST(AgentRunValidate, RunAndCheckConfigRefuseTheSameWayNamingTheFlag) {
  FakeAgentHost node;
  const std::string kKubeconfig = GLEANER_SOURCE_DIR "/test/kube/testdata/kubeconfig.yaml";
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"--interference-hold", "5zz"}}, "--interference-hold: "},
      {{{"--interference-runq-p99-bound", "0"}}, "--interference-runq-p99-bound: "},
      {{{"--interference-psi-bound", "150"}}, "--interference-psi-bound "},
      {{{"--metrics-addr", ":x"}}, "--metrics-addr"},
      {{{"--cgroup-root", node.file("missing")}}, "--cgroup-root "},
      // Without --node-file: a daemon that got past the checks then fails at once
      // sampling the machine's own size instead of passing over an empty proc root.
      {{{"--proc-root", node.file("empty")}, {"--node-file", FakeAgentHost::kLeftOut}},
       "--proc-root "},
      {{{"--node-file", node.file("bad-node.json")}}, "--node-file "},
      {{{"--node-file", FakeAgentHost::kLeftOut}, {"--kubeconfig", "/nonexistent/kubeconfig"}},
       "--kubeconfig: "},
      {{{"--kubeconfig", kKubeconfig}}, "--node-file: not used with --kubeconfig"},
      {{{"--kubelet-host", "10.0.0.1"}}, "--kubelet-host: not used with --pods-file"},
      {{{"--token-file", node.file("token")}}, "--token-file: only used with --scheduler-url"},
      {{{"--scheduler-url", "ftp://scheduler/reports"}}, "--scheduler-url: "},
      {{{"--scheduler-url", "http://127.0.0.1:1/api/v1/reports"},
        {"--scheduler-ca-file", node.file("ca.crt")}},
       "--scheduler-ca-file: only used with an https://"},
      {{{"--scheduler-url", "https://127.0.0.1:1/api/v1/reports"},
        {"--scheduler-ca-file", node.file("not-a-ca.crt")}},
       "--scheduler-ca-file: " + node.file("not-a-ca.crt") + " holds no PEM certificate"},
      {{{"--kubelet-insecure-tls", FakeAgentHost::kBare},
        {"--kubelet-read-only", FakeAgentHost::kBare}},
       "--kubelet-insecure-tls: only used over HTTPS"}};
  for (const auto& [flags, message] : cases) {
    AgentRunOutcome run = run_agent_main(node.args(flags, false));
    AgentRunOutcome check = run_agent_main(node.args(flags, true));
    EXPECT_EQ(run.code, 2) << message << ":\n" << run.err;
    EXPECT_EQ(check.code, 2) << message << ":\n" << check.err;
    EXPECT_NE(run.err.find("gleaner-agent run: " + message), std::string::npos)
        << message << " missing in:\n"
        << run.err;
    EXPECT_EQ(run.err, check.err) << message;
    EXPECT_EQ(check.out.find("config OK"), std::string::npos) << message;
  }
}

// A good configuration passes both: "config OK", and one dry pass of the daemon. What the
// running daemon re-reads and survives being wrong (a config key it keeps the defaults of)
// stops --check-config but not run: a ConfigMap typo must not keep the agent, and the LS
// protection it brings, off the node.
TEST(AgentRunValidate, ACheckConfigInputErrorDoesNotStopRun) {
  FakeAgentHost node;
  AgentRunOutcome ok = run_agent_main(node.args({}, true));
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.out, "config OK\n");
  AgentRunOutcome ran = run_agent_main(node.args({}, false));
  EXPECT_EQ(ran.code, 0) << ran.err;

  TempDir bad_config;
  bad_config.write("colocation-config", R"({"enable": true, "cpuReclaimThresholdPercent": -150})");
  const std::map<std::string, std::string> flags = {{"--config-dir", bad_config.path()}};
  AgentRunOutcome check = run_agent_main(node.args(flags, true));
  EXPECT_EQ(check.code, 2) << check.err;
  EXPECT_NE(check.err.find("gleaner-agent run: --config-dir: "), std::string::npos) << check.err;
  AgentRunOutcome run = run_agent_main(node.args(flags, false));
  EXPECT_EQ(run.code, 0) << run.err;
}

// `plan`'s sampling interval is checked as the command line is read, too (its
// --cgroup-version is run_plan's, as the daemon's environment discovery checks it).
TEST(AgentPlanFlags, AMetricsIntervalOfZeroExitsTwoNamingTheFlag) {
  AgentRunOutcome o =
      run_agent_main({"plan", "--snapshot", "/nonexistent/snapshot.json", "--config-dir",
                      "/nonexistent", "--cgroup-root", "/nonexistent", "--metrics-interval", "0"});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("--metrics-interval: \"0\" must be above 0"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace gleaner::agent
