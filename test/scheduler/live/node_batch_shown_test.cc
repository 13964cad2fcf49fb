// A node's batch room in the live loop is the smaller of what its agent reports and what
// its Node shows: the Node's figure (written by this scheduler only when the report moved
// by more than the publish threshold) is what kubelet admits batch pods against.
#include <gtest/gtest.h>

#include "scheduler/gang/gang_scheduler.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace node_batch_shown_test {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// c1's node n1, whose agent reported 8 cores; binds and node figures published recorded.
class NodeBatchShown : public ::testing::Test {
 protected:
  void SetUp() override {
    live = live_testing::one_node_live(clock, metrics, 64 * kGiB);
    ASSERT_NE(live, nullptr);
    live->set_sinks([this](gang::Action a) { actions.push_back(std::move(a)); },
                    [this](const gang::NodeBatch& b) { published.push_back(b); });
  }
  // The Node's batch-cpu (0: no such key) and 64 GiB of batch-memory.
  void node_shows(int64_t cpu_milli) {
    live->observe_node("c1", "n1", {}, {}, std::nullopt,
                       gang::NodeBatchShown{cpu_milli, 64 * kGiB});
  }
  [[nodiscard]] size_t binds() const {
    return static_cast<size_t>(std::count_if(actions.begin(), actions.end(), [](const auto& a) {
      return a.kind == gang::ActionKind::kBind;
    }));
  }
  SystemClock clock;
  server::LiveMetrics metrics;
  std::unique_ptr<gang::GangScheduler> live;
  std::vector<gang::Action> actions;
  std::vector<gang::NodeBatch> published;
};

TEST_F(NodeBatchShown, APodBeyondTheNodesFigureWaitsUntilTheNodeShowsMore) {
  node_shows(4000);  // the report grew, within the threshold: the Node still says 4 cores
  live->observe_pod(live_testing::lone_batch_pod("default", "p1", 6000));
  live->tick();
  EXPECT_EQ(binds(), 0u) << live->jobs_json().dump();
  node_shows(8000);  // the figure written on the Node, seen by the informer
  live->tick();
  EXPECT_EQ(binds(), 1u) << live->jobs_json().dump();
}

TEST_F(NodeBatchShown, AReportBelowTheNodesFigureGoverns) {
  node_shows(8000);
  ASSERT_FALSE(live->apply_report(live_testing::node_report("n1", 2, 4000, 64 * kGiB, "c1")));
  live->observe_pod(live_testing::lone_batch_pod("default", "p1", 6000));
  live->tick();
  EXPECT_EQ(binds(), 0u);
}

TEST_F(NodeBatchShown, ANodeThatListsNoBatchFigureAdmitsNoBatchPod) {
  // kubernetes.io/batch-cpu is a native resource name to kubelet: absent means none.
  node_shows(0);
  live->observe_pod(live_testing::lone_batch_pod("default", "p1", 1000));
  live->tick();
  EXPECT_EQ(binds(), 0u);
  node_shows(8000);  // the first report written on the Node
  live->tick();
  EXPECT_EQ(binds(), 1u);
}

TEST_F(NodeBatchShown, ADeletedNodeAdmitsNoBatchPodUntilItIsBack) {
  node_shows(8000);
  live->observe_node_deleted("c1", "n1");
  live->observe_pod(live_testing::lone_batch_pod("default", "p1", 1000));
  live->tick();
  EXPECT_EQ(binds(), 0u) << live->nodes_json().dump();
  node_shows(8000);  // a Node of that name again, its figure written
  live->tick();
  EXPECT_EQ(binds(), 1u);
}

TEST_F(NodeBatchShown, WithoutTheNodesFiguresTheReportGoverns) {
  // The simulator gives no Node figures: nothing is capped.
  live->observe_node("c1", "n1", {}, {}, std::nullopt, std::nullopt);
  live->observe_pod(live_testing::lone_batch_pod("default", "p1", 6000));
  live->tick();
  EXPECT_EQ(binds(), 1u);
}

TEST_F(NodeBatchShown, TheNodeIsGivenTheReportNotTheCappedRoom) {
  node_shows(4000);
  ASSERT_FALSE(live->apply_report(live_testing::node_report("n1", 2, 7000, 64 * kGiB, "c1")));
  ASSERT_FALSE(published.empty());
  ASSERT_TRUE(published.back().batch);
  EXPECT_EQ(published.back().batch->cpu_milli, 7000);
}

// As gleaner-scheduler run sets it up with clusters: Node informers, so a node must have a Node.
TEST(GhostNode, AReportForANodeWithNoNodeObjectPlacesNothingUntilTheNodeIsSeen) {
  SystemClock clock;
  server::LiveMetrics metrics;
  auto live = live_testing::one_node_live(clock, metrics, 64 * kGiB, /*require_node_objects=*/true);
  ASSERT_NE(live, nullptr);
  std::vector<gang::Action> actions;
  live->set_sinks([&](gang::Action a) { actions.push_back(std::move(a)); }, nullptr);
  auto binds = [&] {
    return std::count_if(actions.begin(), actions.end(),
                         [](const auto& a) { return a.kind == gang::ActionKind::kBind; });
  };
  live->observe_pod(live_testing::lone_batch_pod("default", "p1", 1000));
  live->tick();
  EXPECT_EQ(binds(), 0) << "n1 was only reported: kube-scheduler would not place there either. "
                        << live->nodes_json().dump();
  EXPECT_NE(metrics.render({}).find("gleaner_scheduler_reports_unknown_node_total 1"),
            std::string::npos);
  live->observe_node("c1", "n1", {}, {}, std::nullopt, gang::NodeBatchShown{8000, 64 * kGiB});
  live->tick();
  EXPECT_EQ(binds(), 1) << live->jobs_json().dump();
}

}  // namespace
}  // namespace node_batch_shown_test
}  // namespace gleaner::scheduler
