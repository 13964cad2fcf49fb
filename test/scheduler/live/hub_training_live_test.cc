// Kubeflow training jobs (PyTorchJob, TFJob, MPIJob) from a fleet's hub: a job a policy governs is
// placed whole (every role) into a member whose batch capacity and free GPUs fit it; the
// pods the member's training operator creates take the room reserved for their role and
// index; the copy's state comes back to the hub; Karmada mode writes the job's
// ResourceBinding; a job the hub cannot read is refused with an Event naming the field.
#include <gtest/gtest.h>

#include "test/scheduler/live/hub_fixture.h"

namespace gleaner::scheduler::live_testing {
namespace {

const std::string kPyTorchJobs = "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs";
const std::string kTfJobs = "/apis/kubeflow.org/v1/namespaces/default/tfjobs";
const std::string kMpiJobs = "/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs";
const std::string kBindings = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings";

// A policy of the hub's group selecting every job of `kind` at `api_version`.
Json job_policy(const std::string& group, const std::string& kind,
                const std::string& api_version = "kubeflow.org/v1") {
  Json p = policy(group, false, {});
  p["metadata"]["name"] = "training-policy";
  p["spec"]["resourceSelectors"] = Json::array({{{"apiVersion", api_version}, {"kind", kind}}});
  return p;
}

class HubTrainingLiveTest : public HubLiveTest {
 protected:
  Json job(const std::string& cluster, const std::string& collection, const std::string& name) {
    return member(cluster).get(collection + "/" + name);
  }
};

TEST_F(HubTrainingLiveTest, APyTorchJobWithGpusLandsWhereGpusAreFreeAndItsPodsTakeItsRoom) {
  give_gpus(2);
  ASSERT_TRUE(
      member("hub").create(policies_path(group(), false), job_policy(group(), "PyTorchJob")));
  ASSERT_TRUE(member("hub").create(kPyTorchJobs, pytorch_job("mnist", 1, 1)));
  ASSERT_TRUE(schedule_until([&] { return job("b", kPyTorchJobs, "mnist").contains("spec"); }))
      << "a fits its cpu and memory better, but has no GPU";
  EXPECT_FALSE(job("a", kPyTorchJobs, "mnist").contains("spec"));
  const Json copy = job("b", kPyTorchJobs, "mnist");
  EXPECT_EQ(annotation(copy, "gleaner.io/origin-cluster"), "hub");
  EXPECT_EQ(copy["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"], 1);
  EXPECT_TRUE(until([&] {
    return annotation(job("hub", kPyTorchJobs, "mnist"), "gleaner.io/placement") == "b";
  }));
  EXPECT_TRUE(until([&] {
    return member("hub").has_event("mnist", "GleanerPlacedRemote", "master on node b/b1");
  }));

  // b's training operator creates the master and the worker: each takes its reserved room.
  ASSERT_TRUE(
      member("b").create(kube::pods_path("default"), training_operator_pod("mnist", "worker", 0)));
  ASSERT_TRUE(
      member("b").create(kube::pods_path("default"), training_operator_pod("mnist", "master", 0)));
  EXPECT_TRUE(until([&] {
    return member("b").node_of("mnist-master-0") == "b1" &&
           member("b").node_of("mnist-worker-0") == "b1";
  }));
  // The worker fails and its operator re-creates it (restartPolicy OnFailure): the new pod
  // takes the room its role and index keep; the job is not reclaimed.
  ASSERT_TRUE(member("b").client->remove(kube::pod_path("default", "mnist-worker-0")).ok());
  ASSERT_TRUE(until([&] {
    return !member("b").get(kube::pod_path("default", "mnist-worker-0")).contains("spec");
  }));
  ASSERT_TRUE(
      member("b").create(kube::pods_path("default"), training_operator_pod("mnist", "worker", 0)));
  EXPECT_TRUE(until([&] { return member("b").node_of("mnist-worker-0") == "b1"; }));
  for (int i = 0; i < 3; ++i)
    live_->tick();
  EXPECT_TRUE(job("b", kPyTorchJobs, "mnist").contains("spec")) << "not reclaimed";
  EXPECT_FALSE(member("hub").has_event("mnist", "GleanerReclaimed"));

  // The operator's state shows on the hub object.
  ASSERT_TRUE(member("b")
                  .client
                  ->patch(kPyTorchJobs + "/mnist/status",
                          Json{{"status",
                                {{"conditions",
                                  {{{"type", "Created"}, {"status", "True"}},
                                   {{"type", "Running"}, {"status", "True"}}}}}}},
                          kube::PatchType::kMerge)
                  .ok());
  EXPECT_TRUE(until([&] {
    return annotation(job("hub", kPyTorchJobs, "mnist"), "gleaner.io/remote-state") == "Running";
  }));
  // The Event follows the annotation (two writes): wait for it as well.
  EXPECT_TRUE(until(
      [&] { return member("hub").has_event("mnist", "GleanerRemoteState", "member cluster b"); }));

  // Its two pods hold both of b1's GPUs: a second job waits for GPUs.
  ASSERT_TRUE(member("hub").create(kPyTorchJobs, pytorch_job("mnist2", 1, 1)));
  ASSERT_TRUE(schedule_until(
      [&] { return member("hub").has_event("mnist2", "GleanerPending", "or GPUs"); }));
  EXPECT_FALSE(placement_sent("mnist2"));

  // Deleting the hub object deletes the copy.
  ASSERT_TRUE(member("hub").client->remove(kPyTorchJobs + "/mnist").ok());
  EXPECT_TRUE(until([&] { return !job("b", kPyTorchJobs, "mnist").contains("spec"); }));
}

// An MPIJob (kubeflow.org/v2beta1) on the hub: a launcher and four workers, 5 cores, which
// only b has. Its copy goes to b, and the pods b's mpi-operator makes (the launcher without
// an index) take the room reserved for them there.
TEST_F(HubTrainingLiveTest, AnMpiJobGoesWholeToTheMemberItFitsAndItsPodsTakeItsRoom) {
  ASSERT_TRUE(member("hub").create(policies_path(group(), false),
                                   job_policy(group(), "MPIJob", "kubeflow.org/v2beta1")));
  ASSERT_TRUE(member("hub").create(kMpiJobs, mpi_job("pi", 4)));
  ASSERT_TRUE(schedule_until([&] { return job("b", kMpiJobs, "pi").contains("spec"); }))
      << "a has 4 cores, the job needs 5";
  EXPECT_FALSE(job("a", kMpiJobs, "pi").contains("spec"));
  const Json copy = job("b", kMpiJobs, "pi");
  EXPECT_EQ(copy["apiVersion"], "kubeflow.org/v2beta1");
  EXPECT_EQ(copy["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"], 4);
  EXPECT_TRUE(
      until([&] { return annotation(job("hub", kMpiJobs, "pi"), "gleaner.io/placement") == "b"; }));
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(
        member("b").create(kube::pods_path("default"), mpi_operator_pod("pi", "worker", i)));
  ASSERT_TRUE(
      member("b").create(kube::pods_path("default"), mpi_operator_pod("pi", "launcher", 0)));
  EXPECT_TRUE(until([&] {
    for (const char* pod :
         {"pi-launcher-x7k2p", "pi-worker-0", "pi-worker-1", "pi-worker-2", "pi-worker-3"}) {
      if (member("b").node_of(pod) != "b1") return false;
    }
    return true;
  }));
}

TEST_F(HubTrainingLiveTest, AJobTheHubCannotReadIsRefusedWithAnEventNamingTheField) {
  ASSERT_TRUE(
      member("hub").create(policies_path(group(), false), job_policy(group(), "PyTorchJob")));
  Json bad = pytorch_job("typo", 1, 0);
  bad["spec"]["pytorchReplicaSpecs"]["Wrker"] = training_replica_spec(1, 0);
  ASSERT_TRUE(member("hub").create(kPyTorchJobs, bad));
  EXPECT_TRUE(until([&] {
    return member("hub").has_event("typo", "GleanerInvalid", "pytorchReplicaSpecs.Wrker");
  }));
  EXPECT_TRUE(until([&] {
    return metrics_.render({}).find("gleaner_scheduler_hub_jobs_rejected_total 1\n") !=
           std::string::npos;
  }));
  for (int i = 0; i < 5; ++i)
    live_->tick();
  EXPECT_FALSE(placement_sent("typo")) << "nothing is propagated";
  EXPECT_FALSE(job("a", kPyTorchJobs, "typo").contains("spec"));
  EXPECT_FALSE(job("b", kPyTorchJobs, "typo").contains("spec"));
}

TEST_F(HubTrainingLiveTest, ATfJobsResourceBindingNamesTheMemberItsRolesFit) {
  Json karmada = job_policy(group(), "TFJob");
  karmada["spec"]["schedulerName"] = "gleaner-scheduler";
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), karmada));
  // A chief, two parameter servers and two workers: 5 cores, which only b has.
  Json tf{{"apiVersion", "kubeflow.org/v1"},
          {"kind", "TFJob"},
          {"metadata", {{"name", "dist"}, {"namespace", "default"}}},
          {"spec",
           {{"tfReplicaSpecs",
             {{"Chief", training_replica_spec(1, 0)},
              {"PS", training_replica_spec(2, 0)},
              {"Worker", training_replica_spec(2, 0)}}}}}};
  ASSERT_TRUE(member("hub").create(kTfJobs, tf));
  const Json hub_obj = member("hub").get(kTfJobs + "/dist");
  Json binding{{"apiVersion", "work.karmada.io/v1alpha2"},
               {"kind", "ResourceBinding"},
               {"metadata", {{"name", "dist-tfjob"}, {"namespace", "default"}}},
               {"spec",
                {{"resource",
                  {{"apiVersion", "kubeflow.org/v1"},
                   {"kind", "TFJob"},
                   {"namespace", "default"},
                   {"name", "dist"},
                   {"uid", hub_obj["metadata"]["uid"]}}},
                 {"schedulerName", "gleaner-scheduler"}}}};
  ASSERT_TRUE(member("hub").create(kBindings, binding));
  ASSERT_TRUE(schedule_until([&] {
    const Json b = member("hub").get(kBindings + "/dist-tfjob");
    const Json* c = b.is_object() ? find_path(b, "spec/clusters") : nullptr;
    return c != nullptr && c->is_array() && c->size() == 1 && (*c)[0].value("name", "") == "b";
  })) << "a has 4 cores, the job needs 5";
  EXPECT_EQ(annotation(member("hub").get(kTfJobs + "/dist"), "gleaner.io/placement"), "b");
  EXPECT_FALSE(job("b", kTfJobs, "dist").contains("spec")) << "Karmada propagates it";
}

