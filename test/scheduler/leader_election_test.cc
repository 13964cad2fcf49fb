// The Lease decision of leader election, pure.
#include "scheduler/kube/leader_election.h"

#include <gtest/gtest.h>

namespace gleaner::scheduler::kube_glue {
namespace {

using std::chrono::milliseconds;

Json lease_held_by(const std::string& holder) {
  return Json{{"metadata", {{"resourceVersion", "7"}}},
              {"spec", {{"holderIdentity", holder}, {"leaseDurationSeconds", 15}}}};
}

TEST(LeaderElection, DecisionFollowsTheHolderAndHowLongTheRecordStoodStill) {
  const milliseconds lease{15000};
  EXPECT_EQ(decide_lease(std::nullopt, "a", milliseconds(0), lease), LeaseStep::kCreate);
  EXPECT_EQ(decide_lease(lease_held_by("a"), "a", milliseconds(0), lease), LeaseStep::kRenew);
  EXPECT_EQ(decide_lease(lease_held_by("b"), "a", milliseconds(14999), lease), LeaseStep::kWait);
  EXPECT_EQ(decide_lease(lease_held_by("b"), "a", lease, lease), LeaseStep::kTakeOver);
  EXPECT_EQ(decide_lease(lease_held_by(""), "a", milliseconds(0), lease), LeaseStep::kTakeOver);
}

TEST(LeaderElection, DurationsMustNest) {
  LeaderElectionOptions o;
  o.identity = "a";
  EXPECT_TRUE(check_leader_election(o).ok());
  o.renew_deadline = o.lease_duration;
  EXPECT_FALSE(check_leader_election(o).ok());
  o.renew_deadline = milliseconds(10000);
  o.retry_period = milliseconds(10000);
  EXPECT_FALSE(check_leader_election(o).ok());
  o.retry_period = milliseconds(2000);
  o.identity.clear();
  EXPECT_FALSE(check_leader_election(o).ok());
}

}  // namespace
}  // namespace gleaner::scheduler::kube_glue
