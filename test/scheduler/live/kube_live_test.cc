// The live loop against the test API server: node status published from reports (and
// removed on a degraded report), Spark driver and executor pods bound to the nodes the
// core chose, and a driver that never runs reclaimed after driverStartTimeoutSeconds.
#include <algorithm>
#include <thread>

#include <gtest/gtest.h>

#include "common/quantity.h"
#include "test/scheduler/live/kube_live_fixture.h"

namespace gleaner::scheduler {
namespace {

using kube::testing::eventually;
using live_testing::node_report;

using gleaner::kGi;

Json spark_pod(const std::string& name, const std::string& role) {
  return live_testing::spark_operator_pod("pi", name, role);
}

Json spark_application() {
  return live_testing::small_spark_application("pi", 2);
}

using live_testing::KubeLiveTest;

TEST_F(KubeLiveTest, PublishesBatchResourcesAndRemovesThemWhenDegraded) {
  ASSERT_FALSE(live_->apply_report(node_report("n1", 1, 4000, 8 * kGi, "c1")));
  auto status = [&] { return get(kube::node_path("n1"))["status"]; };
  ASSERT_TRUE(eventually([&] {
    const Json s = status();
    const Json* v = find_path(s, "allocatable");
    return v != nullptr && v->is_object() && v->value("kubernetes.io/batch-cpu", "") == "4000";
  }));
  EXPECT_EQ(status()["capacity"]["kubernetes.io/batch-cpu"], "4000");
  EXPECT_EQ(status()["capacity"]["kubernetes.io/batch-memory"], std::to_string(8 * kGi));

  // A 2.5% change stays below resourceDiffThreshold (10%): no write.
  ASSERT_FALSE(live_->apply_report(node_report("n1", 2, 4100, 8 * kGi, "c1")));
  auto degraded = node_report("n1", 3, 0, 0, "c1");
  degraded.batch_allocatable.reset();
  degraded.batch_unavailable_reason = reporter::BatchUnavailableReason::kDegraded;
  ASSERT_FALSE(live_->apply_report(degraded));
  ASSERT_TRUE(eventually([&] {
    const Json s = status();
    return !s["capacity"].contains("kubernetes.io/batch-cpu") &&
           !s["allocatable"].contains("kubernetes.io/batch-memory");
  }));
  // Status patches carry no query string.
  EXPECT_EQ(api_->count_requests("PATCH", "/api/v1/nodes/n1/status", false), 2);
}

TEST_F(KubeLiveTest, TheAckSloConfigsDiffThresholdDecidesWhenStatusIsWrittenAgain) {
  // colocation-config asks for a 1% threshold (the flags say 10%): a 2.5% move is written.
  ASSERT_TRUE(
      client_
          ->create(
              "/api/v1/namespaces/kube-system/configmaps",
              Json{{"metadata", {{"name", "ack-slo-config"}}},
                   {"data",
                    {{"colocation-config", R"({"enable": true, "resourceDiffThreshold": 0.01})"}}}})
          .ok());
  auto batch_cpu = [&] {
    const Json s = get(kube::node_path("n1"))["status"];
    const Json* v = find_path(s, "allocatable");
    return v != nullptr && v->is_object() ? v->value("kubernetes.io/batch-cpu", "") : "";
  };
  // The ConfigMap reaches the link through its watch: report until the move is written.
  uint64_t seq = 0;
  ASSERT_FALSE(live_->apply_report(node_report("n1", ++seq, 4000, 8 * kGi, "c1")));
  ASSERT_TRUE(eventually([&] { return batch_cpu() == "4000"; }));
  int64_t cpu = 4000;
  EXPECT_TRUE(eventually([&] {
    cpu = cpu == 4000 ? 4100 : 4000;  // 2.5% each way
    EXPECT_FALSE(live_->apply_report(node_report("n1", ++seq, cpu, 8 * kGi, "c1")));
    return eventually([&] { return batch_cpu() == std::to_string(cpu); },
                      std::chrono::milliseconds(200));
  })) << "a 2.5% move was not written under a 1% threshold";
}

TEST_F(KubeLiveTest, BindsSparkDriverAndExecutorsToTheChosenNodes) {
  // n1 has room for three 1-CPU pods, n2 for one, n3 for none: the driver goes to the
  // emptiest node (n1), the executors fill the fullest nodes that fit (n2, then n1).
  ASSERT_TRUE(report_room("n1", 4000, 16 * kGi));
  ASSERT_TRUE(report_room("n2", 1000, 16 * kGi));
  ASSERT_TRUE(report_room("n3", 500, 16 * kGi));
  ASSERT_TRUE(client_->create(kube::spark_applications_path("default"), spark_application()).ok());
  ASSERT_TRUE(client_->create(kube::pods_path("default"), spark_pod("pi-driver", "driver")).ok());
  ASSERT_TRUE(schedule_until([&] { return !node_of("pi-driver").empty(); }));
  EXPECT_EQ(node_of("pi-driver"), "n1");

  for (const char* e : {"pi-exec-1", "pi-exec-2"})
    ASSERT_TRUE(client_->create(kube::pods_path("default"), spark_pod(e, "executor")).ok());
  ASSERT_TRUE(schedule_until(
      [&] { return !node_of("pi-exec-1").empty() && !node_of("pi-exec-2").empty(); }));
  std::vector<std::string> nodes{node_of("pi-exec-1"), node_of("pi-exec-2")};
  std::sort(nodes.begin(), nodes.end());
  EXPECT_EQ(nodes, (std::vector<std::string>{"n1", "n2"}));

  auto jobs = live_->jobs_json()["jobs"];
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["phase"], "Admitted");
  EXPECT_EQ(jobs[0]["executors"], 2);
  // Spark's memory: 512m + max(10%, 384m) overhead per pod.
  EXPECT_EQ(jobs[0]["executor"]["memoryBytes"], (512 + 384) * kMi);
  EXPECT_EQ(metrics_.placements(), 1u);
}

TEST_F(KubeLiveTest, SparkReplacingAnExecutorLeavesTheDriverAndTheJobAlone) {
  ASSERT_TRUE(report_room("n1", 2000, 16 * kGi));
  ASSERT_TRUE(report_room("n2", 1000, 16 * kGi));
  ASSERT_TRUE(client_->create(kube::spark_applications_path("default"), spark_application()).ok());
  ASSERT_TRUE(client_->create(kube::pods_path("default"), spark_pod("pi-driver", "driver")).ok());
  for (const char* e : {"pi-exec-1", "pi-exec-2"})
    ASSERT_TRUE(client_->create(kube::pods_path("default"), spark_pod(e, "executor")).ok());
  ASSERT_TRUE(schedule_until([&] {
    return !node_of("pi-driver").empty() && !node_of("pi-exec-1").empty() &&
           !node_of("pi-exec-2").empty();
  }));
  const std::string lost_on = node_of("pi-exec-1");
  auto job_phase = [&] { return live_->jobs_json()["jobs"][0]["phase"].get<std::string>(); };

  // Spark deletes an executor (it failed, or dynamic allocation let it go) and asks for a
  // new one: the driver stays, the job stays admitted, and the new executor takes the room.
  ASSERT_TRUE(client_->remove(kube::pod_path("default", "pi-exec-1")).ok());
  ASSERT_TRUE(client_->create(kube::pods_path("default"), spark_pod("pi-exec-3", "executor")).ok());
  ASSERT_TRUE(schedule_until([&] { return !node_of("pi-exec-3").empty(); }));
  EXPECT_EQ(node_of("pi-exec-3"), lost_on);
  EXPECT_FALSE(node_of("pi-driver").empty()) << "the driver was deleted";
  EXPECT_EQ(job_phase(), "Admitted");
  EXPECT_EQ(metrics_.render(live_->gauges()).find("gleaner_scheduler_reschedules_total 1\n"),
            std::string::npos);

  // The end of the application: the driver succeeds and Spark deletes its executors.
  auto done = client_->patch(kube::pod_path("default", "pi-driver") + "/status",
                             Json{{"status", {{"phase", "Succeeded"}}}}, kube::PatchType::kMerge);
  ASSERT_TRUE(done.ok()) << done.error().message;
  for (const char* e : {"pi-exec-2", "pi-exec-3"})
    ASSERT_TRUE(client_->remove(kube::pod_path("default", e)).ok());
  ASSERT_TRUE(schedule_until([&] { return job_phase() == "Completed"; }));
  EXPECT_EQ(live_->nodes_json()["nodes"][0]["free"]["cpuMillicores"], 2000);
}

TEST_F(KubeLiveTest, DynamicAllocationAdmitsOnInitialExecutorsAndExtrasTakeFreeRoom) {
  // n1 has 3 cores: the gang (driver + the one executor Spark starts with) takes 2; one
  // extra fits.
  ASSERT_TRUE(report_room("n1", 3000, 16 * kGi));
  Json app = spark_application();
  app["spec"]["executor"].erase("instances");
  app["spec"]["dynamicAllocation"] =
      Json{{"enabled", true}, {"initialExecutors", 1}, {"minExecutors", 0}, {"maxExecutors", 4}};
  ASSERT_TRUE(client_->create(kube::spark_applications_path("default"), app).ok());
  ASSERT_TRUE(client_->create(kube::pods_path("default"), spark_pod("pi-driver", "driver")).ok());
  ASSERT_TRUE(schedule_until([&] { return !node_of("pi-driver").empty(); }));
  EXPECT_EQ(live_->jobs_json()["jobs"][0]["executors"], 1);

  // Executors as the webhook leaves them: 1 core and 896 MiB of batch resources each.
  for (const char* e : {"pi-exec-1", "pi-exec-2", "pi-exec-3"}) {
    Json pod = spark_pod(e, "executor");
    pod["spec"]["containers"][0]["resources"]["requests"] =
        Json{{"kubernetes.io/batch-cpu", "1000"}, {"kubernetes.io/batch-memory", "939524096"}};
    pod["spec"]["containers"][0]["resources"]["limits"] =
        pod["spec"]["containers"][0]["resources"]["requests"];
    ASSERT_TRUE(client_->create(kube::pods_path("default"), pod).ok());
  }
  ASSERT_TRUE(schedule_until(
      [&] { return !node_of("pi-exec-1").empty() && !node_of("pi-exec-2").empty(); }));
  // The third has no room: it waits, and says so.
  ASSERT_TRUE(schedule_until([&] {
    const Json waiting = live_->jobs_json()["waiting"];
    return waiting.size() == 1 && waiting[0]["pods"] == Json::array({"pi-exec-3"});
  }));
  EXPECT_TRUE(node_of("pi-exec-3").empty());

  // Spark lets an extra executor go (scale-down): its room goes to the one waiting.
  ASSERT_TRUE(client_->remove(kube::pod_path("default", "pi-exec-2")).ok());
  ASSERT_TRUE(schedule_until([&] { return !node_of("pi-exec-3").empty(); }));
  EXPECT_EQ(live_->jobs_json()["jobs"][0]["phase"], "Admitted");
}

TEST_F(KubeLiveTest, ABurstableDriverGoesWhereRegularAllocatableHasRoom) {
  // Both nodes have 4 cores of allocatable; an LS pod holds 3.5 of n1's. n1 has the most
  // batch room, but a driver that kept its cpu request would be refused there by kubelet.
  for (const char* n : {"n1", "n2"}) {
    auto r = client_->patch(kube::node_status_path(n),
                            Json{{"status", {{"allocatable", {{"cpu", "4"}, {"memory", "16Gi"}}}}}},
                            kube::PatchType::kMerge);
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  Json ls = Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"nodeName": "n1", "containers": [{"name": "web", "image": "nginx",
             "resources": {"requests": {"cpu": "3500m", "memory": "1Gi"}}}]}})");
  ASSERT_TRUE(client_->create(kube::pods_path("default"), ls).ok());
  ASSERT_TRUE(report_room("n1", 8000, 16 * kGi));
  ASSERT_TRUE(report_room("n2", 3000, 16 * kGi));
  // The informers have delivered the Nodes' allocatable and the LS pod.
  ASSERT_TRUE(eventually([&] {
    // A node whose allocatable has not arrived yet shows regularFree as null.
    const Json nodes = live_->nodes_json()["nodes"];
    if (nodes.size() != 2) return false;
    const Json* n1_free = find_path(nodes[0], "regularFree");
    const Json* n2_cpu = find_path(nodes[1], "regularFree/cpuMillicores");
    return n1_free != nullptr &&
           *n1_free == Json{{"cpuMillicores", 500}, {"memoryBytes", 15 * kGi}} &&
           n2_cpu != nullptr && *n2_cpu == 4000;
  })) << live_->nodes_json().dump();

  Json driver = spark_pod("pi-driver", "driver");
  driver["spec"]["containers"][0]["resources"]["requests"] =
      Json{{"cpu", "1"}, {"memory", "896Mi"}};
  Json app = spark_application();
  app["spec"]["executor"]["instances"] = 0;
  ASSERT_TRUE(client_->create(kube::spark_applications_path("default"), app).ok());
  ASSERT_TRUE(client_->create(kube::pods_path("default"), driver).ok());
  ASSERT_TRUE(schedule_until([&] { return !node_of("pi-driver").empty(); }));
  EXPECT_EQ(node_of("pi-driver"), "n2");
}

