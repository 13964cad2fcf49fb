// `gleaner-agent plan` prints what the daemon writes. The daemon runs on real cgroups in
// each suppress mode and policy; on every pass, before its writes, the pass's inputs are
// written out as a snapshot file (a full tick: usage, the probe's readings, the agent's
// memory; a fast pass: its tick's file with the pass's sample and memory as `fastPasses`)
// and `plan` is run on it against the same trees: both must name the same writes (cgroup
// files, resctrl groups, system-config knobs), in the same order, and the same evictions;
// and where the test runs the passes itself, the suppress status the daemon reports once a
// tick is done (its metrics) must be the one `plan` prints for that tick.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/cli/plan_runner.h"
#include "agent/daemon/daemon.h"
#include "cgroup/cgroup_fs.h"
#include "common/file_io.h"
#include "test/agent/qos/qos_test_util.h"
#include "test/support/colocated_node.h"
#include "test/support/eventually.h"
#include "test/support/in_process_agent.h"
#include "test/support/net.h"
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
  // A ceiling is always in force: every fast pass plans BE's CPU.
  bool fast_plans = false;
  // resctrl QoS and system-config on, over a resctrl tree and /proc/sys/vm of the test's.
  bool resctrl_and_sysctl = false;
};

const Mode kModes[] = {
    {"cfsQuota-always", R"({"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":65,
       "cpuSuppressPolicy":"cfsQuota","memoryEvictThresholdPercent":99}})",
     false, "", true},
    {"cpuset-always", R"({"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":65,
       "cpuSuppressPolicy":"cpuset","cpuSuppressMinCPUs":1}})",
     false, "", true},
    {"cfsQuota-onInterference-ebpf", R"({"clusterStrategy":{"enable":true,
       "cpuSuppressThresholdPercent":65,"cpuSuppressPolicy":"cfsQuota",
       "cpuSuppressMode":"onInterference"}})",
     true, ""},
    {"cpuset-onInterference-psi", R"({"clusterStrategy":{"enable":true,
       "cpuSuppressThresholdPercent":65,"cpuSuppressPolicy":"cpuset","cpuSuppressMinCPUs":1,
       "cpuSuppressMode":"onInterference"}})",
     false, "0.5"},
    // The feedback controller (the shipped mode), its memory carried tick to tick in the
    // step record; and its fallback to the threshold formula on a node without the probe.
    {"cfsQuota-slo-ebpf", R"({"clusterStrategy":{"enable":true,"cpuSuppressPolicy":"cfsQuota",
       "cpuSuppressMode":"slo","cpuSloWaitTargetMicros":500}})",
     true, "", true},
    {"cpuset-slo-threshold-ceiling-ebpf", R"({"clusterStrategy":{"enable":true,
       "cpuSuppressPolicy":"cpuset","cpuSuppressMinCPUs":1,"cpuSuppressMode":"slo",
       "cpuSloThresholdCeiling":true}})",
     true, "", true},
    {"cfsQuota-slo-noprobe", R"({"clusterStrategy":{"enable":true,"cpuSuppressPolicy":"cfsQuota",
       "cpuSuppressMode":"slo"}})",
     false, "", true},
    {"cfsQuota-always-resctrl-sysctl", R"({"clusterStrategy":{"enable":true,
       "cpuSuppressThresholdPercent":65,"cpuSuppressPolicy":"cfsQuota"}})",
     false, "", true, true},
};

void PrintTo(const Mode& mode, std::ostream* os) {
  *os << mode.name;
}

std::string test_name(const ::testing::TestParamInfo<Mode>& info) {
  std::string name = info.param.name;
  std::erase(name, '-');
  return name;
}

// "<path> = <value>" lines, in order.
std::vector<std::string> lines_of(const std::vector<exec::KnobChange>& writes) {
  std::vector<std::string> out;
  for (const auto& w : writes)
    out.push_back(w.path + " = " + w.value);
  return out;
}

constexpr const char* kVmKnobs[] = {"min_free_kbytes", "watermark_scale_factor"};
constexpr const char* kVmFound[] = {"67584", "10"};

