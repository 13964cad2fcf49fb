// The jobs the fleet places whole, as roles: Kubeflow training jobs (replicas, per-pod
// request with containers summed and the larger init container counted, GPUs, priority
// class, selector; unknown roles and bad replica counts named) and SparkApplications (a
// driver and its executors sized by Spark's memory rules).
#include "scheduler/kube/job_roles.h"

#include <gtest/gtest.h>

#include "common/json_util.h"
#include "common/quantity.h"
#include "kube/yaml_json.h"

namespace gleaner::scheduler::kube_glue {
namespace {

using gleaner::kGi;

Result<TrainingJob> parse_yaml(const std::string& yaml) {
  auto json = kube::yaml_to_json(yaml, "job.yaml");
  EXPECT_TRUE(json.ok());
  return parse_hub_job(*json);
}

TEST(JobRoles, APyTorchJobsMasterAndWorkersWithGpus) {
  auto job = parse_yaml(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: mnist, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 3
      template:
        spec:
          priorityClassName: koord-batch
          nodeSelector: {accelerator: a10}
          tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
          containers:
          - name: pytorch
            resources:
              limits: {nvidia.com/gpu: 1, cpu: "4", memory: 16Gi}
          - name: sidecar
            resources: {requests: {cpu: 500m, memory: 512Mi}}
    Master:
      replicas: 1
      template:
        spec:
          initContainers:
          - {name: fetch, resources: {requests: {cpu: "2", memory: 1Gi}}}
          containers:
          - {name: pytorch, resources: {requests: {cpu: "1", memory: 2Gi}}}
)");
  ASSERT_TRUE(job.ok()) << job.error().message;
  ASSERT_EQ(job->roles.size(), 2U);
  const JobRole& master = job->roles[0];
  EXPECT_EQ(master.name, "Master") << "the operator's order, not the file's";
  EXPECT_EQ(master.request, (Resources{2000, 2 * kGi})) << "max(init 2 CPUs, containers 1)";
  EXPECT_EQ(master.request.gpus, 0);
  const JobRole& worker = job->roles[1];
  EXPECT_EQ(worker.replicas, 3);
  // Requests default to limits; the sidecar adds its own.
  EXPECT_EQ(worker.request, (Resources{4500, 16 * kGi + 512 * 1024 * 1024, 1}));
  EXPECT_EQ(worker.request.gpus, 1);
  EXPECT_EQ(worker.priority_class, "koord-batch");
  EXPECT_TRUE(worker.selector.admits({{"accelerator", "a10"}},
                                     {{"nvidia.com/gpu", "", TaintEffect::kNoSchedule}}));
  EXPECT_FALSE(worker.selector.matches({{"accelerator", "t4"}}));
  const ComponentSet set = component_set(*job);
  ASSERT_EQ(set.size(), 2U);
  EXPECT_EQ(set[1].replicas, 3);
}

TEST(JobRoles, TfJobRolesAndBadInput) {
  auto tf = parse_yaml(R"(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: dist, namespace: ml}
spec:
  tfReplicaSpecs:
    PS: {replicas: 2, template: {spec: {containers: [{name: tf, resources: {requests: {cpu: "1"}}}]}}}
    Chief: {replicas: 1, template: {spec: {containers: [{name: tf}]}}}
    Evaluator: {replicas: 0, template: {spec: {containers: [{name: tf}]}}}
)");
  ASSERT_TRUE(tf.ok()) << tf.error().message;
  ASSERT_EQ(tf->roles.size(), 3U);
  EXPECT_EQ(tf->roles[0].name, "Chief");
  EXPECT_EQ(tf->roles[1].name, "PS");
  EXPECT_EQ(component_set(*tf).size(), 2U) << "no Evaluator replicas";

  auto error = [](const std::string& yaml) {
    auto j = parse_yaml(yaml);
    return j.ok() ? std::string("ok") : j.error().message;
  };
  const std::string head =
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\n"
      "metadata: {name: j, namespace: n}\n";
  EXPECT_NE(error(head + "spec: {pytorchReplicaSpecs: {Chief: {}}}").find("Chief: unknown role"),
            std::string::npos);
  EXPECT_NE(error(head + "spec: {pytorchReplicaSpecs: {Worker: {replicas: -1, template: "
                         "{spec: {containers: [{name: c}]}}}}}")
                .find("Worker.replicas"),
            std::string::npos);
  EXPECT_NE(
      error(head + "spec: {pytorchReplicaSpecs: {Worker: {replicas: 1}}}").find("Worker.template"),
      std::string::npos);
  EXPECT_NE(error(head + "spec: {}").find("pytorchReplicaSpecs"), std::string::npos);
  EXPECT_NE(error("apiVersion: kubeflow.org/v1\nkind: XGBoostJob\nmetadata: {name: j}\nspec: {}")
                .find("kind: expected PyTorchJob, TFJob or MPIJob"),
            std::string::npos);
  // Each kind at its own API version: mpi-operator v2's MPIJob is v2beta1.
  EXPECT_NE(error("apiVersion: kubeflow.org/v1\nkind: MPIJob\nmetadata: {name: j}\nspec: {}")
                .find("apiVersion: expected kubeflow.org/v2beta1"),
            std::string::npos);
}

// An MPIJob as mpi-operator v2's users write it (the shape of its examples/v2beta1/pi):
// Launcher and Worker under spec.mpiReplicaSpecs, the launcher leading, requests defaulted
// to limits, the schedulerName read from the templates. runLauncherAsWorker is refused by
// name: its workers are labelled from index 1, which no room of the job matches.
TEST(JobRoles, AnMpiJobsLauncherLeadsItsWorkers) {
  const std::string text = R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: pi, namespace: hpc}
spec:
  slotsPerWorker: 1
  runPolicy: {cleanPodPolicy: Running, ttlSecondsAfterFinished: 60}
  sshAuthMountPath: /home/mpiuser/.ssh
  mpiReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          schedulerName: gleaner-scheduler
          containers:
          - name: mpi-worker
            image: mpioperator/mpi-pi:openmpi
            command: [/usr/sbin/sshd]
            args: [-De, -f, /home/mpiuser/.sshd_config]
            resources: {limits: {cpu: 2, memory: 4Gi, nvidia.com/gpu: 1}}
    Launcher:
      replicas: 1
      template:
        spec:
          schedulerName: gleaner-scheduler
          containers:
          - name: mpi-launcher
            image: mpioperator/mpi-pi:openmpi
            command: [mpirun]
            args: [-n, "2", /home/mpiuser/pi]
            resources: {limits: {cpu: 1, memory: 1Gi}}
)";
  auto job = parse_yaml(text);
  ASSERT_TRUE(job.ok()) << job.error().message;
  EXPECT_EQ(job->kind, "MPIJob");
  EXPECT_EQ(job->ns, "hpc");
  ASSERT_EQ(job->roles.size(), 2U);
  EXPECT_EQ(job->roles[0].name, "Launcher") << "the leader first, whatever the file's order";
  EXPECT_EQ(job->roles[0].replicas, 1);
  EXPECT_EQ(job->roles[0].request, (Resources{1000, kGi}));
  EXPECT_EQ(job->roles[1].name, "Worker");
  EXPECT_EQ(job->roles[1].replicas, 2);
  EXPECT_EQ(job->roles[1].request, (Resources{2000, 4 * kGi, 1}));
  EXPECT_EQ(component_set(*job).size(), 2U);
  auto json = kube::yaml_to_json(text, "pi.yaml");
  ASSERT_TRUE(json.ok());
  EXPECT_TRUE(names_scheduler(*json, "gleaner-scheduler"));
  EXPECT_FALSE(names_scheduler(*json, "volcano"));

