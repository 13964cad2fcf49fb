// Multi-cluster placement of SparkApplications against two instances of the test API
// server as member clusters a and b: an application created (suspended) in a whose gang
// fits only in b is copied into b, with a's copy annotated and left suspended, and its
// driver (created in b, as b's operator would) is bound there; one that fits in a stays
// in a and is released there. The copy's lifecycle is in copy_lifecycle_live_test.cc.
#include <algorithm>

#include <gtest/gtest.h>

#include "test/scheduler/live/multi_cluster_fixture.h"

namespace gleaner::scheduler {
namespace {

using gleaner::testing::eventually;
using live_testing::multi_cluster_app;
using live_testing::MultiClusterLiveTest;
using live_testing::operator_driver;

TEST_F(MultiClusterLiveTest, AppThatFitsOnlyInAnotherClusterIsCopiedThere) {
  report("a", "a1", 2000);  // the gang needs 3 CPUs: a cannot take it
  report("b", "b1", 8000);
  ASSERT_TRUE(
      member("a").create(kube::spark_applications_path("default"), multi_cluster_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));

  const Json copy = app("b", "pi");
  EXPECT_EQ(annotation(copy, "gleaner.io/origin-cluster"), "a");
  EXPECT_EQ(annotation(copy, "gleaner.io/placement"), "b");
  EXPECT_EQ(copy["spec"]["suspend"], false);
  EXPECT_EQ(copy["spec"]["mainClass"], "Pi");
  EXPECT_EQ(copy["spec"]["executor"]["instances"], 2);
  EXPECT_EQ(copy["metadata"]["labels"]["team"], "ads");
  // The origin records the decision and stays suspended; an Event says where it went.
  const Json origin = app("a", "pi");
  EXPECT_EQ(annotation(origin, "gleaner.io/placement"), "b");
  EXPECT_EQ(origin["spec"]["suspend"], true);
  ASSERT_TRUE(eventually(
      [&] { return member("a").has_event("pi", "GleanerPlacedRemote", "member cluster b"); }));

  // b's operator creates the driver: it takes the room the core reserved on b1.
  ASSERT_TRUE(member("b").create(kube::pods_path("default"), operator_driver("pi")));
  ASSERT_TRUE(schedule_until([&] { return member("b").node_of("pi-driver") == "b1"; }));
  auto jobs = live_->jobs_json()["jobs"];
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["cluster"], "b");
  EXPECT_EQ(jobs[0]["phase"], "Admitted");
  // b1 holds the whole gang (driver plus both executors' reservations).
  EXPECT_EQ(live_->nodes_json()["nodes"][1]["free"]["cpuMillicores"], 5000);
}

TEST_F(MultiClusterLiveTest, CopyThatFailsToBeCreatedIsCreatedOnARetry) {
  report("a", "a1", 2000);
  report("b", "b1", 8000);
  // b refuses the first SparkApplication create (as without RBAC or the CRD, for a while).
  member("b").api->admin("fail", "method=POST&prefix=/apis/sparkoperator.k8s.io&code=403&count=1");
  ASSERT_TRUE(
      member("a").create(kube::spark_applications_path("default"), multi_cluster_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));
  EXPECT_GE(
      member("b").api->count_requests(
          "POST", "/apis/sparkoperator.k8s.io/v1beta2/namespaces/default/sparkapplications", false),
      2);
  EXPECT_EQ(annotation(app("a", "pi"), "gleaner.io/placement"), "b");
  // One Event on the origin however many attempts.
  const auto events = member("a").events_about("pi");
  EXPECT_EQ(std::count_if(events.begin(), events.end(),
                          [](const auto& e) { return e.first == "GleanerPlacedRemote"; }),
            1);
}

TEST_F(MultiClusterLiveTest, AppThatFitsInItsOwnClusterStaysAndIsReleased) {
  // Best fit alone would choose b (nothing left over); the origin goes first.
  report("a", "a1", 8000);
  report("b", "b1", 3000);
  ASSERT_TRUE(
      member("a").create(kube::spark_applications_path("default"), multi_cluster_app("pi")));
  ASSERT_TRUE(
      schedule_until([&] { return annotation(app("a", "pi"), "gleaner.io/placement") == "a"; }));
  EXPECT_EQ(app("a", "pi")["spec"]["suspend"], false);
  EXPECT_FALSE(app("b", "pi").contains("spec"));

  ASSERT_TRUE(member("a").create(kube::pods_path("default"), operator_driver("pi")));
  ASSERT_TRUE(schedule_until([&] { return member("a").node_of("pi-driver") == "a1"; }));
  EXPECT_EQ(live_->jobs_json()["jobs"][0]["cluster"], "a");
  EXPECT_FALSE(app("b", "pi").contains("spec"));
}

TEST_F(MultiClusterLiveTest, AppThatFitsNowhereWaitsWithAnEvent) {
  report("a", "a1", 1000);
  report("b", "b1", 2000);
  ASSERT_TRUE(
      member("a").create(kube::spark_applications_path("default"), multi_cluster_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return member("a").has_event("pi", "GleanerUnschedulable"); }));
  EXPECT_EQ(annotation(app("a", "pi"), "gleaner.io/placement"), "");
  EXPECT_FALSE(app("b", "pi").contains("spec"));
  // b grows: the application goes there.
  report("b", "b1", 4000);
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));
  EXPECT_EQ(annotation(app("a", "pi"), "gleaner.io/placement"), "b");
}

