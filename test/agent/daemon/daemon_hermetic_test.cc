// The daemon end to end on a hermetic node (hermetic_daemon.h): its BE quota, report,
// metrics, probe settings, and the tree as found once it stops.
#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test/agent/daemon/hermetic_daemon.h"
#include "test/support/eventually.h"
#include "test/support/net.h"

namespace gleaner::agent::test {
namespace {

using namespace std::chrono_literals;
using cgroup::KubeQos;

// The daemon's pass on the node above, as docs/qos.md's formula and docs/metrics.md's
// names have it; the fast passes, which the fast loop's timer would run every 50 ms, are run
// here between the full passes.
TEST_F(DaemonHermetic, SuppressesBeReportsAndRestoresTheTreeOnStop) {
  const auto found = tree_of(node_.cgroup_tree());
  ASSERT_EQ(be_quota(), "-1");
  const std::string ls_dir = node_.cpu_dir(node_.layout().pod_dir(KubeQos::kBurstable, "ls-uid"));
  probe_->set_wait(ls_dir, 2.5e6, 1.5e6);

  // The first pass only primes the counters: nothing is measured, nothing written.
  on_loop([this] { daemon_->start(); });
  EXPECT_EQ(be_quota(), "-1");
  EXPECT_EQ(probe_->tracked(), std::set<std::string>{ls_dir});
  EXPECT_EQ(probe_->be_cgroup(), node_.cpu_dir(node_.layout().qos_dir(KubeQos::kBestEffort)));

  // Node 1000m busy, LS 600m, BE 300m: system 100m. BE may have 2000m x 65% - 600m - 100m
  // = 600m, a quota of 60 ms per 100 ms period.
  node_.run_for_a_second(clock_, 1000, 600, 300);
  on_loop([this] { daemon_->tick(); });
  EXPECT_EQ(be_quota(), "60000");

  std::optional<reporter::NodeReport> report;
  EXPECT_TRUE(scheduler_.wait_for(
      [&](const auto& requests) {
        report = last_report(requests);
        return report && report->suppress.active;
      },
      30s))
      << scheduler_.requests().size() << " reports";
  if (report) {
    EXPECT_EQ(report->node, "node-h");
    EXPECT_EQ(report->suppress.policy, "cfsQuota");
    EXPECT_EQ(report->suppress.be_cpu_limit_millicores, 600);
    // Stamped by the daemon's clock, not the machine's.
    EXPECT_EQ(report->timestamp_unix_ms, std::chrono::duration_cast<std::chrono::milliseconds>(
                                             clock_.wall_now().time_since_epoch())
                                             .count());
    ASSERT_EQ(report->interference.size(), 1U);
    EXPECT_EQ(report->interference[0].pod.name, "api-0");
    EXPECT_EQ(report->interference[0].runqueue_latency_p99_us, 2500);
  }

  std::string text = metrics();
  using gleaner::testing::metric_value;
  EXPECT_EQ(metric_value(text, "gleaner_ebpf_probe_loaded"), 1.0) << text;
  EXPECT_EQ(metric_value(text, "gleaner_ebpf_be_attribution"), 1.0) << text;
  EXPECT_EQ(metric_value(text, "gleaner_be_suppress_active"), 1.0) << text;
  EXPECT_EQ(metric_value(text, R"(gleaner_be_suppress_cpu_cores{policy="cfsQuota"})"), 0.6) << text;
  EXPECT_EQ(metric_value(text, R"(gleaner_cgroup_writes_total{resource="cpu_quota"})"), 1.0)
      << text;
  EXPECT_EQ(pod_metric(text, "gleaner_pod_runqueue_latency_p99_seconds", "api-0"), 0.0025) << text;

  // The fast path arms the probe's bounds (Daemon::fast_tick, update_wake_bounds): its first
  // pass primes its counters, the next one plans from 100 ms of them. The same load keeps
  // the quota; an LS wait beyond 5 ms now wakes the fast path.
  on_loop([this] { daemon_->fast_tick("timer"); });
  node_.run_for(clock_, 100ms, 1000, 600, 300);
  on_loop([this] { daemon_->fast_tick("timer"); });
  EXPECT_EQ(probe_->wake().runq_wait_bound, 5ms);
  EXPECT_EQ(be_quota(), "60000");

  // An LS task waits 8 ms: BE's ceiling takes one interference step (a tenth of the node,
  // 20 ms of quota) on the wake-up's fast pass, before the next full pass.
  node_.run_for(clock_, 20ms, 1000, 600, 300);
  bpf::Wakeup wait;
  wait.kind = bpf::WakeKind::kRunqWait;
  wait.value = 8ms;
  wait.dir = ls_dir;
  probe_->signal(wait);
  ASSERT_TRUE(gleaner::testing::eventually([&] { return probe_->drains() > 0; }, 30s));
  on_loop([] {});  // the wake-up's handler, running when the drain was seen, has finished
  EXPECT_EQ(be_quota(), "40000");

  // The rest of the second at the same load: the full pass keeps the ceiling (the wait's
  // hold of 30 s has not passed), though the formula still gives BE 600m.
  node_.run_for(clock_, 880ms, 1000, 600, 300);
  on_loop([this] { daemon_->tick(); });
  EXPECT_EQ(be_quota(), "40000");

  // LS rises to 900m: BE's share falls to 300m, under the ceiling.
  node_.run_for_a_second(clock_, 1300, 900, 300);
  on_loop([this] { daemon_->tick(); });
  EXPECT_EQ(be_quota(), "30000");
  text = metrics();
  EXPECT_EQ(metric_value(text, R"(gleaner_agent_ebpf_wakeups_total{signal="runqueue_wait"})"), 1.0)
      << text;
  EXPECT_EQ(metric_value(text, R"(gleaner_agent_fast_passes_total{trigger="wakeup"})"), 1.0)
      << text;

  // Stopping puts every value the agent changed back as it found it.
  stop();
  EXPECT_EQ(tree_of(node_.cgroup_tree()), found);
}

// Kubelet makes an LS pod's cgroup anew at the same path (another id, issue #61): the next
// full pass names it to the probe again, so its waits are seen again instead of reading as
// none while BE grows (the probe, like the kernel, knows a cgroup by its id).
TEST_F(DaemonHermetic, AnLsCgroupMadeAnewIsNamedAgainAndItsWaitsAreSeen) {
  const std::string ls_dir = node_.cpu_dir(node_.layout().pod_dir(KubeQos::kBurstable, "ls-uid"));
  probe_->set_wait(ls_dir, 2.5e6, 1.5e6);
  on_loop([this] { daemon_->start(); });
  node_.run_for_a_second(clock_, 1000, 600, 300);
  on_loop([this] { daemon_->tick(); });
  ASSERT_EQ(pod_metric(metrics(), "gleaner_pod_runqueue_latency_p99_seconds", "api-0"), 0.0025);

  // Made anew, on the loop thread as kubelet would between two passes: the new directory
  // exists beside the old one before that goes, so it cannot get the old inode number back.
  namespace fs = std::filesystem;
  struct stat before {};
  ASSERT_EQ(::stat(ls_dir.c_str(), &before), 0);
  const int samples = probe_->samples();
  on_loop([&] {
    fs::copy(ls_dir, ls_dir + ".new", fs::copy_options::recursive);
    fs::remove_all(ls_dir);
    fs::rename(ls_dir + ".new", ls_dir);
  });
  struct stat after {};
  ASSERT_EQ(::stat(ls_dir.c_str(), &after), 0);
  ASSERT_NE(after.st_ino, before.st_ino);
  // The QoS directory's watch sees it and runs a pass at once (Daemon::Impl::
  // wait_for_cgroup_change); the counters move only once that pass is over.
  ASSERT_TRUE(gleaner::testing::eventually([&] { return probe_->samples() > samples; }, 30s));
  on_loop([] {});

  node_.run_for_a_second(clock_, 1000, 600, 300);
  on_loop([this] { daemon_->tick(); });
  const std::string text = metrics();
  EXPECT_EQ(pod_metric(text, "gleaner_pod_runqueue_latency_p99_seconds", "api-0"), 0.0025) << text;
  EXPECT_EQ(probe_->tracked(), std::set<std::string>{ls_dir});
}

// A cgroup the probe cannot track (more distinct levels than its kernel side reads) left
// its pod unseen with nothing said: the refusal is now counted each pass, while a directory
// not there yet (kubelet has not made it) is the normal retry and is not.
TEST_F(DaemonHermetic, AnLsPodTheProbeRefusesIsCountedAndADirectoryNotThereYetIsNot) {
  const auto failures = [this] {
    return gleaner::testing::metric_value(metrics(), "gleaner_agent_ebpf_track_failures_total")
        .value_or(-1);
  };
  const std::string ls_dir = node_.cpu_dir(node_.layout().pod_dir(KubeQos::kBurstable, "ls-uid"));
  probe_->refuse(ls_dir, ErrorCode::kUnavailable);
  on_loop([this] { daemon_->start(); });
  node_.run_for_a_second(clock_, 1000, 600, 300);
  on_loop([this] { daemon_->tick(); });
  const double after_one = failures();
  EXPECT_GE(after_one, 1.0);
  EXPECT_TRUE(probe_->tracked().empty());

  node_.run_for_a_second(clock_, 1000, 600, 300);
  on_loop([this] { daemon_->tick(); });
  EXPECT_GT(failures(), after_one);

  probe_->refuse(ls_dir, ErrorCode::kNotFound);
  const double before = failures();
  node_.run_for_a_second(clock_, 1000, 600, 300);
  on_loop([this] { daemon_->tick(); });
  EXPECT_EQ(failures(), before);
}

}  // namespace
}  // namespace gleaner::agent::test
