// `gleaner-agent plan` prints what the daemon writes. The daemon runs on real cgroups in
// each suppress mode and policy; on every tick, before its writes, the tick's inputs (usage,
// the probe's readings, the agent's memory) are written out as a snapshot file and `plan`
// is run on it against the same tree: both must name the same writes, in the same order,
// and the same evictions.
#include <chrono>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/cli/plan_runner.h"
#include "agent/daemon/daemon.h"
#include "common/file_io.h"
#include "test/support/colocated_node.h"
#include "test/support/eventually.h"
#include "test/support/in_process_agent.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent {
namespace {
using gleaner::testing::eventually;
using namespace std::chrono_literals;

struct Mode {
  const char* name;
  const char* threshold;  // resource-threshold-config
  bool ebpf;
  const char* psi_bound;  // --interference-psi-bound
};

const Mode kModes[] = {
    {"cfsQuota-always", R"({"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":65,
       "cpuSuppressPolicy":"cfsQuota","memoryEvictThresholdPercent":99}})",
     false, ""},
    {"cpuset-always", R"({"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":65,
       "cpuSuppressPolicy":"cpuset","cpuSuppressMinCPUs":1}})",
     false, ""},
    {"cfsQuota-onInterference-ebpf", R"({"clusterStrategy":{"enable":true,
       "cpuSuppressThresholdPercent":65,"cpuSuppressPolicy":"cfsQuota",
       "cpuSuppressMode":"onInterference"}})",
     true, ""},
    {"cpuset-onInterference-psi", R"({"clusterStrategy":{"enable":true,
       "cpuSuppressThresholdPercent":65,"cpuSuppressPolicy":"cpuset","cpuSuppressMinCPUs":1,
       "cpuSuppressMode":"onInterference"}})",
     false, "0.5"},
    // The feedback controller, its memory carried tick to tick in the step record; and its
    // fallback to the threshold formula on a node without the run-queue probe.
    {"cfsQuota-slo-ebpf", R"({"clusterStrategy":{"enable":true,"cpuSuppressPolicy":"cfsQuota",
       "cpuSuppressMode":"slo","cpuSloWaitTargetMicros":500}})",
     true, ""},
    {"cpuset-slo-threshold-ceiling-ebpf", R"({"clusterStrategy":{"enable":true,
       "cpuSuppressPolicy":"cpuset","cpuSuppressMinCPUs":1,"cpuSuppressMode":"slo",
       "cpuSloThresholdCeiling":true}})",
     true, ""},
    {"cfsQuota-slo-noprobe", R"({"clusterStrategy":{"enable":true,"cpuSuppressPolicy":"cfsQuota",
       "cpuSuppressMode":"slo"}})",
     false, ""},
};

void PrintTo(const Mode& mode, std::ostream* os) {
  *os << mode.name;
}

// "<path> = <value>" lines, in order.
std::vector<std::string> lines_of(const std::vector<exec::KnobChange>& writes) {
  std::vector<std::string> out;
  for (const auto& w : writes)
    out.push_back(w.path + " = " + w.value);
  return out;
}

class PlanParityReal : public ::testing::TestWithParam<Mode> {};

TEST_P(PlanParityReal, PlanPrintsWhatTheDaemonWritesOnEveryTick) {
  auto reason = gleaner::testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  const Mode& mode = GetParam();
  gleaner::testing::ColocatedNode node(
      {.be_containers = R"([{"name":"c","resources":{
           "limits":{"kubernetes.io/batch-cpu":"1500","kubernetes.io/batch-memory":"512Mi"}}}])",
       .threshold_config = mode.threshold,
       .qos_config = R"({"clusterStrategy":{"lsClass":{"memoryQOS":{"enable":true}},
           "beClass":{"cpuQOS":{"enable":true}}}})",
       .be_container_id = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"});
  node.scratch().spawn_busy(node.be_container());
  node.scratch().spawn_busy(node.ls_pod());
  gleaner::testing::TempDir files;

  std::mutex mu;
  int compared = 0;
  std::vector<std::string> mismatches;
  DaemonOptions opt = gleaner::testing::agent_options(node);
  opt.interval = 200ms;
  opt.fast_interval = 50ms;
  opt.ebpf = mode.ebpf;
  opt.interference_psi_bound = mode.psi_bound;
  opt.on_step = [&](const StepObservation& seen) {
    if (!seen.cpu_measured) return;  // the priming pass: `plan` always has rates
    const int n = compared;
    const std::string snapshot = files / ("tick-" + std::to_string(n) + ".json");
    files.write("tick-" + std::to_string(n) + ".json", seen.snapshot_file.dump());
    step::PlanOptions p;
    p.snapshot = snapshot;
    p.config_dir = node.config_dir();
    p.cgroup_root = node.root();
    p.interference_psi_bound = mode.psi_bound;
    std::ostringstream out;
    std::ostringstream err;
    const int code = step::run_plan(p, out, err);
    std::vector<std::string> planned;
    std::vector<std::string> evicted;
    if (auto printed = parse_json(out.str(), "plan output"); code == 0 && printed) {
      for (const auto& w : (*printed)["writes"])
        planned.push_back(w["path"].get<std::string>() + " = " + w["value"].get<std::string>());
      for (const auto& e : (*printed)["evictions"])
        evicted.push_back(e["pod"].get<std::string>());
    }
    std::lock_guard lock(mu);
    ++compared;
    if (code != 0 || planned != lines_of(seen.writes) || evicted != seen.evictions) {
      std::string diff = "tick " + std::to_string(n) + " (plan exit " + std::to_string(code) +
                         ", " + err.str() + ")\n  daemon:";
      for (const auto& l : lines_of(seen.writes))
        diff += "\n    " + l;
      diff += "\n  plan:";
      for (const auto& l : planned)
        diff += "\n    " + l;
      diff += "\n  snapshot: " + seen.snapshot_file.dump();
      mismatches.push_back(diff);
    }
  };
  {
    gleaner::testing::InProcessAgent agent(opt);
    ASSERT_TRUE(eventually(
        [&] {
          std::lock_guard lock(mu);
          return compared >= 6;
        },
        15s));
  }
  std::lock_guard lock(mu);
  EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " of " << compared
                                  << " ticks differ; first:\n"
                                  << (mismatches.empty() ? "" : mismatches.front());
}

INSTANTIATE_TEST_SUITE_P(Modes, PlanParityReal, ::testing::ValuesIn(kModes),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           std::string name = info.param.name;
                           std::erase(name, '-');
                           return name;
                         });

}  // namespace
}  // namespace gleaner::agent