TEST_F(MultiClusterLiveTest, DeletedBeforePlacementGivesUpItsQueuePlace) {
  report("a", "a1", 1000);
  report("b", "b1", 1000);
  ASSERT_TRUE(
      member("a").create(kube::spark_applications_path("default"), multi_cluster_app("pi")));
  auto phase = [&] {
    auto jobs = live_->jobs_json()["jobs"];
    return jobs.empty() ? std::string() : jobs[0]["phase"].get<std::string>();
  };
  ASSERT_TRUE(schedule_until([&] { return phase() == "Pending"; }));
  ASSERT_TRUE(member("a").client->remove(kube::spark_applications_path("default") + "/pi").ok());
  ASSERT_TRUE(schedule_until([&] { return phase() == "Withdrawn"; }));
  // Room appearing later (placeable once report() returns) places nothing.
  report("b", "b1", 8000);
  live_->tick();
  EXPECT_EQ(phase(), "Withdrawn");
}

TEST_F(MultiClusterLiveTest, RecordedPlacementWithoutItsCopyGetsTheCopy) {
  // A scheduler that stopped between recording the decision on the origin and creating
  // the copy: the next one finds the origin annotated and creates the copy, placing
  // nothing anew.
  report("a", "a1", 8000);
  report("b", "b1", 8000);
  Json recorded = multi_cluster_app("pi");
  recorded["metadata"]["annotations"] = {{"gleaner.io/placement", "b"}};
  ASSERT_TRUE(member("a").create(kube::spark_applications_path("default"), recorded));
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));
  EXPECT_EQ(annotation(app("b", "pi"), "gleaner.io/origin-cluster"), "a");
  EXPECT_EQ(app("b", "pi")["spec"]["suspend"], false);
  EXPECT_EQ(app("a", "pi")["spec"]["suspend"], true);
  EXPECT_TRUE(live_->jobs_json()["jobs"].empty());
}

TEST_F(MultiClusterLiveTest, CopyDeletedBeforeItsDriverCameGivesItsRoomBack) {
  report("a", "a1", 2000);
  report("b", "b1", 4000);  // room for one gang of 3 cores
  ASSERT_TRUE(
      member("a").create(kube::spark_applications_path("default"), multi_cluster_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));
  ASSERT_TRUE(
      member("a").create(kube::spark_applications_path("default"), multi_cluster_app("pi2")));
  ASSERT_TRUE(schedule_until([&] { return member("a").has_event("pi2", "GleanerPending"); }));
  EXPECT_FALSE(app("b", "pi2").contains("spec"));
  // The copy is deleted in b (by hand, say) before b's operator made its driver.
  ASSERT_TRUE(member("b").client->remove(kube::spark_application_path("default", "pi")).ok());
  EXPECT_TRUE(schedule_until([&] { return app("b", "pi2").contains("spec"); }));
}