// An ElasticQuotaTree as ACK documents it: team-a's namespace default may use 2 cores.
Json quota_tree(const std::string& leaf_max_cpu) {
  Json t = Json::parse(R"({
    "apiVersion": "scheduling.sigs.k8s.io/v1beta1", "kind": "ElasticQuotaTree",
    "metadata": {"name": "elasticquotatree", "namespace": "kube-system"},
    "spec": {"root": {"name": "root", "max": {"cpu": 40, "memory": "40Gi"},
                                      "min": {"cpu": 40, "memory": "40Gi"},
      "children": [{"name": "team-a", "namespaces": ["default"],
                    "min": {"cpu": 1, "memory": "1Gi"}, "max": {"cpu": 2, "memory": "8Gi"}}]}}})");
  t["spec"]["root"]["children"][0]["max"]["cpu"] = leaf_max_cpu;
  return t;
}

TEST_F(KubeLiveTest, ElasticQuotaTreeEditsChangeAdmissionWithoutARestart) {
  ASSERT_TRUE(report_room("n1", 8000, 16 * kGi));
  const std::string trees = kube::elastic_quota_trees_path("kube-system");
  ASSERT_TRUE(client_->create(trees, quota_tree("2")).ok());
  auto queue_max = [&]() -> Json {
    const Json queues = live_->queues_json();  // kept: the loop reads into it
    for (const Json& q : queues["queues"])
      if (q["name"] == "team-a") return q["max"]["cpuMillicores"];
    return nullptr;
  };
  ASSERT_TRUE(eventually([&] { return queue_max() == 2000; })) << live_->queues_json().dump();

  // The gang needs 3 cores; team-a (namespace default, no queue label) may use 2.
  ASSERT_TRUE(client_->create(kube::spark_applications_path("default"), spark_application()).ok());
  ASSERT_TRUE(client_->create(kube::pods_path("default"), spark_pod("pi-driver", "driver")).ok());
  ASSERT_TRUE(schedule_until([&] {
    const Json jobs = live_->jobs_json()["jobs"];
    return jobs.size() == 1 && jobs[0]["queue"] == "team-a" &&
           jobs[0]["reason"].get<std::string>().find("max") != std::string::npos;
  })) << live_->jobs_json().dump();
  EXPECT_TRUE(node_of("pi-driver").empty());

  // An invalid edit (min above max) is refused with a Warning Event; the tree stays.
  auto bad = client_->patch(trees + "/elasticquotatree",
                            Json::parse(R"({"spec": {"root": {"name": "root", "children": [
                                {"name": "team-a", "namespaces": ["default"],
                                 "min": {"cpu": 9}, "max": {"cpu": 3}}]}}})"),
                            kube::PatchType::kMerge);
  ASSERT_TRUE(bad.ok()) << bad.error().message;
  ASSERT_TRUE(eventually([&] {
    const Json events = get(kube::events_path("kube-system"));
    for (const Json& e : events.value("items", Json::array()))
      if (e.value("reason", "") == "GleanerInvalidQuotaTree" &&
          e["message"].get<std::string>().find("team-a") != std::string::npos)
        return true;
    return false;
  }));
  EXPECT_EQ(queue_max(), 2000);
  EXPECT_NE(
      metrics_.render(live_->gauges()).find("gleaner_scheduler_quota_trees_rejected_total 1\n"),
      std::string::npos);

  // Raising team-a's max admits the job on the next pass.
  auto replaced = client_->replace(trees + "/elasticquotatree", [&] {
    Json t = quota_tree("4");
    t["metadata"]["resourceVersion"] =
        get(trees + "/elasticquotatree")["metadata"]["resourceVersion"];
    return t;
  }());
  ASSERT_TRUE(replaced.ok()) << replaced.error().message;
  ASSERT_TRUE(schedule_until([&] { return !node_of("pi-driver").empty(); }));
  EXPECT_EQ(live_->jobs_json()["jobs"][0]["queue"], "team-a");
}

