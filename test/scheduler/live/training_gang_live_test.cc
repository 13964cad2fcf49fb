// A cluster's own Kubeflow training jobs (PyTorchJob; mpi-operator's MPIJob) against the
// test API server: each job is one gang, placed whole or not at all, and a hub's copy the
// scheduler no longer holds room for is treated the same way.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/quantity.h"
#include "test/scheduler/live/kube_live_fixture.h"

namespace gleaner::scheduler {
namespace {

using kube::testing::eventually;
using live_testing::KubeLiveTest;
using live_testing::node_report;

using gleaner::kGi;

// A cluster's own PyTorchJobs, submitted to it (no hub): each job is one gang. Two jobs of
// a master and two workers (a core each) beside a node with room for four such pods: placed
// pod by pod, each job would get two pods and neither could train; as gangs, one job gets
// all three and the other waits whole until that one ends. A job whose master is deleted
// while it runs is reclaimed whole.
TEST_F(KubeLiveTest, AClustersOwnPyTorchJobsArePlacedWholeOrNotAtAll) {
  ASSERT_FALSE(live_->apply_report(node_report("n1", 1, 4000, 16 * kGi, "c1")));
  const std::string jobs = "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs";
  for (const char* name : {"a", "b"})
    ASSERT_TRUE(client_->create(jobs, live_testing::pytorch_job(name, 2, 0)).ok());
  // The training operator creates every pod of both jobs at once, interleaved.
  for (int i = 0; i < 2; ++i) {
    for (const char* name : {"a", "b"}) {
      const Json pod = live_testing::training_operator_pod(name, i == 0 ? "master" : "worker", 0);
      ASSERT_TRUE(client_->create(kube::pods_path("default"), pod).ok());
    }
  }
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(client_
                    ->create(kube::pods_path("default"),
                             live_testing::training_operator_pod(name, "worker", 1))
                    .ok());
  }
  auto bound = [&](const std::string& job) {
    int n = 0;
    for (const char* pod : {"-master-0", "-worker-0", "-worker-1"})
      n += node_of(job + pod).empty() ? 0 : 1;
    return n;
  };
  ASSERT_TRUE(schedule_until([&] { return bound("a") == 3 || bound("b") == 3; }))
      << "a: " << bound("a") << " pods bound, b: " << bound("b");
  const std::string first = bound("a") == 3 ? "a" : "b";
  const std::string second = first == "a" ? "b" : "a";
  for (int i = 0; i < 3; ++i)
    live_->tick();
  EXPECT_EQ(bound(second), 0) << "the second job got part of the room";
  EXPECT_EQ(node_of(first + "-master-0"), "n1");

  // The first job ends (its master succeeds, then its workers): the second gets it all.
  for (const char* pod : {"-master-0", "-worker-0", "-worker-1"}) {
    auto done = client_->patch(kube::pod_path("default", first + pod) + "/status",
                               Json{{"status", {{"phase", "Succeeded"}}}}, kube::PatchType::kMerge);
    ASSERT_TRUE(done.ok()) << done.error().message;
  }
  ASSERT_TRUE(schedule_until([&] { return bound(second) == 3; }))
      << second << ": " << bound(second) << " pods bound";
  EXPECT_TRUE(get(kube::pod_path("default", first + "-worker-1")).contains("spec"))
      << "a worker that succeeded was deleted as if its job were lost";

