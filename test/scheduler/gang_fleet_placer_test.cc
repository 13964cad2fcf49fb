// The fleet placer on its own: one placement record per application, what is due for a
// gang whose placement is not yet recorded or that waits to be submitted again, and a
// placement and a hub's reclaim carried out on a gang book and a core.
#include <vector>

#include <gtest/gtest.h>

#include "common/quantity.h"
#include "scheduler/gang/fleet_placer.h"

namespace gleaner::scheduler::gang {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace gang_fleet_placer_test {
namespace {

TEST(FleetPlacer, OneRecordPerApplicationUntilForgotten) {
  FleetPlacer placer(5);
  EXPECT_FALSE(placer.placed("a/ns/app"));
  EXPECT_EQ(placer.gang_of("a/ns/app"), nullptr);
  placer.record("a/ns/app", "b/ns/app");
  ASSERT_NE(placer.gang_of("a/ns/app"), nullptr);
  EXPECT_EQ(*placer.gang_of("a/ns/app"), "b/ns/app");
  placer.forget("a/ns/app");
  EXPECT_FALSE(placer.placed("a/ns/app"));
}

TEST(FleetPlacer, AnUnrecordedPlacementIsSentAgainAfterTheRetryPeriod) {
  FleetPlacer placer(5);
  Gang g;
  g.key = "b/ns/app";
  g.origin = "a";
  g.cluster = "b";
  g.job = 1;
  placer.sent(g, 100);
  EXPECT_FALSE(FleetPlacer::due(g, 104.9).send);
  EXPECT_TRUE(FleetPlacer::due(g, 104.9).keep);
  EXPECT_TRUE(FleetPlacer::due(g, 105).send);

  g.app_recorded = true;  // recorded on the origin: nothing more to send
  EXPECT_FALSE(FleetPlacer::due(g, 200).send);
  EXPECT_FALSE(FleetPlacer::due(g, 200).keep);
}

TEST(FleetPlacer, AWithdrawnPlacementIsSubmittedAgainOnce) {
  FleetPlacer placer(5);
  Gang g;
  g.key = "app:a/ns/app";
  g.origin = "a";
  placer.resubmit_later(g, g.key, 10);
  EXPECT_FALSE(FleetPlacer::due(g, 14).resubmit);
  EXPECT_TRUE(FleetPlacer::due(g, 14).keep);
  const FleetPlacer::Due now = FleetPlacer::due(g, 15);
  EXPECT_TRUE(now.resubmit);
  EXPECT_FALSE(now.keep);  // submitted: nothing left to retry

  // Keys with nothing left leave the retry set.
  std::vector<std::string> seen;
  placer.retry_each([&](const std::string& key) {
    seen.push_back(key);
    return false;
  });
  placer.retry_each([&](const std::string& key) {
    seen.push_back(key);
    return true;
  });
  EXPECT_EQ(seen, std::vector<std::string>{"app:a/ns/app"});
}

// A hub's application queued under its queue key, and a core with one member node.
struct Fleet {
  Scheduler core{SchedulerPolicy{}, *QuotaTree::build({}), ClusterState()};
  NodeId n1 = *core.upsert_node(
      NodeInfo{"m1/n1", "m1", {{kClusterLabel, "m1"}}, Resources{4000, 4 * kGi, 0}}, 0);
  GangBook book;
  FleetPlacer placer{5};