TEST_F(MultiClusterLiveTest, TargetStillHoldingAnotherAppOfTheNameIsTriedAgain) {
  report("a", "a1", 2000);
  report("b", "b1", 8000);
  // An executor of another "pi" waits in b: that name's gang key there is taken.
  Json executor = operator_driver("pi");
  executor["metadata"]["name"] = "pi-exec-1";
  executor["metadata"]["labels"]["spark-role"] = "executor";
  ASSERT_TRUE(member("b").create(kube::pods_path("default"), executor));
  // b's link must have delivered it before the application arrives in a.
  ASSERT_TRUE(eventually([&] {
    const Json waiting = live_->jobs_json()["waiting"];
    return waiting.size() == 1 && waiting[0]["cluster"] == "b" && waiting[0]["gang"] == "pi" &&
           waiting[0]["pods"] == Json::array({"pi-exec-1"});
  }));
  ASSERT_TRUE(
      member("a").create(kube::spark_applications_path("default"), multi_cluster_app("pi")));
  ASSERT_TRUE(schedule_until([&] {
    return member("a").has_event("pi", "GleanerPending",
                                 "still has another application of this name");
  }));
  EXPECT_FALSE(app("b", "pi").contains("spec"));
  ASSERT_TRUE(member("b").client->remove(kube::pod_path("default", "pi-exec-1")).ok());
  EXPECT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));
}

TEST_F(MultiClusterLiveTest, AppNotSuspendedIsLeftToItsOwnClusterWithAWarning) {
  report("a", "a1", 2000);
  report("b", "b1", 8000);
  ASSERT_TRUE(member("a").create(kube::spark_applications_path("default"),
                                 multi_cluster_app("pi", /*suspend=*/false)));
  ASSERT_TRUE(schedule_until([&] { return member("a").has_event("pi", "GleanerNotSuspended"); }));
  for (int i = 0; i < 5; ++i)
    live_->tick();
  EXPECT_FALSE(app("b", "pi").contains("spec"));
  EXPECT_EQ(annotation(app("a", "pi"), "gleaner.io/placement"), "");
  EXPECT_TRUE(live_->jobs_json()["jobs"].empty());
}

}  // namespace
}  // namespace gleaner::scheduler

namespace gleaner::scheduler {
namespace {

using live_testing::multi_cluster_app;

// PriorityClasses exist in cluster a before the scheduler starts, as they do in practice.
class MultiClusterPriorityTest : public live_testing::MultiClusterLiveTest {
 protected:
  void SetUp() override {
    start_clusters();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(member("a").create(kube::priority_classes_path(),
                                   Json{{"apiVersion", "scheduling.k8s.io/v1"},
                                        {"kind", "PriorityClass"},
                                        {"metadata", {{"name", "koord-batch"}}},
                                        {"value", 5500}}));
    connect();
  }
};

TEST_F(MultiClusterPriorityTest, AnApplicationsJobHasItsDriversPriorityClassValue) {
  report("a", "a1", 8000);
  Json app = multi_cluster_app("pi");
  app["spec"]["driver"]["priorityClassName"] = "koord-batch";
  ASSERT_TRUE(member("a").create(kube::spark_applications_path("default"), app));
  ASSERT_TRUE(schedule_until([&] { return live_->jobs_json()["jobs"].size() == 1; }));
  EXPECT_EQ(live_->jobs_json()["jobs"][0]["priority"], 5500);
}

}  // namespace
}  // namespace gleaner::scheduler