TEST_F(KubeLiveTest, CordonedAndTaintedNodesGetNothingWithoutAToleration) {
  // n1: cordoned; n2: tainted for dedicated work; both with room. n3: no room.
  auto patched = [&](const char* node, const Json& patch) {
    auto r = client_->patch(kube::node_path(node), patch, kube::PatchType::kMerge);
    ASSERT_TRUE(r.ok()) << r.error().message;
  };
  patched("n1", Json{{"spec", {{"unschedulable", true}}}});
  patched("n2",
          Json::parse(
              R"({"spec":{"taints":[{"key":"dedicated","value":"db","effect":"NoSchedule"}]}})"));
  auto taints_of = [&](size_t i) { return live_->nodes_json()["nodes"][i]["taints"]; };
  ASSERT_TRUE(report_room("n1", 4000, 16 * kGi));
  ASSERT_TRUE(report_room("n2", 4000, 16 * kGi));
  ASSERT_TRUE(report_room("n3", 500, 16 * kGi));
  ASSERT_TRUE(eventually([&] { return taints_of(0).size() == 1 && taints_of(1).size() == 1; }));
  EXPECT_EQ(taints_of(0)[0], "node.kubernetes.io/unschedulable:NoSchedule");
  EXPECT_EQ(taints_of(1)[0], "dedicated=db:NoSchedule");

  ASSERT_TRUE(client_->create(kube::spark_applications_path("default"), spark_application()).ok());
  ASSERT_TRUE(client_->create(kube::pods_path("default"), spark_pod("pi-driver", "driver")).ok());
  ASSERT_TRUE(eventually([&] { return live_->jobs_json()["jobs"].size() == 1; }));
  for (int pass = 0; pass < 5; ++pass)
    live_->tick();
  EXPECT_EQ(node_of("pi-driver"), "") << "placed on a cordoned or tainted node";

  // Uncordoned: n1 takes the application.
  patched("n1", Json{{"spec", {{"unschedulable", false}}}});
  ASSERT_TRUE(schedule_until([&] { return node_of("pi-driver") == "n1"; }));
}

