// The kinds a fleet places (API paths), a training job's state from its conditions, a
// training job as the live loop's application (roles, GPUs as regular resources, merged
// selectors, a template sized in batch resources), and the training operator's pods read
// as replicas of their job's role and index.
#include "scheduler/kube/job_kinds.h"

#include <gtest/gtest.h>

#include "common/json_util.h"
#include "common/quantity.h"
#include "kube/yaml_json.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/kube/pod_view.h"

namespace gleaner::scheduler::kube_glue {
namespace {

using gleaner::kGi;

Json yaml(const std::string& text) {
  auto json = kube::yaml_to_json(text, "object.yaml");
  EXPECT_TRUE(json.ok());
  return json.ok() ? *json : Json();
}

TEST(JobKinds, PathsOfEachKind) {
  EXPECT_EQ(app_object_path("PyTorchJob", "ml", "mnist"),
            "/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs/mnist");
  EXPECT_EQ(app_object_path("TFJob", "ml"), "/apis/kubeflow.org/v1/namespaces/ml/tfjobs");
  EXPECT_EQ(app_object_path("TFJob", ""), "/apis/kubeflow.org/v1/tfjobs");
  EXPECT_EQ(app_object_path("SparkApplication", "spark", "pi"),
            "/apis/sparkoperator.k8s.io/v1beta2/namespaces/spark/sparkapplications/pi");
  // mpi-operator v2 serves MPIJobs at kubeflow.org/v2beta1 (its CRD mpijobs.kubeflow.org).
  EXPECT_EQ(app_object_path("MPIJob", "ml", "pi"),
            "/apis/kubeflow.org/v2beta1/namespaces/ml/mpijobs/pi");
  EXPECT_EQ(find_app_kind("XGBoostJob"), nullptr);
  EXPECT_EQ(app_api_version("TFJob"), "kubeflow.org/v1");
}

TEST(JobKinds, TheStateIsTheNewestTrueCondition) {
  EXPECT_EQ(training_job_state(yaml("status: {}")), "");
  EXPECT_EQ(training_job_state(yaml(R"(
status:
  conditions:
  - {type: Created, status: "True"}
  - {type: Running, status: "True"}
  - {type: Succeeded, status: "False"}
)")),
            "Running");
  EXPECT_EQ(training_job_state(yaml(R"(
status:
  conditions:
  - {type: Created, status: "True"}
  - {type: Running, status: "False"}
  - {type: Failed, status: "True"}
)")),
            "Failed");
}

TEST(JobKinds, ATrainingJobIsOneGangOfItsRoles) {
  const Json object = yaml(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: mnist
  namespace: ml
  uid: u-1
  labels: {gleaner.io/queue: team-a}
  annotations: {gleaner.io/placement: b, gleaner.io/origin-cluster: hub}
spec:
  pytorchReplicaSpecs:
    Master:
      template:
        spec:
          nodeSelector: {pool: gpu}
          containers:
          - name: pytorch
            resources:
              requests: {kubernetes.io/batch-cpu: "2000", kubernetes.io/batch-memory: 4Gi}
              limits: {nvidia.com/gpu: 1}
    Worker:
      replicas: 0
      template:
        spec:
          containers: [{name: pytorch, resources: {requests: {cpu: "1"}}}]
)");
  auto job = parse_training_job(object);
  ASSERT_TRUE(job.ok()) << job.error().message;
  const gang::AppView v = training_app_view(*job, object, "hub");
  EXPECT_EQ(v.kind, "PyTorchJob");
  EXPECT_EQ(v.uid, "u-1");
  EXPECT_EQ(v.queue, "team-a");
  EXPECT_EQ(v.placement, "b");
  EXPECT_EQ(v.origin, "hub");
  ASSERT_EQ(v.shape.roles.size(), 1U) << "a role without replicas is left out";
  const RoleSpec& master = v.shape.roles[0];
  EXPECT_EQ(master.name, "Master");
  EXPECT_EQ(master.replicas, 1);
  EXPECT_EQ(master.batch, (Resources{2000, 4 * kGi, 0})) << "the template's batch resources";
  EXPECT_EQ(master.regular, (Resources{0, 0, 1})) << "GPUs are admitted against allocatable";
  EXPECT_TRUE(v.selector.matches({{"pool", "gpu"}}));
  EXPECT_FALSE(v.selector.matches({{"pool", "cpu"}}));
}

// Kubeflow's own examples (pytorch simple.yaml and cpu-demo, TFJob dist-mnist) set no
// resources: their pods are BestEffort and run under kube-scheduler. Shaped like those
// (written here), each is accepted and placed whole, taking no batch room.
TEST(JobKinds, TrainingJobsWhosePodsRequestNothingArePlacedAndTakeNoRoom) {
  const Json pytorch = yaml(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: hello-ddp, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - {name: pytorch, image: example.com/ddp:1, command: [python3, /train.py, --epochs=1]}
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - {name: pytorch, image: example.com/ddp:1, command: [python3, /train.py, --epochs=1]}
)");
  const Json tf = yaml(R"(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: digits, namespace: ml}
spec:
  tfReplicaSpecs:
    PS:
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: example.com/tf:1}]}}
    Worker:
      replicas: 4
      template: {spec: {containers: [{name: tensorflow, image: example.com/tf:1}]}}
)");
  Scheduler s(SchedulerPolicy{}, *QuotaTree::build({}), ClusterState());
  const Resources node_batch{8000, 8 * kGi, 0};
  ASSERT_TRUE(s.upsert_node(NodeInfo{"n-1", "", {}, node_batch}, 0).ok());
  ASSERT_TRUE(s.upsert_node(NodeInfo{"n-2", "", {}, node_batch}, 0).ok());
  size_t pods = 0;
  for (const Json* object : {&pytorch, &tf}) {
    auto job = parse_training_job(*object);
    ASSERT_TRUE(job.ok()) << job.error().message;
    const gang::AppView v = training_app_view(*job, *object, "");
    JobSpec spec;
    spec.name = v.name;
    spec.kind = v.kind;
    spec.roles = v.shape.roles;
    for (const RoleSpec& r : spec.roles)
      EXPECT_EQ(r.batch, Resources{}) << v.name << " role " << r.name;
    auto id = s.submit(spec);
    ASSERT_TRUE(id.ok()) << id.error().message;
    pods += static_cast<size_t>(v.name == "digits" ? 6 : 2);
  }
  auto decisions = s.schedule(0);
  ASSERT_EQ(decisions.size(), 2U);
  size_t placed = 0;
  for (const auto& d : decisions) {
    EXPECT_EQ(d.kind, DecisionKind::kAdmit);
    placed += s.job(d.job).pods.size();
  }
  EXPECT_EQ(placed, pods) << "every pod of both jobs has a node";
  // No room taken: the nodes' batch is all free for the next job.
  for (const char* name : {"n-1", "n-2"})
    EXPECT_EQ(s.clusters().node(*s.clusters().find_node(name)).free(), node_batch) << name;
}