// A node in one mode, an agent's options over it and the comparison of every pass the
// agent reports with `plan` on the same inputs.
class ParityNode {
 public:
  explicit ParityNode(const Mode& mode)
      : mode_(mode),
        node_({.be_containers = R"([{"name":"c","resources":{
           "limits":{"kubernetes.io/batch-cpu":"1500","kubernetes.io/batch-memory":"512Mi"}}}])",
               .threshold_config = mode.threshold,
               .qos_config = mode.resctrl_and_sysctl ? kResctrlQos : kQos,
               .be_container_id =
                   "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}),
        fs_(node_.root(), node_.scratch().version()) {
    node_.scratch().spawn_busy(node_.be_container());
    node_.scratch().spawn_busy(node_.ls_pod());
    if (mode.resctrl_and_sysctl) {
      qos::test::make_resctrl(resctrl_);
      // procfs as the agent reads it, but for the vm knobs it may write, which are ours.
      for (const char* entry : {"stat", "meminfo", "cpuinfo", "pressure"})
        std::filesystem::create_symlink(std::string("/proc/") + entry, proc_ / entry);
      restore_vm_knobs();
      // A new file: write_file() writes files that exist only (as the kernel's knobs are).
      std::ofstream(node_.config_dir() + "/system-config")
          << R"({"clusterStrategy":{"minFreeKbytesFactor":100,"watermarkScaleFactor":150}})";
    }
  }

  [[nodiscard]] gleaner::testing::ColocatedNode& node() { return node_; }

  // `fast`: fast passes are compared too.
  DaemonOptions options(bool fast) {
    DaemonOptions opt = gleaner::testing::agent_options(node_);
    opt.interval = 200ms;
    opt.fast_interval = 50ms;
    opt.ebpf = mode_.ebpf;
    opt.interference_psi_bound = mode_.psi_bound;
    opt.resctrl_mount = false;
    opt.resctrl_root = mode_.resctrl_and_sysctl ? resctrl_.path() : files_ / "no-resctrl";
    if (mode_.resctrl_and_sysctl) opt.proc_root = proc_.path();
    opt.on_step = [this](const StepObservation& seen) {
      if (seen.cpu_measured) compare(seen, false);  // the priming pass: `plan` always has rates
    };
    if (fast) opt.on_fast_pass = [this](const StepObservation& seen) { compare(seen, true); };
    opt.metrics_addr = "127.0.0.1:0";  // the suppress status the daemon reports
    return opt;
  }

  // Runs ticks on the agent's thread until one is compared (the first has no CPU rates to
  // act on), then compares the suppress status the daemon reports for it, read from its
  // metrics once the tick is done, with the one `plan` printed for it. A fast pass leaves
  // the reported status as its tick set it. False if no tick was compared in time.
  [[nodiscard]] bool compared_tick(gleaner::testing::InProcessAgent& agent) {
    const int ticks = counts().ticks;
    const bool ticked = eventually(
        [&] {
          agent.run([&](Daemon& d) {
            restore_vm_knobs();  // each tick finds the vm knobs as the agent did
            d.tick();
          });
          return counts().ticks > ticks;
        },
        20s, 5ms);
    if (!ticked) return false;
    uint16_t port = 0;
    agent.run([&](Daemon& d) { port = d.metrics_port(); });
    const std::string text = gleaner::testing::http_get_loopback(port, "/metrics");
    using gleaner::testing::metric_value;
    Json daemon = {{"active", metric_value(text, "gleaner_be_suppress_active") == 1.0}};
    for (const char* policy : {"cfsQuota", "cpuset"}) {
      const std::string series =
          std::string("gleaner_be_suppress_cpu_cores{policy=\"") + policy + "\"}";
      if (auto cores = metric_value(text, series)) {
        daemon["policy"] = policy;
        daemon["beCpuLimitMillicores"] = std::llround(*cores * 1000);
      }
    }
    std::lock_guard lock(mu_);
    // The metrics name the policy and the limit while suppression is active only.
    // Null when `plan` failed: that tick's writes already stand as a mismatch.
    const bool printed = plan_suppress_.is_object();
    Json planned = {{"active", printed && plan_suppress_.value("active", false)}};
    if (planned["active"]) {
      planned["policy"] = plan_suppress_["policy"];
      planned["beCpuLimitMillicores"] = plan_suppress_["beCpuLimitMillicores"];
    }
    ++counts_.statuses;
    if (daemon["active"]) ++counts_.statuses_active;
    if (daemon != planned || !printed || !plan_suppress_.contains("policy")) {
      mismatches_.push_back("suppress status after " + plan_suppress_file_ + ": daemon " +
                            daemon.dump() + ", plan " + plan_suppress_.dump());
    }
    return true;
  }

  struct Counts {
    int ticks = 0;
    int fast_passes = 0;
    int fast_passes_writing = 0;
    int fast_passes_holding_clamps = 0;  // the record carries the executor's held clamps
    int ticks_writing_resctrl = 0;
    int ticks_writing_sysctl = 0;
    int statuses = 0;  // ticks whose suppress status was compared
    int statuses_active = 0;
  };
  Counts counts() {
    std::lock_guard lock(mu_);
    return counts_;
  }
  std::string mismatches() {
    std::lock_guard lock(mu_);
    if (mismatches_.empty()) return "";
    return std::to_string(mismatches_.size()) + " passes differ; first:\n" + mismatches_.front();
  }

  // Moves BE's CPU knob away from what the agent set (its quota, or its CPU list to the
  // whole of kubepods'), so the next pass that plans it writes it.
  void move_be_cpu() {
    const std::string& be = node_.be_qos();
    const bool cfs_quota = std::string(mode_.threshold).find("cfsQuota") != std::string::npos;
    if (cfs_quota) {
      auto quota = fs_.read_int(cgroup::Resource::kCpuQuota, be);
      // Unlimited, or above the BE pod's own quota (1.5 CPUs) as v1 requires of a parent.
      const bool v2 = fs_.version() == cgroup::CgroupVersion::kV2;
      const std::string value = quota && *quota == cgroup::kUnlimited
                                    ? (v2 ? "190000 100000" : "190000")
                                    : (v2 ? "max" : "-1");
      (void)write_file(*fs_.path_of(cgroup::Resource::kCpuQuota, be), value);
    } else {
      // The parent's CPUs: on v2 its cpuset.cpus is empty unless set, and the CPUs it has
      // are in cpuset.cpus.effective (an empty write would move nothing).
      const std::string parent = be.substr(0, be.rfind('/'));
      const auto parent_cpus = fs_.path_of(cgroup::Resource::kCpusetCpus, parent);
      const bool v2 = fs_.version() == cgroup::CgroupVersion::kV2;
      if (auto all = read_file(*parent_cpus + (v2 ? ".effective" : ""))) {
        (void)write_file(*fs_.path_of(cgroup::Resource::kCpusetCpus, be), std::string(*all));
      }
    }
  }
  [[nodiscard]] cgroup::CgroupVersion cgroup_version() const { return fs_.version(); }
  // Puts the vm knobs back to what the agent first found, so the next tick sets them again.
  void restore_vm_knobs() {
    for (size_t i = 0; i < std::size(kVmKnobs); ++i)
      proc_.write(std::string("sys/vm/") + kVmKnobs[i], std::string(kVmFound[i]) + "\n");
  }

 private:
  static constexpr const char* kQos = R"({"clusterStrategy":{"lsClass":{"memoryQOS":{
      "enable":true}},"beClass":{"cpuQOS":{"enable":true}}}})";
  static constexpr const char* kResctrlQos = R"({"clusterStrategy":{
      "lsClass":{"resctrlQOS":{"enable":true,"catRangeStartPercent":0,"catRangeEndPercent":100,
                               "mbaPercent":100}},
      "beClass":{"resctrlQOS":{"enable":true,"catRangeStartPercent":0,"catRangeEndPercent":30,
                               "mbaPercent":50}}}})";

  // Runs `plan` on the pass's snapshot file; records a mismatch with the daemon's writes.
  void compare(const StepObservation& seen, bool fast) {
    const int n = next_file_++;
    const std::string name = (fast ? "fast-" : "tick-") + std::to_string(n) + ".json";
    files_.write(name, seen.snapshot_file.dump());
    step::PlanOptions p;
    p.snapshot = files_ / name;
    p.config_dir = node_.config_dir();
    p.cgroup_root = node_.root();
    p.interference_psi_bound = mode_.psi_bound;
    if (mode_.resctrl_and_sysctl) {
      p.resctrl_root = resctrl_.path();
      p.proc_root = proc_.path();
    }
    std::ostringstream out;
    std::ostringstream err;
    const int code = step::run_plan(p, out, err);
    std::vector<std::string> planned;
    std::vector<std::string> evicted;
    Json suppress;
    if (auto printed = parse_json(out.str(), "plan output"); code == 0 && printed) {
      suppress = (*printed)["suppress"];
      const Json& writes = fast ? (*printed)["fastPasses"][0]["writes"] : (*printed)["writes"];
      for (const auto& w : writes)
        planned.push_back(w["path"].get<std::string>() + " = " + w["value"].get<std::string>());
      for (const auto& e : (*printed)["evictions"])
        evicted.push_back(e["pod"].get<std::string>());
    }
    std::lock_guard lock(mu_);
    if (!fast) {
      plan_suppress_ = suppress;
      plan_suppress_file_ = name;
    }
    Counts& c = counts_;
    ++(fast ? c.fast_passes : c.ticks);
    if (fast && !seen.writes.empty()) ++c.fast_passes_writing;
    if (fast && !seen.snapshot_file["fastPasses"][0].value("heldClamps", Json::array()).empty())
      ++c.fast_passes_holding_clamps;
    auto writes_kind = [&](exec::KnobKind kind) {
      return std::any_of(seen.writes.begin(), seen.writes.end(),
                         [kind](const auto& w) { return w.kind == kind; });
    };
    if (!fast && writes_kind(exec::KnobKind::kResctrl)) ++c.ticks_writing_resctrl;
    if (!fast && writes_kind(exec::KnobKind::kSysctl)) ++c.ticks_writing_sysctl;
    // A fast pass evicts nothing: `plan` prints the tick's evictions beside it.
    if (code == 0 && planned == lines_of(seen.writes) && (fast || evicted == seen.evictions))
      return;
    std::string diff =
        name + " (plan exit " + std::to_string(code) + ", " + err.str() + ")\n  daemon:";
    for (const auto& l : lines_of(seen.writes))
      diff += "\n    " + l;
    diff += "\n  plan:";
    for (const auto& l : planned)
      diff += "\n    " + l;
    diff += "\n  snapshot: " + seen.snapshot_file.dump();
    mismatches_.push_back(diff);
  }

  const Mode& mode_;
  gleaner::testing::ColocatedNode node_;
  cgroup::CgroupFs fs_;
  gleaner::testing::TempDir files_;
  gleaner::testing::TempDir resctrl_;
  gleaner::testing::TempDir proc_;
  int next_file_ = 0;  // the daemon's thread only
  std::mutex mu_;
  Counts counts_;
  std::vector<std::string> mismatches_;
  Json plan_suppress_;  // what `plan` printed for the last tick compared, and its file
  std::string plan_suppress_file_;
};

