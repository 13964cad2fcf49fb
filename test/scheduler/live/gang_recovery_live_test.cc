// The gang layer against the test API server after an earlier scheduler process stopped
// mid-gang (SIGKILL, SIGTERM, a lost Lease): what that process left is what the API server
// holds, some pods of a gang bound and the rest pending, and this process finishes the gangs;
// and bindings the API server refuses (500, 429) are tried again, the pod never deleted.
#include <gtest/gtest.h>

#include "kube/well_known.h"
#include "test/scheduler/live/kube_live_fixture.h"

namespace gleaner::scheduler {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace gang_recovery_live_test {
namespace {

using kube::testing::eventually;
using live_testing::KubeLiveTest;
using live_testing::node_report;

constexpr int64_t kGiB = int64_t{1} << 30;

// Pod deletions the API server saw (none may come from a restart or a failed binding).
int pod_deletions(kube::testing::TestApiServer& api) {
  int n = 0;
  for (const Json& r : api.admin_get("requests")) {
    const std::string path = r.value("path", "");
    if (r.value("method", "") == "DELETE" && path.starts_with("/api/v1/namespaces/default/pods/"))
      ++n;
  }
  return n;
}

// A pod as an earlier scheduler process left it: bound to `node` ("" pending).
Json left_behind(Json pod, const std::string& node) {
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

Json pod_group_member(const std::string& name) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", "default"},
                {"labels", {{kube::kPodGroupNameLabel, "pgb"}, {kube::kPodGroupMinLabel, "4"}}}}},
              {"spec",
               {{"schedulerName", "gleaner-scheduler"},
                {"containers",
                 {{{"name", "c"},
                   {"image", "busybox"},
                   {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}}}}}}};
}

TEST_F(KubeLiveTest, GangsHalfBoundByAnEarlierProcessAreFinished) {
  // n1 has 1 core left beside what is bound there, n2 has 4 free.
  ASSERT_TRUE(report_room("n1", 6000, 64 * kGiB));
  ASSERT_TRUE(report_room("n2", 4000, 64 * kGiB));
  // A pod group of 4 (min-available 4): pgb-0 and pgb-1 bound, pgb-2 and pgb-3 pending.
  for (const char* name : {"pgb-0", "pgb-1", "pgb-2", "pgb-3"}) {
    const std::string node = std::string(name) < "pgb-2" ? "n1" : "";
    ASSERT_TRUE(
        client_->create(kube::pods_path("default"), left_behind(pod_group_member(name), node))
            .ok());
  }
  // A SparkApplication of 4 executors: its driver and two executors bound, two pending.
  ASSERT_TRUE(client_
                  ->create(kube::spark_applications_path("default"),
                           live_testing::small_spark_application("pi", 4))
                  .ok());
  for (const char* name : {"pi-driver", "pi-exec-1", "pi-exec-2", "pi-exec-3", "pi-exec-4"}) {
    const std::string role = std::string(name) == "pi-driver" ? "driver" : "executor";
    const std::string node =
        std::string(name) == "pi-exec-3" || std::string(name) == "pi-exec-4" ? "" : "n1";
    ASSERT_TRUE(client_
                    ->create(kube::pods_path("default"),
                             left_behind(live_testing::spark_operator_pod("pi", name, role), node))
                    .ok());
  }
  // The scheduler starts now, as after a restart: its informers list every pod at once.
  // (Created under a running link, the pods arrive one by one, and a pass between them
  // would place the pending ones beside bound pods it has not seen yet.)
  start_link();
  ASSERT_TRUE(schedule_until([&] {
    return !node_of("pgb-2").empty() && !node_of("pgb-3").empty() &&
           !node_of("pi-exec-3").empty() && !node_of("pi-exec-4").empty();
  })) << live_->jobs_json().dump();
  // The pending ones went where the rest fit; the bound ones were left where they are.
  EXPECT_EQ(node_of("pgb-2"), "n2");
  EXPECT_EQ(node_of("pgb-3"), "n2");
  EXPECT_EQ(node_of("pgb-0"), "n1");
  EXPECT_EQ(node_of("pi-driver"), "n1");
  EXPECT_EQ(pod_deletions(*api_), 0);
  const Json jobs = live_->jobs_json()["jobs"];
  ASSERT_EQ(jobs.size(), 2u) << jobs.dump();
  for (const Json& j : jobs)
    EXPECT_EQ(j["phase"], "Admitted") << j.dump();
  const std::string text = metrics_.render(live_->gauges());
  EXPECT_NE(text.find("gleaner_scheduler_recovered_gangs_total{outcome=\"resumed\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gleaner_scheduler_partial_gangs 0"), std::string::npos);
}

TEST_F(KubeLiveTest, ABindingRefusedWith500Or429IsTriedAgainAndThePodKept) {
  ASSERT_TRUE(report_room("n1", 4000, 16 * kGiB));
  const std::string binding = "/api/v1/namespaces/default/pods/pgb-0/binding";
  api_->admin("fail", "method=POST&count=2&code=500&prefix=" + binding);
  Json pod = pod_group_member("pgb-0");
  pod["metadata"]["labels"][kube::kPodGroupMinLabel] = "1";
  ASSERT_TRUE(client_->create(kube::pods_path("default"), pod).ok());
  ASSERT_TRUE(eventually([&] { return !get(kube::pod_path("default", "pgb-0")).is_null(); }));
  const std::string uid = get(kube::pod_path("default", "pgb-0"))["metadata"]["uid"];
  ASSERT_TRUE(schedule_until([&] { return !node_of("pgb-0").empty(); }));
  EXPECT_EQ(node_of("pgb-0"), "n1");
  EXPECT_EQ(get(kube::pod_path("default", "pgb-0"))["metadata"]["uid"], uid);  // never deleted
  EXPECT_EQ(api_->count_requests("POST", binding, false), 3);

  // 429 (an API server shedding load) the same way, for another pod.
  const std::string binding1 = "/api/v1/namespaces/default/pods/pgb-1/binding";
  api_->admin("fail", "method=POST&count=2&code=429&prefix=" + binding1);
  Json second = pod_group_member("pgb-1");
  second["metadata"]["labels"][kube::kPodGroupNameLabel] = "other";
  second["metadata"]["labels"][kube::kPodGroupMinLabel] = "1";
  ASSERT_TRUE(client_->create(kube::pods_path("default"), second).ok());
  ASSERT_TRUE(schedule_until([&] { return !node_of("pgb-1").empty(); }));
  EXPECT_EQ(pod_deletions(*api_), 0);
  const std::string text = metrics_.render(live_->gauges());
  EXPECT_NE(text.find("gleaner_scheduler_bind_failures_total{cause=\"server_error\"} 2"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace gang_recovery_live_test
}  // namespace gleaner::scheduler
