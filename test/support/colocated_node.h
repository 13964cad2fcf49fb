#pragma once
// A colocated node on real cgroups, as the integration tests and benchmarks need it: one LS
// pod (Burstable) and one BE pod (BestEffort, labelled koordinator.sh/qosClass=BE) under a
// scratch kubepods tree, a pods file naming both, an ack-slo-config directory holding the
// given resource-threshold-config (and resource-qos-config), and on cgroup v1 a pod for the
// agent itself. Everything is removed with the object.

#include <string>

#include "test/support/scratch_cgroup.h"
#include "test/support/temp_tree.h"

namespace gleaner::testing {

struct ColocatedNodeSpec {
  // The pods' spec.containers as JSON arrays.
  std::string ls_containers = R"([{"name":"c","resources":{"requests":{"cpu":"1"}}}])";
  std::string be_containers = R"([{"name":"c"}])";
  // The resource-threshold-config value (JSON).
  std::string threshold_config =
      R"({"clusterStrategy":{"enable":true,"cpuSuppressPolicy":"cfsQuota"}})";
  // The resource-qos-config value (JSON); empty: none (every QoS class off).
  std::string qos_config;
  // Non-empty: the BE pod's first container has started with this (containerd) id, its
  // cgroup exists under the pod's, and the pods file reports it in containerStatuses.
  std::string be_container_id;
};

class ColocatedNode {
 public:
  explicit ColocatedNode(const ColocatedNodeSpec& spec = {});

  [[nodiscard]] ScratchCgroups& scratch() { return scratch_; }
  [[nodiscard]] const std::string& root() const { return scratch_.root(); }
  // Cgroup directories relative to the root, as the agent names them.
  [[nodiscard]] const std::string& ls_pod() const { return ls_pod_; }
  [[nodiscard]] const std::string& be_pod() const { return be_pod_; }
  [[nodiscard]] const std::string& ls_qos() const { return ls_qos_; }
  [[nodiscard]] const std::string& be_qos() const { return be_qos_; }
  // The BE container's cgroup (empty without ColocatedNodeSpec::be_container_id).
  [[nodiscard]] const std::string& be_container() const { return be_container_; }
  [[nodiscard]] std::string pods_file() const { return files_ / "pods.json"; }
  // The `tasks` file of the agent's own pod, as the DaemonSet makes it (Burstable, cpu
  // request 50m, limit 500m; not in the pods file, so what it uses counts as system usage),
  // to which a single thread can be moved. Empty on cgroup v2, where threads of one process
  // cannot be split across pods.
  [[nodiscard]] const std::string& agent_tasks_file() const { return agent_tasks_file_; }
  // That pod's cgroup directory (relative to the root), on every cgroup version: where an
  // agent run as its own process goes.
  [[nodiscard]] const std::string& agent_pod() const { return agent_pod_; }
  [[nodiscard]] std::string config_dir() const { return files_ / "config"; }

 private:
  ScratchCgroups scratch_;
  TempDir files_;
  std::string ls_pod_;
  std::string be_pod_;
  std::string ls_qos_;
  std::string be_qos_;
  std::string be_container_;
  std::string agent_tasks_file_;
  std::string agent_pod_;
};

}  // namespace gleaner::testing