class PlanParityReal : public ::testing::TestWithParam<Mode> {};

// The daemon at its own pace: a full pass every 200 ms, the fast path every 50 ms and on
// the probe's wake-ups.
TEST_P(PlanParityReal, PlanPrintsWhatTheDaemonWritesOnEveryTick) {
  auto reason = gleaner::testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  ParityNode parity(GetParam());
  {
    gleaner::testing::InProcessAgent agent(parity.options(false));
    ASSERT_TRUE(eventually([&] { return parity.counts().ticks >= 6; }, 15s));
  }
  EXPECT_EQ(parity.mismatches(), "")
      << parity.counts().ticks << " ticks, " << parity.counts().fast_passes << " fast passes";
}

// The test runs each pass itself on the daemon's thread (no timers, no wake-ups): before a
// fast pass it moves BE's CPU knob away from the agent's value, and before a tick the vm
// knobs, so that the passes compared have writes to compare, whatever the load. In the
// cfsQuota modes some fast passes clamp the BE container's quota under BE's ceiling or give
// it back as the ceiling rises: `plan` makes the same writes only from the executor's held
// clamps in the record.
TEST_P(PlanParityReal, PlanPrintsWhatEachFastPassAndTickWrites) {
  auto reason = gleaner::testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  const Mode& mode = GetParam();
  if (!mode.fast_plans) GTEST_SKIP() << "no ceiling always in force: fast passes may plan nothing";
  ParityNode parity(mode);
  DaemonOptions opt = parity.options(true);
  opt.ebpf_wakeups = false;
  {
    gleaner::testing::InProcessAgent agent(opt, "", {.own_timers = false});
    for (int round = 0; round < 3; ++round) {
      ASSERT_TRUE(parity.compared_tick(agent));
      // Two fast passes that write, in at most 10: a pass whose new target is the value
      // moved in (BE's ceiling changed with the machine's load) writes nothing.
      const int writing = parity.counts().fast_passes_writing;
      for (int pass = 0; pass < 10 && parity.counts().fast_passes_writing - writing < 2; ++pass) {
        const int fast = parity.counts().fast_passes;
        agent.run([&](Daemon&) { parity.move_be_cpu(); });
        ASSERT_TRUE(eventually(
            [&] {
              agent.run([](Daemon& d) { d.fast_tick(); });  // until the CPU counters moved
              return parity.counts().fast_passes > fast;
            },
            20s, 5ms));
      }
    }
  }
  const auto counts = parity.counts();
  EXPECT_EQ(parity.mismatches(), "");
  EXPECT_EQ(counts.statuses, 3);
  EXPECT_GE(counts.fast_passes_writing, 4) << counts.fast_passes << " fast passes";
  // Where the threshold formula sets BE's quota (no probe to steer by), BE's ceiling (65% of
  // the node less LS's busy CPU) stays under the BE container's batch quota of 1.5 CPUs:
  // the container's quota is held clamped throughout. Only on v1: its kernel refuses a
  // child's cfs_quota_us above its parent's (the clamp's reason); v2's cpu.max takes it.
  if (std::string(mode.threshold).find("cfsQuota") != std::string::npos && !mode.ebpf &&
      parity.cgroup_version() == cgroup::CgroupVersion::kV1) {
    EXPECT_GE(counts.fast_passes_holding_clamps, 1) << counts.fast_passes << " fast passes";
  }
  if (mode.resctrl_and_sysctl) {
    // Every tick compared wrote both (3 or more ticks: none compared fails too).
    EXPECT_GE(counts.ticks, 3);
    EXPECT_EQ(counts.ticks_writing_resctrl, counts.ticks) << counts.ticks << " ticks";
    EXPECT_EQ(counts.ticks_writing_sysctl, counts.ticks) << counts.ticks << " ticks";
  }
}

