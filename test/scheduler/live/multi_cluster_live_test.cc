// Multi-cluster placement of SparkApplications against two instances of the test API
// server as member clusters a and b: an application created (suspended) in a whose gang
// fits only in b is copied into b, with a's copy annotated and left suspended, and its
// driver (created in b, as b's operator would) is bound there; one that fits in a stays
// in a and is released there. The copy's state is recorded on the origin, and the copy is
// deleted with its origin.
#include <algorithm>

#include <gtest/gtest.h>

#include "test/scheduler/live/member_clusters.h"

namespace gleaner::scheduler {
namespace {

using gleaner::testing::eventually;

// One driver and two executors of 1 core each (memory 512m + 384m overhead).
Json multi_cluster_app(const std::string& name, bool suspend = true) {
  return Json{{"apiVersion", "sparkoperator.k8s.io/v1beta2"},
              {"kind", "SparkApplication"},
              {"metadata",
               {{"name", name},
                {"namespace", "default"},
                {"labels", {{"gleaner.io/multi-cluster", "true"}, {"team", "ads"}}}}},
              {"spec",
               {{"type", "Scala"},
                {"suspend", suspend},
                {"mainClass", "Pi"},
                {"driver", {{"cores", 1}, {"memory", "512m"}}},
                {"executor", {{"cores", 1}, {"instances", 2}, {"memory", "512m"}}}}}};
}

// The driver pod an operator creates for application `app`.
Json operator_driver(const std::string& app) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", app + "-driver"},
                {"namespace", "default"},
                {"labels", {{"spark-role", "driver"}, {"sparkoperator.k8s.io/app-name", app}}}}},
              {"spec",
               {{"schedulerName", "gleaner-scheduler"},
                {"containers", {{{"name", "spark"}, {"image", "spark"}}}}}}};
}

class MultiClusterLiveTest : public live_testing::MemberClusters {
 protected:
  void SetUp() override {
    if (!start_servers({"a", "b"})) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py";
    ASSERT_TRUE(member("a").add_node("a1"));
    ASSERT_TRUE(member("b").add_node("b1"));
    connect();
  }
  Json app(const std::string& cluster, const std::string& name) {
    return member(cluster).get(kube::spark_applications_path("default") + "/" + name);
  }
  // "" when the object or the annotation is missing.
  static std::string annotation(const Json& obj, const std::string& key) {
    if (!obj.is_object() || !obj.contains("metadata")) return "";
    const Json& a = obj["metadata"].value("annotations", Json::object());
    return a.value(key, "");
  }
};

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
  // Room appearing later places nothing.
  report("b", "b1", 8000);
  live_->tick();
  EXPECT_EQ(live_->nodes_json()["nodes"][1]["free"]["cpuMillicores"], 8000);
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

// The copy's lifecycle: its state is mirrored onto the origin, and it goes when the origin
// goes (also when the origin went while no scheduler ran).
class CopyLifecycleTest : public MultiClusterLiveTest {
 protected:
  // Each check reads from an API server: poll at a pace it can serve. Deferred retries
  // come after 5 s.
  static bool until(const std::function<bool()>& done) {
    return eventually(done, std::chrono::seconds(15), std::chrono::milliseconds(20));
  }
  // Places "pi" from a into b and returns the copy's uid.
  std::string place_into_b() {
    report("a", "a1", 2000);
    report("b", "b1", 8000);
    EXPECT_TRUE(
        member("a").create(kube::spark_applications_path("default"), multi_cluster_app("pi")));
    EXPECT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));
    return app("b", "pi")["metadata"].value("uid", "");
  }
  void set_state(const std::string& cluster, const std::string& name, const std::string& state) {
    ASSERT_TRUE(member(cluster)
                    .client
                    ->patch(kube::spark_application_path("default", name) + "/status",
                            Json{{"status", {{"applicationState", {{"state", state}}}}}},
                            kube::PatchType::kMerge)
                    .ok());
  }
  // A copy in b of an origin in a with uid `origin_uid`, as a scheduler would have made it.
  void create_copy_in_b(const std::string& name, const std::string& origin_uid) {
    Json copy = multi_cluster_app(name, /*suspend=*/false);
    copy["metadata"]["annotations"] = {{"gleaner.io/placement", "b"},
                                       {"gleaner.io/origin-cluster", "a"},
                                       {"gleaner.io/origin-uid", origin_uid}};
    ASSERT_TRUE(member("b").create(kube::spark_applications_path("default"), copy));
  }
};

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
      for (const auto& [r, m] : member("a").events_about("pi"))
        if (r == "GleanerRemoteState" && m == "its copy in member cluster b is " + state)
          return true;
      return false;
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
  const std::string watch_path = "/apis/sparkoperator.k8s.io/v1beta2/sparkapplications";
  auto& api = *member("a").api;
  const auto watch_gets = [&] {
    return api.count_requests("GET", watch_path, true) +
           api.count_requests("GET", watch_path, false);
  };
  const int before = watch_gets();
  api.admin("stall", "method=GET&count=1&seconds=30&prefix=" + watch_path);
  api.admin("drop-watches");
  ASSERT_TRUE(until([&] { return watch_gets() > before; }));
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
  const std::string path =
      "/apis/sparkoperator.k8s.io/v1beta2/namespaces/default/sparkapplications/pi";
  auto& api = *member("a").api;
  // The record of RUNNING is held at a's API server, COMPLETED is queued behind it, and
  // then RUNNING is refused.
  api.admin("stall", "method=PATCH&count=1&seconds=30&prefix=" + path);
  api.admin("fail", "method=PATCH&count=1&code=500&prefix=" + path);
  const int patches = api.count_requests("PATCH", path, false);
  set_state("b", "pi", "RUNNING");
  ASSERT_TRUE(until([&] { return api.count_requests("PATCH", path, false) > patches; }));
  set_state("b", "pi", "COMPLETED");
  ASSERT_TRUE(until([&] {
    return routed([](const server::Action& x) {
      return x.kind == server::ActionKind::kMirrorAppState && x.message == "COMPLETED";
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
    return member("b").api->count_requests(
               "GET", "/apis/sparkoperator.k8s.io/v1beta2/namespaces/default/sparkapplications/pi",
               false) >= 2;  // the create's conflict check, then the delete's
  }));
  EXPECT_TRUE(app("b", "pi").contains("spec"));
  EXPECT_EQ(annotation(app("b", "pi"), "gleaner.io/origin-cluster"), "");
  EXPECT_EQ(
      member("b").api->count_requests(
          "DELETE", "/apis/sparkoperator.k8s.io/v1beta2/namespaces/default/sparkapplications/pi",
          false),
      0);
}

// The scheduler starts after the clusters changed: what it finds is in its first lists.
class CopyFoundAtStartTest : public CopyLifecycleTest {
 protected:
  void SetUp() override {
    if (!start_servers({"a", "b"})) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py";
    ASSERT_TRUE(member("a").add_node("a1"));
    ASSERT_TRUE(member("b").add_node("b1"));
  }
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
  EXPECT_GE(
      member("b").api->count_requests(
          "DELETE", "/apis/sparkoperator.k8s.io/v1beta2/namespaces/default/sparkapplications/pi",
          false),
      2);
}

}  // namespace
}  // namespace gleaner::scheduler