  auto error = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    auto j = parse_yaml(t);
    return j.ok() ? std::string("ok") : j.error().message;
  };
  EXPECT_NE(error("  slotsPerWorker: 1", "  runLauncherAsWorker: true")
                .find("MPIJob hpc/pi: spec.runLauncherAsWorker: not supported"),
            std::string::npos);
  EXPECT_EQ(error("  slotsPerWorker: 1", "  runLauncherAsWorker: false"), "ok");
  EXPECT_NE(error("    Launcher:", "    Master:").find("spec.mpiReplicaSpecs.Master: unknown role"),
            std::string::npos);
}

TEST(JobRoles, TheGuidesSparkApplicationIsADriverAndItsExecutors) {
  // The Spark-on-idle-resources guide's spark-pi (fields the sizing reads).
  auto job = parse_yaml(R"(
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata: {name: spark-pi, namespace: spark}
spec:
  type: Scala
  driver: {cores: 1, coreLimit: 1000m, memory: 512m, priorityClassName: low-priority}
  executor:
    cores: 1
    instances: 2
    memory: 1g
    priorityClassName: low-priority
    nodeSelector: {pool: spark}
)");
  ASSERT_TRUE(job.ok()) << job.error().message;
  ASSERT_EQ(job->roles.size(), 2U);
  EXPECT_EQ(job->roles[0].name, "Driver");
  EXPECT_EQ(job->roles[0].replicas, 1);
  // 512 MiB + max(10%, 384 MiB) of overhead.
  EXPECT_EQ(job->roles[0].request, (Resources{1000, (512 + 384) * 1024 * 1024}));
  EXPECT_EQ(job->roles[1].replicas, 2);
  EXPECT_EQ(job->roles[1].request, (Resources{1000, (1024 + 384) * 1024 * 1024}));
  EXPECT_EQ(job->roles[1].priority_class, "low-priority");
  EXPECT_TRUE(job->roles[1].selector.matches({{"pool", "spark"}}));
  EXPECT_FALSE(job->roles[1].selector.matches({}));
  EXPECT_TRUE(job->roles[0].selector.matches({})) << "the driver has no selector";
  auto via_hub = parse_yaml(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: j, namespace: n}
spec: {pytorchReplicaSpecs: {Worker: {template: {spec: {containers: [{name: c}]}}}}}
)");
  ASSERT_TRUE(via_hub.ok());
  auto json = kube::yaml_to_json(
      "apiVersion: sparkoperator.k8s.io/v1beta2\n"
      "kind: SparkApplication\nmetadata: {name: a, namespace: n}\n"
      "spec: {type: Python, executor: {instances: 1}}\n",
      "a.yaml");
  auto hub = parse_hub_job(*json);
  ASSERT_TRUE(hub.ok()) << hub.error().message;
  EXPECT_EQ(hub->kind, "SparkApplication");
}

}  // namespace
}  // namespace gleaner::scheduler::kube_glue
