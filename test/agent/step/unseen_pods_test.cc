// Which LS pods run unseen by the eBPF probe: judged from the cgroups' own CPU figure against
// the probe's, for the pods the probe watches only, and only when the readings carry the
// probe's figures.
#include "agent/step/unseen_pods.h"

#include <gtest/gtest.h>

#include "test/agent/qos/qos_test_util.h"
#include "test/agent/step/step_test_node.h"

namespace gleaner::agent::step {
namespace {

ProbeReadings probe_seeing(std::map<std::string, int64_t> on_cpu) {
  ProbeReadings probe;
  probe.runqueue_probe = true;
  probe.on_cpu_milli = std::move(on_cpu);
  return probe;
}

TEST(UnseenPods, AnLsPodIsUnseenWhenTheProbeSawUnderAQuarterOfWhatItsCgroupUsed) {
  const auto snap = qos::test::make_snapshot(test::busy_node(), test::web_and_spark());
  // web used 2000m; spark (BE) is never judged, whatever the probe saw of it.
  EXPECT_EQ(unseen_ls_pods(snap, probe_seeing({{"default/web", 500}})).size(), 0u);
  const auto unseen = unseen_ls_pods(snap, probe_seeing({{"default/web", 499}}));
  ASSERT_EQ(unseen.size(), 1u);
  EXPECT_EQ(describe(unseen[0]), "default/web (cgroup 2000m, probe 499m)");
  EXPECT_EQ(unseen_ls_pods(snap, probe_seeing({})).size(), 1u);  // absent: saw nothing
}

TEST(UnseenPods, APodThatBarelyRanOrReadingsWithoutFiguresJudgeNothing) {
  auto pods = test::web_and_spark();
  pods[0].cpu_usage = "40m";  // under kUnseenMinMilli
  const auto idle = qos::test::make_snapshot(test::busy_node(), pods);
  EXPECT_TRUE(unseen_ls_pods(idle, probe_seeing({})).empty());
  const auto busy = qos::test::make_snapshot(test::busy_node(), test::web_and_spark());
  ProbeReadings unrecorded;  // a snapshot file from before the figures were recorded
  unrecorded.runqueue_probe = true;
  EXPECT_TRUE(unseen_ls_pods(busy, unrecorded).empty());
  ProbeReadings no_probe = probe_seeing({});
  no_probe.runqueue_probe = false;
  EXPECT_TRUE(unseen_ls_pods(busy, no_probe).empty());
}

}  // namespace
}  // namespace gleaner::agent::step
