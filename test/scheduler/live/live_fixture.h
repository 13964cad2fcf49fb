#pragma once
// Shared pieces of the live-mode tests: a thread-safe clock that can jump ahead, node
// reports, and an HTTP server on loopback run by an io_context on its own thread.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "common/clock.h"
#include "common/json_util.h"
#include "reporter/wire/node_report.h"
#include "scheduler/gang/gang_scheduler.h"
#include "scheduler/server/live_metrics.h"
#include "scheduler/server/scheduler_port.h"
#include "test/support/io_thread.h"

namespace gleaner::scheduler::live_testing {

// The system clock plus an offset the test moves forward (read from several threads).
class JumpClock final : public Clock {
 public:
  [[nodiscard]] SteadyTime now() const override {
    return std::chrono::steady_clock::now() + std::chrono::nanoseconds(offset_.load());
  }
  [[nodiscard]] WallTime wall_now() const override {
    return std::chrono::system_clock::now() +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(
               std::chrono::nanoseconds(offset_.load()));
  }
  void advance(std::chrono::seconds by) {
    offset_ += std::chrono::duration_cast<std::chrono::nanoseconds>(by).count();
  }

 private:
  std::atomic<int64_t> offset_{0};
};

inline reporter::NodeReport node_report(const std::string& node, uint64_t sequence,
                                        int64_t cpu_milli, int64_t memory_bytes,
                                        const std::string& cluster = "") {
  reporter::NodeReport r;
  r.node = node;
  r.cluster = cluster;
  r.sequence = sequence;
  r.timestamp_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  r.capacity = {32000, int64_t{64} << 30};
  r.allocatable = r.capacity;
  r.batch_allocatable = reporter::ResourceAmounts{cpu_milli, memory_bytes};
  r.suppress.policy = "none";
  return r;
}

// Whether the scheduler places within all of a node's reported batch room: a node's room
// is the smaller of its report and the figure its Node shows to the cluster's informer
// (docs/scheduler.md, "Node status"), which arrives a moment after the report is written.
// Tests that compare nodes or clusters wait for it, or see the one whose figure came first.
inline bool batch_room_placeable(const gang::GangScheduler& live, const std::string& cluster,
                                 const std::string& node, int64_t cpu_milli, int64_t memory_bytes) {
  const Json nodes = live.nodes_json();
  for (const Json& n : nodes["nodes"]) {
    if (n["cluster"] == cluster && n["name"] == node)
      return n["batch"]["cpuMillicores"] == cpu_milli && n["batch"]["memoryBytes"] == memory_bytes;
  }
  return false;
}

using gleaner::testing::IoThread;

// A pending pod of ours in c1 alone (no gang): `cpu_milli` and 1 GiB of batch resources.
inline gang::PodView lone_batch_pod(const std::string& ns, const std::string& name,
                                    int64_t cpu_milli) {
  gang::PodView pod;
  pod.cluster = "c1";
  pod.ns = ns;
  pod.name = name;
  pod.uid = ns + "/" + name;
  pod.phase = "Pending";
  pod.ours = true;
  pod.batch = true;
  pod.request = Resources{cpu_milli, int64_t{1} << 30};
  return pod;
}

// A pod as the Spark operator creates it for the SparkApplication `app`: labelled with its
// role (driver or executor) and application, scheduled by gleaner-scheduler.
inline Json spark_operator_pod(const std::string& app, const std::string& name,
                               const std::string& role) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", "default"},
                {"labels",
                 {{"spark-role", role},
                  {"spark-app-selector", "spark-" + app},
                  {"sparkoperator.k8s.io/app-name", app}}}}},
              {"spec",
               {{"schedulerName", "gleaner-scheduler"},
                {"containers", {{{"name", "spark"}, {"image", "spark"}}}}}}};
}

// A SparkApplication in "default": a driver and `executors` executors of 1 core and 512m each.
inline Json small_spark_application(const std::string& app, int executors) {
  return Json{{"apiVersion", "sparkoperator.k8s.io/v1beta2"},
              {"kind", "SparkApplication"},
              {"metadata", {{"name", app}, {"namespace", "default"}}},
              {"spec",
               {{"type", "Scala"},
                {"driver", {{"cores", 1}, {"memory", "512m"}}},
                {"executor", {{"cores", 1}, {"instances", executors}, {"memory", "512m"}}}}}};
}

// A replica spec: `replicas` pods of 1 core, 1 GiB and `gpus` GPUs, for gleaner-scheduler.
inline Json training_replica_spec(int replicas, int gpus) {
  Json resources{{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}};
  if (gpus > 0) resources["limits"] = {{"nvidia.com/gpu", std::to_string(gpus)}};
  return Json{{"replicas", replicas},
              {"restartPolicy", "OnFailure"},
              {"template",
               {{"spec",
                 {{"schedulerName", "gleaner-scheduler"},
                  {"containers",
                   {{{"name", "pytorch"}, {"image", "pytorch"}, {"resources", resources}}}}}}}}};
}

