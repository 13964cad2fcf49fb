// The suppress status the daemon reports is BE's ceiling as its last full pass planned from
// and put in force: what the pass read, with the writes the executor made over it. It is
// not read back from the tree after the pass, so it is a function of the pass's inputs
// (`gleaner-agent plan` replays it from them, like the writes). A value someone else
// writes once the pass has read the tree shows in the next pass's status, the pass that
// plans from it.
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "test/agent/daemon/hermetic_daemon.h"
#include "test/support/net.h"

namespace gleaner::agent::test {
namespace {

class DaemonSuppressStatus : public DaemonHermetic {
 protected:
  // DaemonOptions::on_step runs after the pass has read the tree and planned, before its
  // writes: where "someone else" writes here.
  void adjust(DaemonOptions& options) override {
    options.on_step = [this](const StepObservation&) {
      if (outsider_) outsider_();
    };
  }
  [[nodiscard]] std::optional<double> be_cores() const {
    return gleaner::testing::metric_value(metrics(),
                                          R"(gleaner_be_suppress_cpu_cores{policy="cfsQuota"})");
  }
  void write_be_quota(const std::string& value) const {
    node_.cgroup_tree().write(
        "cpu/" + node_.layout().qos_dir(cgroup::KubeQos::kBestEffort) + "/cpu.cfs_quota_us",
        value + "\n");
  }
  std::function<void()> outsider_;  // called on the loop thread, during a pass
};

TEST_F(DaemonSuppressStatus, IsWhatThePassPutInForceNotAReadOfTheTreeAfterIt) {
  on_loop([this] { daemon_->start(); });  // primes the counters
  // Node 1000m, LS 600m, BE 300m: BE may have 600m (hermetic_daemon.h's node).
  node_.run_for_a_second(clock_, 1000, 600, 300);
  on_loop([this] { daemon_->tick(); });
  ASSERT_EQ(be_quota(), "60000");
  EXPECT_DOUBLE_EQ(be_cores().value_or(-1), 0.6);

  // The same load: the pass reads 60000 and has nothing to write. Someone else writes
  // 59000 after the pass read it; read back, the status would say 590m.
  outsider_ = [this] { write_be_quota("59000"); };
  node_.run_for_a_second(clock_, 1000, 600, 300);
  on_loop([this] { daemon_->tick(); });
  EXPECT_EQ(be_quota(), "59000");
  EXPECT_DOUBLE_EQ(be_cores().value_or(-1), 0.6);

  // The next pass reads 59000 and leaves it (1000 us is within the quota's dead band of a
  // hundredth of the node, docs/qos.md): 59000 is what it puts in force.
  outsider_ = nullptr;
  node_.run_for_a_second(clock_, 1000, 600, 300);
  on_loop([this] { daemon_->tick(); });
  EXPECT_EQ(be_quota(), "59000");
  EXPECT_DOUBLE_EQ(be_cores().value_or(-1), 0.59);
}

// Under the cpuset policy the status is BE's CPU list as the pass wrote it: one CPU of two
// while LS is busy, and inactive once BE has every CPU back.
class DaemonSuppressStatusCpuset : public DaemonSuppressStatus {
 protected:
  void adjust(DaemonOptions& options) override {
    config_.write("resource-threshold-config", R"({"clusterStrategy": {"enable": true,
        "cpuSuppressThresholdPercent": 65, "cpuSuppressPolicy": "cpuset",
        "cpuSuppressMinCPUs": 1}})");
    options.config_dir = config_.path();
  }
  gleaner::testing::TempDir config_;
};

TEST_F(DaemonSuppressStatusCpuset, IsTheCpuListWrittenAndLiftsWhenBeHasEveryCpu) {
  using gleaner::testing::metric_value;
  on_loop([this] { daemon_->start(); });
  // BE may have 600m: one CPU.
  node_.run_for_a_second(clock_, 1000, 600, 300);
  on_loop([this] { daemon_->tick(); });
  std::string text = metrics();
  EXPECT_EQ(metric_value(text, "gleaner_be_suppress_active"), 1.0) << text;
  EXPECT_EQ(metric_value(text, R"(gleaner_be_suppress_cpu_cores{policy="cpuset"})"), 1.0) << text;
  // LS falls to 100m: BE may have 1100m, two CPUs, the node's all: no longer suppressed.
  node_.run_for_a_second(clock_, 500, 100, 300);
  on_loop([this] { daemon_->tick(); });
  text = metrics();
  EXPECT_EQ(metric_value(text, "gleaner_be_suppress_active"), 0.0) << text;
  EXPECT_EQ(metric_value(text, R"(gleaner_be_suppress_cpu_cores{policy="cpuset"})"), std::nullopt)
      << text;
}

}  // namespace
}  // namespace gleaner::agent::test