  // The second job's master is deleted while it runs (an eviction): the job cannot go on
  // without it, so the whole job is reclaimed (its workers deleted) and queued again.
  ASSERT_TRUE(client_->remove(kube::pod_path("default", second + "-master-0")).ok());
  EXPECT_TRUE(schedule_until([&] {
    return !get(kube::pod_path("default", second + "-worker-0")).contains("spec") &&
           !get(kube::pod_path("default", second + "-worker-1")).contains("spec");
  })) << "the workers of a job without its master were left holding room";
}

// The same for a cluster's own MPIJobs: two jobs of a launcher and two workers beside room
// for four such pods. Placed pod by pod, each job could hold part of the room and neither
// run mpirun; as gangs, one job gets its launcher and both workers, the other nothing until
// the first ends.
TEST_F(KubeLiveTest, AClustersOwnMpiJobsArePlacedWholeOrNotAtAll) {
  ASSERT_FALSE(live_->apply_report(node_report("n1", 1, 4000, 16 * kGi, "c1")));
  const std::string jobs = "/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs";
  for (const char* name : {"a", "b"})
    ASSERT_TRUE(client_->create(jobs, live_testing::mpi_job(name, 2)).ok());
  // Workers first, as mpi-operator makes them before the launcher's Job, interleaved.
  for (int i = 0; i < 2; ++i) {
    for (const char* name : {"a", "b"})
      ASSERT_TRUE(client_
                      ->create(kube::pods_path("default"),
                               live_testing::mpi_operator_pod(name, "worker", i))
                      .ok());
  }
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(client_
                    ->create(kube::pods_path("default"),
                             live_testing::mpi_operator_pod(name, "launcher", 0))
                    .ok());
  }
  const std::vector<std::string> pods = {"-launcher-x7k2p", "-worker-0", "-worker-1"};
  auto bound = [&](const std::string& job) {
    int n = 0;
    for (const std::string& pod : pods)
      n += node_of(job + pod).empty() ? 0 : 1;
    return n;
  };
  ASSERT_TRUE(schedule_until([&] { return bound("a") == 3 || bound("b") == 3; }))
      << "a: " << bound("a") << " pods bound, b: " << bound("b") << "; "
      << live_->jobs_json().dump();
  const std::string first = bound("a") == 3 ? "a" : "b";
  const std::string second = first == "a" ? "b" : "a";
  for (int i = 0; i < 3; ++i)
    live_->tick();
  EXPECT_EQ(bound(second), 0) << "the second job got part of the room";

  // The first job ends (its launcher succeeds, then its workers): the second gets it all.
  for (const std::string& pod : pods) {
    auto done = client_->patch(kube::pod_path("default", first + pod) + "/status",
                               Json{{"status", {{"phase", "Succeeded"}}}}, kube::PatchType::kMerge);
    ASSERT_TRUE(done.ok()) << done.error().message;
  }
  EXPECT_TRUE(schedule_until([&] { return bound(second) == 3; }))
      << second << ": " << bound(second) << " pods bound";
}

// A hub's PyTorchJob copied into this cluster before the scheduler restarted: no placement
// holds its room here any more, so its roles are queued as one gang in this cluster, and
// its pods are placed whole rather than one by one.
TEST_F(KubeLiveTest, AHubsCopyFromBeforeARestartIsPlacedWhole) {
  ASSERT_FALSE(live_->apply_report(node_report("n1", 1, 2000, 16 * kGi, "c1")));
  Json copy = live_testing::pytorch_job("mnist", 2, 0);
  copy["metadata"]["annotations"] = {{"gleaner.io/origin-cluster", "hub"},
                                     {"gleaner.io/placement", "c1"}};
  ASSERT_TRUE(client_->create("/apis/kubeflow.org/v1/namespaces/default/pytorchjobs", copy).ok());
  for (const auto& [type, index] :
       {std::pair{"master", 0}, std::pair{"worker", 0}, std::pair{"worker", 1}}) {
    ASSERT_TRUE(client_
                    ->create(kube::pods_path("default"),
                             live_testing::training_operator_pod("mnist", type, index))
                    .ok());
  }
  // Room for two of its three pods: placed whole, none of them binds.
  for (int i = 0; i < 5; ++i)
    live_->tick();
  ASSERT_TRUE(eventually([&] {
    live_->tick();
    return live_->jobs_json()["jobs"].size() == 1;
  })) << live_->jobs_json().dump();
  EXPECT_TRUE(node_of("mnist-master-0").empty());
  EXPECT_TRUE(node_of("mnist-worker-0").empty());
  // The node grows to three cores: all three bind.
  ASSERT_FALSE(live_->apply_report(node_report("n1", 2, 3000, 16 * kGi, "c1")));
  EXPECT_TRUE(schedule_until([&] {
    return !node_of("mnist-master-0").empty() && !node_of("mnist-worker-0").empty() &&
           !node_of("mnist-worker-1").empty();
  }));
}

}  // namespace
}  // namespace gleaner::scheduler
