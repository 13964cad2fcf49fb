// A member cluster whose API server does not answer takes no new placement until it is
// back; a job that could only go there waits and says why.
#include <gtest/gtest.h>

#include "common/quantity.h"
#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace member_availability_test {
namespace {

TEST(MemberAvailability, AnUnavailableMemberIsSkippedUntilItIsBack) {
  Scheduler s(SchedulerPolicy{}, *QuotaTree::build({}), ClusterState());
  const Resources core{1000, kGi, 0};
  (void)*s.upsert_node(NodeInfo{"a-1", "a", {}, Resources{4000, 4 * kGi, 0}}, 0);
  (void)*s.upsert_node(NodeInfo{"b-1", "b", {}, Resources{8000, 8 * kGi, 0}}, 0);
  const ClusterId a = *s.clusters().find_cluster("a");
  const ClusterId b = *s.clusters().find_cluster("b");
  s.set_cluster_available(a, false);
  // a is the best fit, but away: b takes the first job.
  JobId first = *s.submit(JobSpec{"first", "", 0, 0, core, core, 1, {}});
  ASSERT_EQ(s.schedule(0).size(), 1u);
  EXPECT_EQ(s.job(first).cluster, b);
  // A job that may only go to a waits, not unschedulable, and names the reason.
  JobSpec only_a{"only-a", "", 0, 1, core, core, 1, {}};
  only_a.allowed_clusters = std::vector<std::string>{"a"};
  JobId waiting = *s.submit(only_a);
  EXPECT_TRUE(s.schedule(1).empty());
  EXPECT_EQ(s.job(waiting).phase, JobPhase::kPending);
  EXPECT_FALSE(s.job(waiting).unschedulable);
  EXPECT_NE(
      s.job(waiting).reason.find("member cluster a is skipped: its API server is unavailable"),
      std::string::npos)
      << s.job(waiting).reason;
  // Back: the next pass places it there.
  s.set_cluster_available(a, true);
  ASSERT_EQ(s.schedule(2).size(), 1u);
  EXPECT_EQ(s.job(waiting).cluster, a);
}

}  // namespace
}  // namespace member_availability_test
}  // namespace gleaner::scheduler