TEST_F(KubeLiveTest, ATolerationOpensATaintedNode) {
  auto r = client_->patch(
      kube::node_path("n2"),
      Json::parse(
          R"({"spec":{"taints":[{"key":"dedicated","value":"spark","effect":"NoSchedule"}]}})"),
      kube::PatchType::kMerge);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(report_room("n2", 4000, 16 * kGi));
  ASSERT_TRUE(eventually([&] { return live_->nodes_json()["nodes"][0]["taints"].size() == 1; }));
  Json app = spark_application();
  const Json toleration = Json::parse(
      R"([{"key":"dedicated","operator":"Equal","value":"spark","effect":"NoSchedule"}])");
  app["spec"]["driver"]["tolerations"] = toleration;
  app["spec"]["executor"]["tolerations"] = toleration;
  ASSERT_TRUE(client_->create(kube::spark_applications_path("default"), app).ok());
  Json driver = spark_pod("pi-driver", "driver");
  driver["spec"]["tolerations"] = toleration;
  ASSERT_TRUE(client_->create(kube::pods_path("default"), driver).ok());
  ASSERT_TRUE(schedule_until([&] { return node_of("pi-driver") == "n2"; }));
}

TEST_F(KubeLiveTest, ADeletedNodeHasNoBatchRoom) {
  ASSERT_TRUE(report_room("n1", 4000, 16 * kGi));
  ASSERT_TRUE(client_->remove(kube::node_path("n1")).ok());
  // The report still says 4 cores; kubelet admits nothing onto a Node that is gone.
  EXPECT_TRUE(schedule_until([&] {
    return live_testing::batch_room_placeable(*live_, "c1", "n1", 0, 0);
  })) << live_->nodes_json().dump();
}

