// Room held outside the core's jobs, by key: a pod another scheduler bound is counted once
// however often the world repeats it, given back once, and moved when it is seen on
// another node; an executor beyond its gang is held and given back the same way.
#include <gtest/gtest.h>

#include "common/quantity.h"
#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace foreign_pods_test {
namespace {

struct Fixture {
  Scheduler s{SchedulerPolicy{}, *QuotaTree::build({}), ClusterState()};
  NodeId n1 = *s.upsert_node(NodeInfo{"c/n1", "c", {}, Resources{4000, 4 * kGi, 0}}, 0);
  NodeId n2 = *s.upsert_node(NodeInfo{"c/n2", "c", {}, Resources{4000, 4 * kGi, 0}}, 0);
  const Resources one{1000, kGi, 0};
  [[nodiscard]] const Resources& used(NodeId n) const { return s.clusters().node(n).used; }
};

TEST(ForeignPods, APodIsCountedOnceAndReleasedOnce) {
  Fixture f;
  f.s.account_foreign_pod("uid-1", f.n1, f.one);
  f.s.account_foreign_pod("uid-1", f.n1, f.one);  // the informer repeats the pod
  EXPECT_EQ(f.used(f.n1), f.one);
  EXPECT_EQ(f.s.foreign_pod_node("uid-1"), f.n1);

  EXPECT_TRUE(f.s.release_foreign_pod("uid-1"));
  EXPECT_FALSE(f.s.release_foreign_pod("uid-1"));  // deleted, then seen terminal
  EXPECT_EQ(f.used(f.n1), Resources{});
  EXPECT_FALSE(f.s.foreign_pod_node("uid-1"));
  EXPECT_FALSE(f.s.release_foreign_pod("never-seen"));
}

TEST(ForeignPods, APodSeenOnAnotherNodeOrResizedMovesItsRoom) {
  Fixture f;
  f.s.account_foreign_pod("uid-1", f.n1, f.one);
  f.s.account_foreign_pod("uid-1", f.n2, f.one);
  EXPECT_EQ(f.used(f.n1), Resources{});
  EXPECT_EQ(f.used(f.n2), f.one);

  const Resources two{2000, 2 * kGi, 0};
  f.s.account_foreign_pod("uid-1", f.n2, two);
  EXPECT_EQ(f.used(f.n2), two);
  ASSERT_TRUE(f.s.release_foreign_pod("uid-1"));
  EXPECT_EQ(f.used(f.n2), Resources{});
}

TEST(ForeignPods, TheRoomTheyHoldKeepsJobsOut) {
  Fixture f;
  f.s.account_foreign_pod("a", f.n1, Resources{4000, 4 * kGi, 0});
  f.s.account_foreign_pod("b", f.n2, Resources{4000, 4 * kGi, 0});
  JobId id = *f.s.submit(JobSpec{"job", "", 0, 0, f.one, f.one, 1, {}});
  f.s.schedule(0);
  EXPECT_EQ(f.s.job(id).phase, JobPhase::kPending);

  ASSERT_TRUE(f.s.release_foreign_pod("b"));
  ASSERT_EQ(f.s.schedule(1).size(), 1u);
  EXPECT_EQ(f.s.job(id).phase, JobPhase::kAdmitted);
}

TEST(ForeignPods, AnExecutorBeyondItsGangHoldsRoomUnderItsKey) {
  Fixture f;
  JobId id = *f.s.submit(JobSpec{"job", "", 0, 0, f.one, f.one, 1, {}});
  ASSERT_EQ(f.s.schedule(0).size(), 1u);
  const Resources before = f.used(f.n1) + f.used(f.n2);

  auto node = f.s.place_extra_executor("extra", id, f.one, {}, nullptr, 0);
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ(f.used(f.n1) + f.used(f.n2), before + f.one);
  EXPECT_EQ(f.s.foreign_pod_node("extra"), *node);

  // Placed again under the same key (its pod seen again): still one pod's room.
  ASSERT_TRUE(f.s.place_extra_executor("extra", id, f.one, {}, nullptr, 0).ok());
  EXPECT_EQ(f.used(f.n1) + f.used(f.n2), before + f.one);

  EXPECT_TRUE(f.s.release_foreign_pod("extra"));
  EXPECT_EQ(f.used(f.n1) + f.used(f.n2), before);
  EXPECT_FALSE(f.s.release_foreign_pod("extra"));
}

}  // namespace
}  // namespace foreign_pods_test
}  // namespace gleaner::scheduler