Json operator_pod(const std::string& operator_name, const std::string& index) {
  return yaml(R"(
apiVersion: v1
kind: Pod
metadata:
  name: mnist-worker-3
  namespace: ml
  uid: p-1
  labels:
    training.kubeflow.org/job-name: mnist
    training.kubeflow.org/operator-name: )" +
              operator_name + R"(
    training.kubeflow.org/replica-type: worker
    training.kubeflow.org/replica-index: ")" +
              index + R"("
spec:
  schedulerName: gleaner-scheduler
  containers: [{name: pytorch, resources: {requests: {cpu: "1", memory: 1Gi}}}]
)");
}

TEST(JobKinds, TheTrainingOperatorsPodsAreReplicasOfTheirRole) {
  auto pod = kube::parse_pod(operator_pod("pytorchjob-controller", "3"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  const gang::PodView v = pod_view(*pod, "b", "gleaner-scheduler", nullptr);
  EXPECT_EQ(v.role, gang::PodRole::kReplica);
  EXPECT_EQ(v.gang, "PyTorchJob:mnist") << "apart from a SparkApplication of that name";
  EXPECT_EQ(v.replica_type, "worker");
  EXPECT_EQ(v.replica_index, 3);

  auto tf = kube::parse_pod(operator_pod("tfjob-controller", "0"));
  ASSERT_TRUE(tf.ok());
  EXPECT_EQ(pod_view(*tf, "b", "gleaner-scheduler", nullptr).gang, "TFJob:mnist");
  // An index that is not a number, or an operator of another kind: a pod like any other.
  for (const auto& [op, index] :
       {std::pair{"pytorchjob-controller", "x"}, std::pair{"mpijob-controller", "0"}}) {
    auto other = kube::parse_pod(operator_pod(op, index));
    ASSERT_TRUE(other.ok());
    EXPECT_EQ(pod_view(*other, "b", "gleaner-scheduler", nullptr).role, gang::PodRole::kNone)
        << op << " " << index;
  }
}

// mpi-operator v2's pods (pkg/controller/mpi_job_controller.go, defaultLabels): job-name,
// operator-name mpi-operator and job-role launcher | worker, no replica-type; workers carry
// replica-index, the launcher none (its one pod is index 0).
Json mpi_pod(const std::string& role, const std::string& index) {
  Json pod = yaml(R"(
apiVersion: v1
kind: Pod
metadata:
  name: pi-x
  namespace: hpc
  uid: p-2
  labels:
    training.kubeflow.org/job-name: pi
    training.kubeflow.org/operator-name: mpi-operator
spec:
  schedulerName: gleaner-scheduler
  containers: [{name: mpi, resources: {requests: {cpu: "1", memory: 1Gi}}}]
)");
  pod["metadata"]["labels"]["training.kubeflow.org/job-role"] = role;
  if (!index.empty()) pod["metadata"]["labels"]["training.kubeflow.org/replica-index"] = index;
  return pod;
}

TEST(JobKinds, MpiOperatorsPodsAreReplicasOfTheLauncherOrAWorker) {
  std::string asked;
  auto lookup = [&](const std::string& kind, const std::string& ns,
                    const std::string& name) -> std::optional<gang::AppView> {
    asked = kind + " " + ns + "/" + name;
    return std::nullopt;
  };
  auto launcher = kube::parse_pod(mpi_pod("launcher", ""));
  ASSERT_TRUE(launcher.ok()) << launcher.error().message;
  const gang::PodView l = pod_view(*launcher, "b", "gleaner-scheduler", nullptr, lookup);
  EXPECT_EQ(l.role, gang::PodRole::kReplica);
  EXPECT_EQ(l.gang, "MPIJob:pi");
  EXPECT_EQ(l.replica_type, "launcher");
  EXPECT_EQ(l.replica_index, 0);
  EXPECT_EQ(asked, "MPIJob hpc/pi");
  EXPECT_EQ(l.waiting_for, "waiting for MPIJob hpc/pi");

  auto worker = kube::parse_pod(mpi_pod("worker", "1"));
  ASSERT_TRUE(worker.ok());
  const gang::PodView w = pod_view(*worker, "b", "gleaner-scheduler", nullptr);
  EXPECT_EQ(w.role, gang::PodRole::kReplica);
  EXPECT_EQ(w.gang, "MPIJob:pi");
  EXPECT_EQ(w.replica_type, "worker");
  EXPECT_EQ(w.replica_index, 1);
  // A worker without its index is no replica (only the launcher goes without one).
  auto unindexed = kube::parse_pod(mpi_pod("worker", ""));
  ASSERT_TRUE(unindexed.ok());
  EXPECT_EQ(pod_view(*unindexed, "b", "gleaner-scheduler", nullptr).role, gang::PodRole::kNone);
}

// A replica carries its job's roles (its gang, when no placement holds room for it) and the
// job's queue; one whose job is not known yet waits.
TEST(JobKinds, AReplicaCarriesItsOwnJobsRolesAndWaitsForAnUnknownJob) {
  auto pod = kube::parse_pod(operator_pod("pytorchjob-controller", "1"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  gang::AppView job;
  job.kind = "PyTorchJob";
  job.cluster = "b";
  job.queue = "ml-team";
  job.shape.roles = {RoleSpec{"Master", {1000, 1 << 30, 0}, 1},
                     RoleSpec{"Worker", {1000, 1 << 30, 0}, 2}};
  std::string asked;
  auto lookup = [&](const std::string& kind, const std::string& ns,
                    const std::string& name) -> std::optional<gang::AppView> {
    asked = kind + " " + ns + "/" + name;
    return job;
  };
  gang::PodView own = pod_view(*pod, "b", "gleaner-scheduler", nullptr, lookup);
  EXPECT_EQ(asked, "PyTorchJob ml/mnist");
  ASSERT_TRUE(own.shape.has_value());
  EXPECT_EQ(own.shape->roles.size(), 2u);
  EXPECT_EQ(own.queue, "ml-team") << "the job's queue, the pod naming none";
  EXPECT_TRUE(own.waiting_for.empty());

  job.origin = "hub";  // a hub's copy: the same (the gang layer knows whether room is held)
  EXPECT_TRUE(pod_view(*pod, "b", "gleaner-scheduler", nullptr, lookup).shape.has_value());

  auto unknown = [](const std::string&, const std::string&, const std::string&) {
    return std::optional<gang::AppView>();
  };
  const gang::PodView waiting = pod_view(*pod, "b", "gleaner-scheduler", nullptr, unknown);
  EXPECT_FALSE(waiting.shape.has_value());
  EXPECT_EQ(waiting.waiting_for, "waiting for PyTorchJob ml/mnist");
}

TEST(JobKinds, ATrainingJobIsOursWhenARoleTemplateNamesOurScheduler) {
  Json job = yaml(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: mnist, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: c}]}}}
    Worker: {replicas: 2, template: {spec: {schedulerName: gleaner-scheduler, containers: [{name: c}]}}}
)");
  EXPECT_TRUE(names_scheduler(job, "gleaner-scheduler"));
  EXPECT_FALSE(names_scheduler(job, "volcano"));
  job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"].erase("schedulerName");
  EXPECT_FALSE(names_scheduler(job, "gleaner-scheduler")) << "the default scheduler's job";
}

}  // namespace
}  // namespace gleaner::scheduler::kube_glue