  // Queued and admitted by the core (into m1, the one member).
  JobId admitted(const std::string& name) {
    const Resources one{1000, kGi, 0};
    JobId id = *core.submit(JobSpec{name, "", 0, 0, one, one, 1, {}});
    EXPECT_EQ(core.schedule(0).size(), 1u);
    Gang g;
    g.key = FleetPlacer::app_key(kSparkKind, "hub", "ns", name);
    g.origin = "hub";
    g.ns = "ns";
    g.name = name;
    g.app_uid = "uid-" + name;
    g.hub_origin = true;
    g.job = id;
    book.put(std::move(g));
    return id;
  }
  [[nodiscard]] Labels job_labels(JobId id) const { return core.job(id).spec.node_selector.labels; }
};

TEST(FleetPlacer, APlacedApplicationMovesToItsMembersKeyAndItsPlacementIsSent) {
  Fleet f;
  const JobId id = f.admitted("app");
  const FleetPlacer::Effects e = f.placer.place(f.book, f.core, "app:hub/ns/app", id, 100);
  ASSERT_EQ(e.actions.size(), 1u);
  const Action& a = e.actions[0];
  EXPECT_EQ(a.kind, ActionKind::kPlaceApp);
  EXPECT_EQ(a.cluster, "hub");
  EXPECT_EQ(a.target, "m1");
  EXPECT_EQ(a.message, "placed into member cluster m1 (driver on node m1/n1)");
  EXPECT_TRUE(e.reason.empty());  // no Event: the placement itself says it

  EXPECT_FALSE(f.book.contains("app:hub/ns/app"));
  const Gang* g = f.book.gang_of_job(id);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->key, "m1/ns/app");
  ASSERT_NE(f.placer.gang_of("hub/ns/app"), nullptr);
  EXPECT_EQ(*f.placer.gang_of("hub/ns/app"), "m1/ns/app");
  EXPECT_EQ(f.job_labels(id).at(kClusterLabel), "m1");  // pinned to the member
  EXPECT_TRUE(FleetPlacer::due(*g, 105).send);          // until recorded