// In every mode, the suppress modes whose fast passes may plan nothing included: before each
// tick the test moves BE's CPU knob, so that a tick whose ceiling applies writes it and the
// status the daemon reports comes from its write (a tick that lifts the ceiling may find it
// held, or not). Each tick's writes and status must be `plan`'s.
TEST_P(PlanParityReal, PlanPrintsTheSuppressStatusEachTickLeavesInForce) {
  auto reason = gleaner::testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  ParityNode parity(GetParam());
  DaemonOptions opt = parity.options(false);
  opt.ebpf_wakeups = false;
  {
    gleaner::testing::InProcessAgent agent(opt, "", {.own_timers = false});
    for (int round = 0; round < 4; ++round) {
      agent.run([&](Daemon&) { parity.move_be_cpu(); });
      ASSERT_TRUE(parity.compared_tick(agent));
    }
  }
  const auto counts = parity.counts();
  EXPECT_EQ(parity.mismatches(), "");
  EXPECT_EQ(counts.statuses, 4);
  // A quota always in force is finite whatever the load (the threshold formula's share of
  // the node, or the feedback controller's allowance): the status compared is active. (A
  // CPU list may cover both CPUs of this node when LS is idle, as under a busy CI box.)
  const bool cfs_quota = std::string(GetParam().threshold).find("cfsQuota") != std::string::npos;
  if (GetParam().fast_plans && cfs_quota) {
    EXPECT_GE(counts.statuses_active, 1) << counts.statuses << " ticks";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PlanParityReal, ::testing::ValuesIn(kModes), test_name);

}  // namespace
}  // namespace gleaner::agent
