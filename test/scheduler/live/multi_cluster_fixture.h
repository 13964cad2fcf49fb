#pragma once
// Two member clusters, a and b, each an instance of the test API server with a scheduler
// link, and the SparkApplications the multi-cluster tests place between them.

#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "test/scheduler/live/member_clusters.h"

namespace gleaner::scheduler::live_testing {

// One driver and two executors of 1 core each (memory 512m + 384m overhead).
inline Json multi_cluster_app(const std::string& name, bool suspend = true) {
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
inline Json operator_driver(const std::string& app) {
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

class MultiClusterLiveTest : public MemberClusters {
 protected:
  void SetUp() override {
    start_clusters();
    if (!IsSkipped() && !HasFatalFailure()) connect();
  }
  // Clusters a and b, with Node a1 and b1; the test skips without python3.
  void start_clusters() {
    if (!start_servers({"a", "b"})) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py";
    ASSERT_TRUE(member("a").add_node("a1"));
    ASSERT_TRUE(member("b").add_node("b1"));
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

// The copy's lifecycle: its state is mirrored onto the origin, and it goes when the origin
// goes (also when the origin went while no scheduler ran).
class CopyLifecycleTest : public MultiClusterLiveTest {
 protected:
  // Each check reads from an API server: poll at a pace it can serve. Deferred retries
  // come after 5 s.
  static inline const std::string kPiPath =
      "/apis/sparkoperator.k8s.io/v1beta2/namespaces/default/sparkapplications/pi";

  static bool until(const std::function<bool()>& done) {
    return gleaner::testing::eventually(done, std::chrono::seconds(15),
                                        std::chrono::milliseconds(20));
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
  // Drops the SparkApplication watch of `cluster`'s link and holds its return (up to 30 s,
  // or until /_admin/release): that link's cache of SparkApplications stands still.
  void hold_spark_app_watch(const std::string& cluster) {
    const std::string watch_path = "/apis/sparkoperator.k8s.io/v1beta2/sparkapplications";
    auto& api = *member(cluster).api;
    const auto watch_gets = [&] {
      return api.count_requests("GET", watch_path, true) +
             api.count_requests("GET", watch_path, false);
    };
    const int before = watch_gets();
    api.admin("stall", "method=GET&count=1&seconds=30&prefix=" + watch_path);
    api.admin("drop-watches");
    ASSERT_TRUE(until([&] { return watch_gets() > before; }));
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

}  // namespace gleaner::scheduler::live_testing
