// The life of a copy of a SparkApplication placed into another member cluster: its state
// is recorded on the origin (once per state, and only on the origin it was made for), and
// it is deleted with its origin, also when the origin went while no scheduler ran.
#include <gtest/gtest.h>

#include "test/scheduler/live/multi_cluster_fixture.h"

namespace gleaner::scheduler {
namespace {

using live_testing::CopyLifecycleTest;
using live_testing::multi_cluster_app;

TEST_F(CopyLifecycleTest, CopyStateIsRecordedOnTheOrigin) {
  place_into_b();
  EXPECT_EQ(annotation(app("b", "pi"), "gleaner.io/origin-uid"),
            app("a", "pi")["metadata"].value("uid", ""));
  for (const std::string state : {"RUNNING", "COMPLETED"}) {
    set_state("b", "pi", state);
    ASSERT_TRUE(until([&] {
      return annotation(app("a", "pi"), "gleaner.io/remote-state") == state;
    })) << state;
    ASSERT_TRUE(until([&] {
      return member("a").has_event("pi", "GleanerRemoteState",
                                   "its copy in member cluster b is " + state);
    })) << state;
  }
  // The origin stays suspended: only the copy's operator runs the application.
  EXPECT_EQ(app("a", "pi")["spec"]["suspend"], true);
}

TEST_F(CopyLifecycleTest, DeletingTheOriginDeletesItsCopy) {
  place_into_b();
  ASSERT_TRUE(member("a").client->remove(kube::spark_application_path("default", "pi")).ok());
  ASSERT_TRUE(until([&] { return !app("b", "pi").contains("spec"); }));
}

TEST_F(CopyLifecycleTest, OriginCreatedAgainWithItsPlacementGetsANewCopy) {
  place_into_b();
  ASSERT_TRUE(member("a").client->remove(kube::spark_application_path("default", "pi")).ok());
  ASSERT_TRUE(until([&] { return !app("b", "pi").contains("spec"); }));
  // The same name again, already decided for b (restored from a backup, say).
  Json recorded = multi_cluster_app("pi");
  recorded["metadata"]["annotations"] = {{"gleaner.io/placement", "b"}};
  ASSERT_TRUE(member("a").create(kube::spark_applications_path("default"), recorded));
  const std::string uid = app("a", "pi")["metadata"].value("uid", "");
  ASSERT_TRUE(until([&] { return annotation(app("b", "pi"), "gleaner.io/origin-uid") == uid; }));
}

TEST_F(CopyLifecycleTest, OriginReplacedWhileItsWatchWasAwayLosesItsCopy) {
  place_into_b();
  const std::string old_origin = app("a", "pi")["metadata"].value("uid", "");
  // a's SparkApplication watch is dropped and its return held while pi is deleted and
  // created again; the history is compacted, so the informer relists and sees the change
  // as one update of pi with another uid.
  hold_spark_app_watch("a");
  auto& api = *member("a").api;
  ASSERT_TRUE(member("a").client->remove(kube::spark_application_path("default", "pi")).ok());
  ASSERT_TRUE(
      member("a").create(kube::spark_applications_path("default"), multi_cluster_app("pi")));
  const std::string new_origin = app("a", "pi")["metadata"].value("uid", "");
  api.admin("compact");
  api.admin("release");
  // The old copy goes with its origin, and the new origin is placed (into b again).
  ASSERT_TRUE(until([&] {
    live_->tick();
    return annotation(app("b", "pi"), "gleaner.io/origin-uid") == new_origin;
  }));
  EXPECT_NE(new_origin, old_origin);
}

TEST_F(CopyLifecycleTest, OlderStateRefusedWhileANewerOneWaitsIsNotTriedAgain) {
  place_into_b();
  auto& api = *member("a").api;
  // The record of RUNNING is held at a's API server, COMPLETED is queued behind it, and
  // then RUNNING is refused.
  api.admin("stall", "method=PATCH&count=1&seconds=30&prefix=" + kPiPath);
  api.admin("fail", "method=PATCH&count=1&code=500&prefix=" + kPiPath);
  const int patches = api.count_requests("PATCH", kPiPath, false);
  set_state("b", "pi", "RUNNING");
  ASSERT_TRUE(until([&] { return api.count_requests("PATCH", kPiPath, false) > patches; }));
  set_state("b", "pi", "COMPLETED");
  ASSERT_TRUE(until([&] {
    return routed([](const gang::Action& x) {
      return x.kind == gang::ActionKind::kMirrorAppState && x.message == "COMPLETED";
    });
  }));
  api.admin("release");
  ASSERT_TRUE(
      until([&] { return annotation(app("a", "pi"), "gleaner.io/remote-state") == "COMPLETED"; }));
  // RUNNING is not kept for a retry that would write it over COMPLETED.
  EXPECT_EQ(member("a").link->retries_waiting(), 0U);
}

TEST_F(CopyLifecycleTest, SameNamedApplicationThatIsNotTheCopyOutlivesTheOrigin) {
  // b already runs its own "pi" when a's "pi" is decided for b: no copy is made, and
  // deleting a's "pi" leaves b's alone.
  ASSERT_TRUE(member("b").create(kube::spark_applications_path("default"),
                                 multi_cluster_app("pi", /*suspend=*/false)));
  Json recorded = multi_cluster_app("pi");
  recorded["metadata"]["annotations"] = {{"gleaner.io/placement", "b"}};
  ASSERT_TRUE(member("a").create(kube::spark_applications_path("default"), recorded));
  ASSERT_TRUE(until([&] {
    return member("b").api->count_requests(
               "POST", "/apis/sparkoperator.k8s.io/v1beta2/namespaces/default/sparkapplications",
               false) >= 2;  // b's own, then the refused copy
  }));
  ASSERT_TRUE(member("a").client->remove(kube::spark_application_path("default", "pi")).ok());
  ASSERT_TRUE(until([&] {
    return member("b").api->count_requests("GET", kPiPath,
                                           false) >=
           2;  // the create's conflict check, then the delete's
  }));
  EXPECT_TRUE(app("b", "pi").contains("spec"));
  EXPECT_EQ(annotation(app("b", "pi"), "gleaner.io/origin-cluster"), "");
  EXPECT_EQ(member("b").api->count_requests("DELETE", kPiPath, false), 0);
}

// The scheduler starts after the clusters changed: what it finds is in its first lists.
class CopyFoundAtStartTest : public CopyLifecycleTest {
 protected:
  void SetUp() override { start_clusters(); }
  std::string create_origin_placed_in_b(const std::string& name) {
    Json origin = multi_cluster_app(name);
    origin["metadata"]["annotations"] = {{"gleaner.io/placement", "b"}};
    EXPECT_TRUE(member("a").create(kube::spark_applications_path("default"), origin));
    return app("a", name)["metadata"].value("uid", "");
  }
};

TEST_F(CopyFoundAtStartTest, CopyWhoseOriginWentWhileNoSchedulerRanIsDeleted) {
  // A copy whose origin is gone, one whose origin's name now belongs to another
  // application (another uid), and one whose origin is still there.
  create_copy_in_b("gone", "uid-of-a-deleted-origin");
  create_origin_placed_in_b("renamed");
  create_copy_in_b("renamed", "uid-of-the-first-renamed");
  create_copy_in_b("alive", create_origin_placed_in_b("alive"));
  connect();

  ASSERT_TRUE(until([&] { return !app("b", "gone").contains("spec"); }));
  ASSERT_TRUE(until([&] {
    return annotation(app("b", "renamed"), "gleaner.io/origin-uid") !=
           "uid-of-the-first-renamed";  // deleted, and a copy of the new origin made
  }));
  EXPECT_TRUE(app("a", "renamed").contains("spec"));
  set_state("b", "alive", "RUNNING");  // the copy is seen again, and kept
  ASSERT_TRUE(
      until([&] { return annotation(app("a", "alive"), "gleaner.io/remote-state") == "RUNNING"; }));
  EXPECT_TRUE(app("b", "alive").contains("spec"));
  EXPECT_EQ(
      member("b").api->count_requests(
          "DELETE", "/apis/sparkoperator.k8s.io/v1beta2/namespaces/default/sparkapplications/alive",
          false),
      0);
}

TEST_F(CopyLifecycleTest, RefusedDeleteIsTriedAgain) {
  place_into_b();
  member("b").api->admin("fail",
                         "method=DELETE&prefix=/apis/sparkoperator.k8s.io&code=500&count=1");
  ASSERT_TRUE(member("a").client->remove(kube::spark_application_path("default", "pi")).ok());
  ASSERT_TRUE(until([&] { return !app("b", "pi").contains("spec"); }));
  EXPECT_GE(member("b").api->count_requests("DELETE", kPiPath, false), 2);
}

TEST_F(CopyLifecycleTest, StateSeenAgainBeforeTheOriginCacheCaughtUpIsWrittenOnce) {
  place_into_b();
  auto& api = *member("a").api;
  // a's cache of its SparkApplications stands still: it never shows the recorded state.
  hold_spark_app_watch("a");
  const int patches = api.count_requests("PATCH", kPiPath, false);
  set_state("b", "pi", "RUNNING");
  ASSERT_TRUE(
      until([&] { return annotation(app("a", "pi"), "gleaner.io/remote-state") == "RUNNING"; }));
  // The copy changes again without a new state: its state comes to a's link once more.
  const auto running = [](const gang::Action& x) {
    return x.kind == gang::ActionKind::kMirrorAppState && x.name == "pi" && x.message == "RUNNING";
  };
  const size_t asked = routed_count(running);
  ASSERT_TRUE(member("b")
                  .client
                  ->patch(kube::spark_application_path("default", "pi"),
                          Json{{"metadata", {{"labels", {{"touched", "yes"}}}}}},
                          kube::PatchType::kMerge)
                  .ok());
  ASSERT_TRUE(until([&] { return routed_count(running) > asked; }));
  // COMPLETED queues behind it on a's link: once it is written, the repeat was handled.
  set_state("b", "pi", "COMPLETED");
  ASSERT_TRUE(
      until([&] { return annotation(app("a", "pi"), "gleaner.io/remote-state") == "COMPLETED"; }));
  api.admin("release");
  EXPECT_EQ(api.count_requests("PATCH", kPiPath, false), patches + 2);  // RUNNING, COMPLETED
}

TEST_F(CopyLifecycleTest, StateIsNotWrittenOnAnApplicationThatReplacedTheOrigin) {
  place_into_b();
  auto& api = *member("a").api;
  // The record of RUNNING is held at a's API server while pi is deleted and created again:
  // the new pi is another application, not yet placed anywhere.
  api.admin("stall", "method=PATCH&count=1&seconds=30&prefix=" + kPiPath);
  const int patches = api.count_requests("PATCH", kPiPath, false);
  set_state("b", "pi", "RUNNING");
  ASSERT_TRUE(until([&] { return api.count_requests("PATCH", kPiPath, false) > patches; }));
  ASSERT_TRUE(member("a").client->remove(kube::spark_application_path("default", "pi")).ok());
  ASSERT_TRUE(
      member("a").create(kube::spark_applications_path("default"), multi_cluster_app("pi")));
  api.admin("release");
  // The record names the uid of the origin it was made for: the server refuses it.
  ASSERT_TRUE(until([&] { return api.count_answers("PATCH", kPiPath, 409) == 1; }));
  EXPECT_EQ(annotation(app("a", "pi"), "gleaner.io/remote-state"), "");
  EXPECT_EQ(member("a").link->retries_waiting(), 0U);
}

TEST_F(CopyLifecycleTest, StateOfACopyBeingDeletedIsNotRecorded) {
  place_into_b();
  set_state("b", "pi", "RUNNING");
  ASSERT_TRUE(
      until([&] { return annotation(app("a", "pi"), "gleaner.io/remote-state") == "RUNNING"; }));
  // Someone deletes the copy in b; b's operator holds it with a finalizer while it tears
  // the application down, and reports its end on the way.
  auto& b = member("b");
  const std::string copy_path = kube::spark_application_path("default", "pi");
  ASSERT_TRUE(b.client
                  ->patch(copy_path, Json{{"metadata", {{"finalizers", {"example.com/teardown"}}}}},
                          kube::PatchType::kMerge)
                  .ok());
  ASSERT_TRUE(b.client->remove(copy_path).ok());
  set_state("b", "pi", "FAILED");
  // b's link sees its SparkApplications in order: once a copy created after these changes
  // has been passed on, so would have been the states of pi.
  create_copy_in_b("marker", "uid-of-no-origin");
  ASSERT_TRUE(until([&] {
    return routed_count([](const gang::Action& x) {
             return x.kind == gang::ActionKind::kMirrorAppState && x.name == "marker";
           }) > 0;
  }));
  EXPECT_EQ(routed_count([](const gang::Action& x) {
              return x.kind == gang::ActionKind::kMirrorAppState && x.message == "FAILED";
            }),
            0U);
  EXPECT_EQ(annotation(app("a", "pi"), "gleaner.io/remote-state"), "RUNNING");
}

}  // namespace
}  // namespace gleaner::scheduler
