// A preempted job's pods keep their room until they are gone: a victim runs through its
// grace period, and kubelet admits the preemptor against what still runs there.
#include <gtest/gtest.h>

#include "scheduler/gang/gang_scheduler.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace victim_room_test {
namespace {

using live_testing::lone_batch_pod;

// n1 (8 cores) of c1 is all borrowed by team-b's b1; team-a is guaranteed the node.
class VictimRoom : public live_testing::RecordedOneNodeLive {
 protected:
  void SetUp() override {
    RecordedOneNodeLive::SetUp();
    ASSERT_TRUE(live->set_quotas({QueueSpec{"a", "root", Resources{8000, 64 * kGiB}, std::nullopt,
                                            std::nullopt},
                                  QueueSpec{"b", "root", std::nullopt, std::nullopt, std::nullopt}},
                                 std::nullopt, {{"team-a", "a"}, {"team-b", "b"}})
                    .ok());
    victim = lone_batch_pod("team-b", "b1", 8000);
    live->observe_pod(victim);
    live->tick();
    ASSERT_EQ(binds_of("b1"), 1u);
    victim.node = "n1";
    victim.phase = "Running";
    live->observe_pod(victim);
    actions.clear();
  }
  [[nodiscard]] size_t binds_of(const std::string& name) const {
    return count(gang::ActionKind::kBind, name);
  }
  [[nodiscard]] bool event_on(const std::string& name, const std::string& reason) const {
    return std::any_of(actions.begin(), actions.end(), [&](const gang::Action& a) {
      return a.kind == gang::ActionKind::kEvent && a.name == name && a.reason == reason;
    });
  }
  gang::PodView victim;
};

TEST_F(VictimRoom, ThePreemptorIsBoundOnlyOnceItsVictimIsGone) {
  live->observe_pod(lone_batch_pod("team-a", "a1", 4000));
  live->tick();
  ASSERT_EQ(count(gang::ActionKind::kDelete, "b1"), 1u) << live->jobs_json().dump();
  // b1 is terminating: still bound and running on n1, its 8 cores still in use there.
  live->observe_pod(victim);
  live->tick();
  live->tick();
  EXPECT_EQ(binds_of("a1"), 0u) << "bound beside a victim that still runs: kubelet would "
                                   "reject it (OutOfbatch-cpu)";
  EXPECT_TRUE(event_on("a1", "GleanerWaitingForVictims"));
  EXPECT_EQ(live->nodes_json()["nodes"][0]["used"]["cpuMillicores"], 12000)
      << "the victim's room is held while it terminates";
  // Nobody else takes the room either: another of team-a's pods waits too.
  live->observe_pod(lone_batch_pod("team-a", "a2", 4000));
  live->tick();
  EXPECT_EQ(binds_of("a2"), 0u);

  // Its DELETED event: the room goes to the preemptor at once, not at the next pass.
  live->forget_pod(victim);
  EXPECT_EQ(binds_of("a1"), 1u) << live->jobs_json().dump();
  // a1 waited (once, however many passes); a2 was never admitted into held room.
  EXPECT_NE(metrics.render({}).find("gleaner_scheduler_binds_waiting_for_victims_total 1\n"),
            std::string::npos);
}

TEST_F(VictimRoom, APreemptorThatFitsBesideTheTerminatingVictimIsBoundAtOnce) {
  // Only the room a preemptor lacks waits: with the node's batch room grown to 12 cores
  // after the preemption, a1 fits beside the terminating b1 and kubelet would admit it.
  live->observe_pod(lone_batch_pod("team-a", "a1", 4000));
  live->tick();
  ASSERT_EQ(count(gang::ActionKind::kDelete, "b1"), 1u);
  ASSERT_FALSE(live->apply_report(live_testing::node_report("n1", 2, 12000, 64 * kGiB, "c1")));
  live->observe_pod(victim);
  live->tick();
  EXPECT_EQ(binds_of("a1"), 1u) << live->nodes_json().dump();
}

}  // namespace
}  // namespace victim_room_test
}  // namespace gleaner::scheduler