// A PyTorchJob in "default" as a user submits it (to a fleet's hub, or to its own
// cluster): a master and `workers` workers.
inline Json pytorch_job(const std::string& name, int workers, int gpus) {
  return Json{{"apiVersion", "kubeflow.org/v1"},
              {"kind", "PyTorchJob"},
              {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec",
               {{"pytorchReplicaSpecs",
                 {{"Master", training_replica_spec(1, gpus)},
                  {"Worker", training_replica_spec(workers, gpus)}}}}}};
}

// The pod the training operator creates for role `type` (lower case) index `index`.
inline Json training_operator_pod(const std::string& job, const std::string& type, int index) {
  const std::string i = std::to_string(index);
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", job + "-" + type + "-" + i},
                {"namespace", "default"},
                {"labels",
                 {{"training.kubeflow.org/job-name", job},
                  {"training.kubeflow.org/operator-name", "pytorchjob-controller"},
                  {"training.kubeflow.org/replica-type", type},
                  {"training.kubeflow.org/replica-index", i}}}}},
              {"spec",
               {{"schedulerName", "gleaner-scheduler"},
                {"containers",
                 {{{"name", "pytorch"},
                   {"image", "pytorch"},
                   {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}}}}}}};
}

// An MPIJob (mpi-operator v2, kubeflow.org/v2beta1) in "default": a launcher and `workers`
// workers of a core each.
inline Json mpi_job(const std::string& name, int workers) {
  return Json{{"apiVersion", "kubeflow.org/v2beta1"},
              {"kind", "MPIJob"},
              {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec",
               {{"slotsPerWorker", 1},
                {"mpiReplicaSpecs",
                 {{"Launcher", training_replica_spec(1, 0)},
                  {"Worker", training_replica_spec(workers, 0)}}}}}};
}

// A pod as mpi-operator v2 labels it (pkg/controller/mpi_job_controller.go, defaultLabels
// and newWorker): operator-name mpi-operator, job-name, job-role; a worker's replica-index,
// none on the launcher, whose pod its batch Job names with a random suffix.
inline Json mpi_operator_pod(const std::string& job, const std::string& role, int index) {
  Json pod = training_operator_pod(job, role, index);
  Json& labels = pod["metadata"]["labels"];
  labels.erase("training.kubeflow.org/replica-type");
  labels["training.kubeflow.org/operator-name"] = "mpi-operator";
  labels["training.kubeflow.org/job-role"] = role;
  if (role == "launcher") {
    labels.erase("training.kubeflow.org/replica-index");
    pod["metadata"]["name"] = job + "-launcher-x7k2p";
  }
  return pod;
}

// A live loop managing the one cluster c1, whose node n1 has reported 8 CPUs and `memory`
// bytes of batch capacity; nullptr when either step is refused.
inline std::unique_ptr<gang::GangScheduler> one_node_live(const Clock& clock,
                                                          server::LiveMetrics& metrics,
                                                          int64_t memory,
                                                          bool require_node_objects = false) {
  gang::GangOptions options;
  options.clusters = {"c1"};
  options.require_node_objects = require_node_objects;
  auto live = gang::GangScheduler::create(options, {}, clock, metrics);
  if (!live.ok() || (*live)->apply_report(node_report("n1", 1, 8000, memory, "c1"))) return nullptr;
  return std::move(*live);
}

// one_node_live with 64 GiB of batch memory, every action it takes recorded.
class RecordedOneNodeLive : public ::testing::Test {
 protected:
  static constexpr int64_t kGiB = int64_t{1} << 30;
  void SetUp() override {
    live = one_node_live(clock, metrics, 64 * kGiB);
    ASSERT_NE(live, nullptr);
    live->set_sinks([this](gang::Action a) { actions.push_back(std::move(a)); }, nullptr);
  }
  // Actions of `kind` taken so far (about the object `name` only, when given).
  [[nodiscard]] size_t count(gang::ActionKind kind, const std::string& name = "") const {
    return static_cast<size_t>(std::count_if(actions.begin(), actions.end(), [&](const auto& a) {
      return a.kind == kind && (name.empty() || a.name == name);
    }));
  }
  SystemClock clock;
  server::LiveMetrics metrics;
  std::unique_ptr<gang::GangScheduler> live;
  std::vector<gang::Action> actions;
};

}  // namespace gleaner::scheduler::live_testing