TEST_F(KubeLiveTest, ReclaimsADriverThatNeverRuns) {
  ASSERT_TRUE(report_room("n1", 4000, 16 * kGi));
  ASSERT_TRUE(client_->create(kube::spark_applications_path("default"), spark_application()).ok());
  ASSERT_TRUE(client_->create(kube::pods_path("default"), spark_pod("pi-driver", "driver")).ok());
  ASSERT_TRUE(schedule_until([&] { return node_of("pi-driver") == "n1"; }));

  // The test server never runs pods: past driverStartTimeoutSeconds (300) the job is
  // reclaimed, its driver deleted and an Event says why.
  clock_.advance(std::chrono::seconds(301));
  ASSERT_TRUE(schedule_until([&] {
    auto pod = client_->get(kube::pod_path("default", "pi-driver"));
    return !pod.ok() && pod.error().code == ErrorCode::kNotFound;
  }));
  ASSERT_TRUE(eventually([&] {
    const Json events = get(kube::events_path("default"));
    if (!events.contains("items")) return false;
    for (const Json& e : events["items"])
      if (e["reason"] == "GleanerRescheduled" && e["involvedObject"]["name"] == "pi-driver")
        return true;
    return false;
  }));
  EXPECT_NE(metrics_.render(live_->gauges()).find("gleaner_scheduler_reschedules_total 1\n"),
            std::string::npos);

  // Nobody re-creates the driver: when the job's turn comes again it is withdrawn and
  // holds no room on n1.
  auto job_phase = [&](size_t i) {
    auto jobs = live_->jobs_json()["jobs"];
    return jobs.size() > i ? jobs[i]["phase"].get<std::string>() : std::string();
  };
  ASSERT_TRUE(schedule_until([&] { return job_phase(0) == "Withdrawn"; }));
  auto n1_free = [&] { return live_->nodes_json()["nodes"][0]["free"]["cpuMillicores"]; };
  EXPECT_EQ(n1_free(), 4000);

  // A driver created afterwards starts a new job, which is placed and bound.
  ASSERT_TRUE(client_->create(kube::pods_path("default"), spark_pod("pi-driver", "driver")).ok());
  ASSERT_TRUE(schedule_until([&] { return node_of("pi-driver") == "n1"; }));
  EXPECT_EQ(job_phase(1), "Admitted");
  EXPECT_EQ(job_phase(0), "Withdrawn");
}

}  // namespace
}  // namespace gleaner::scheduler