  f.placer.recorded(f.book, kSparkKind, "hub", "ns", "app");
  EXPECT_TRUE(f.book.gang_of_job(id)->app_recorded);
  EXPECT_EQ(f.placer.find(f.book, kSparkKind, "hub", "ns", "app")->second.key, "m1/ns/app");
}

TEST(FleetPlacer, AKeyStillTakenInTheMemberWithdrawsTheJobAndSubmitsItAgainLater) {
  Fleet f;
  f.book["m1/ns/app"].key = "m1/ns/app";  // the member's own application of that name
  const JobId id = f.admitted("app");
  const FleetPlacer::Effects e = f.placer.place(f.book, f.core, "app:hub/ns/app", id, 100);
  EXPECT_TRUE(e.actions.empty());
  EXPECT_EQ(e.reason, "GleanerPending");
  EXPECT_FALSE(e.warning);
  ASSERT_NE(e.gang, nullptr);
  EXPECT_EQ(e.gang, &f.book.find("app:hub/ns/app")->second);
  EXPECT_FALSE(e.gang->job);
  EXPECT_EQ(f.core.job(id).phase, JobPhase::kWithdrawn);
  EXPECT_EQ(f.book.key_of_job(id), nullptr);
  EXPECT_FALSE(f.placer.placed("hub/ns/app"));
  EXPECT_TRUE(FleetPlacer::due(*e.gang, 105).resubmit);
}

TEST(FleetPlacer, AReclaimedHubApplicationWaitsUnderItsQueueKeyAgainForAnyMember) {
  Fleet f;
  const JobId id = f.admitted("app");
  (void)f.placer.place(f.book, f.core, "app:hub/ns/app", id, 100);
  f.placer.recorded(f.book, kSparkKind, "hub", "ns", "app");

  const FleetPlacer::Effects e =
      f.placer.return_to_hub(f.book, f.core, "m1/ns/app", "driver did not start");
  ASSERT_EQ(e.actions.size(), 1u);
  EXPECT_EQ(e.actions[0].kind, ActionKind::kUnplaceApp);
  EXPECT_EQ(e.actions[0].cluster, "hub");
  EXPECT_EQ(e.actions[0].peer, "m1");
  EXPECT_EQ(e.actions[0].message, "reclaimed: driver did not start");
  EXPECT_EQ(e.reason, "GleanerReclaimed");
  EXPECT_TRUE(e.warning);

  EXPECT_FALSE(f.book.contains("m1/ns/app"));
  const Gang* g = f.book.gang_of_job(id);
  ASSERT_EQ(g, e.gang);
  EXPECT_EQ(g->key, "app:hub/ns/app");
  EXPECT_TRUE(g->cluster.empty());
  EXPECT_FALSE(g->app_recorded);
  EXPECT_FALSE(f.placer.placed("hub/ns/app"));
  EXPECT_FALSE(f.job_labels(id).contains(kClusterLabel));  // any member again
}

TEST(FleetPlacer, RetriesSendWhatIsDueAndDropWhatIsDone) {
  Fleet f;
  const JobId id = f.admitted("app");
  (void)f.placer.place(f.book, f.core, "app:hub/ns/app", id, 100);  // sent at 100
  f.book["m1/ns/other"].key = "m1/ns/other";
  const JobId other = f.admitted("other");
  (void)f.placer.place(f.book, f.core, "app:hub/ns/other", other, 100);  // key taken

  EXPECT_TRUE(f.placer.retries(f.book, 104).empty());
  std::vector<FleetPlacer::Retry> due = f.placer.retries(f.book, 105);
  ASSERT_EQ(due.size(), 2u);  // key order: the queued one, then the placed one
  EXPECT_EQ(due[0].gang->key, "app:hub/ns/other");
  EXPECT_TRUE(due[0].resubmit);
  EXPECT_FALSE(due[0].send);
  EXPECT_EQ(due[0].gang->resubmit_at, 0);
  EXPECT_EQ(due[1].gang->key, "m1/ns/app");
  ASSERT_TRUE(due[1].send);
  EXPECT_EQ(due[1].send->kind, ActionKind::kPlaceApp);
  EXPECT_FALSE(due[1].resubmit);

  EXPECT_TRUE(f.placer.retries(f.book, 109).empty());  // sent again at 105: next at 110
  f.placer.recorded(f.book, kSparkKind, "hub", "ns", "app");
  EXPECT_TRUE(f.placer.retries(f.book, 200).empty());
  std::vector<std::string> left;
  f.placer.retry_each([&](const std::string& key) {
    left.push_back(key);
    return true;
  });
  EXPECT_TRUE(left.empty());  // recorded, and submitted again: nothing left
}

TEST(FleetPlacer, ADeletedApplicationEndsWithdrawsOrKeepsItsGang) {
  Fleet f;
  using D = FleetPlacer::Deleted;
  EXPECT_EQ(f.placer.deleted(f.book, kSparkKind, "hub", "ns", "none").second, D::kKeep);

  const JobId queued = f.admitted("queued");  // admitted, not yet placed: still queued here
  auto [q, q_what] = f.placer.deleted(f.book, kSparkKind, "hub", "ns", "queued");
  EXPECT_EQ(q_what, D::kWithdraw);
  EXPECT_EQ(q->second.job, queued);

  // A hub's placed application is the hub object: its job ends with it, and the record goes.
  const JobId placed = f.admitted("placed");
  (void)f.placer.place(f.book, f.core, "app:hub/ns/placed", placed, 100);
  auto [p, p_what] = f.placer.deleted(f.book, kSparkKind, "hub", "ns", "placed");
  EXPECT_EQ(p_what, D::kEnd);
  EXPECT_EQ(p->second.key, "m1/ns/placed");
  EXPECT_FALSE(f.placer.placed("hub/ns/placed"));

  // Deleted in the member: the hub's copy there is the hub's to replace, it is kept.
  EXPECT_EQ(f.placer.deleted(f.book, kSparkKind, "m1", "ns", "placed").second, D::kKeep);
  f.book["m1/ns/train"].replica_gang = true;
  EXPECT_EQ(f.placer.deleted(f.book, kSparkKind, "m1", "ns", "train").second, D::kOwnJob);
}

}  // namespace
}  // namespace gang_fleet_placer_test
}  // namespace gleaner::scheduler::gang