// A master that does not run within the start timeout (1 s here): the job is withdrawn from
// its member (copy and pods) and placed into another.
class HubTrainingReclaimLiveTest : public HubTrainingLiveTest {
 protected:
  int64_t driver_start_timeout() const override { return 1; }
};

TEST_F(HubTrainingReclaimLiveTest, AMasterThatDoesNotRunIsReclaimedIntoAnotherMember) {
  ASSERT_TRUE(
      member("hub").create(policies_path(group(), false), job_policy(group(), "PyTorchJob")));
  ASSERT_TRUE(member("hub").create(kPyTorchJobs, pytorch_job("mnist", 1, 0)));
  ASSERT_TRUE(schedule_until([&] { return job("a", kPyTorchJobs, "mnist").contains("spec"); }))
      << "a is the best fit";
  // a's operator creates the master; it is bound but never runs (no kubelet starts it).
  ASSERT_TRUE(
      member("a").create(kube::pods_path("default"), training_operator_pod("mnist", "master", 0)));
  EXPECT_TRUE(until([&] { return member("a").node_of("mnist-master-0") == "a1"; }));
  ASSERT_TRUE(schedule_until([&] { return job("b", kPyTorchJobs, "mnist").contains("spec"); }));
  EXPECT_TRUE(until([&] { return !job("a", kPyTorchJobs, "mnist").contains("spec"); }));
  EXPECT_TRUE(until([&] {
    return !member("a").get(kube::pod_path("default", "mnist-master-0")).contains("spec");
  }));
  const Json hub_obj = job("hub", kPyTorchJobs, "mnist");
  EXPECT_EQ(annotation(hub_obj, "gleaner.io/placement"), "b");
  EXPECT_EQ(annotation(hub_obj, "gleaner.io/reclaims"), "1");
  EXPECT_TRUE(until(
      [&] { return member("hub").has_event("mnist", "GleanerReclaimed", "member cluster a"); }));
}

}  // namespace
}  // namespace gleaner::scheduler::live_testing
