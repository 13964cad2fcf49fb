#include "test/support/colocated_node.h"

#include <filesystem>

#include "cgroup/cgroup_fs.h"
#include "cgroup/executor.h"
#include "cgroup/layout.h"

namespace gleaner::testing {

ColocatedNode::ColocatedNode(const ColocatedNodeSpec& spec) {
  const cgroup::KubeletLayout layout(cgroup::CgroupDriver::kCgroupfs);
  ls_pod_ = layout.pod_dir(cgroup::KubeQos::kBurstable, "ls-uid");
  be_pod_ = layout.pod_dir(cgroup::KubeQos::kBestEffort, "be-uid");
  ls_qos_ = layout.qos_dir(cgroup::KubeQos::kBurstable);
  be_qos_ = layout.qos_dir(cgroup::KubeQos::kBestEffort);
  scratch_.mkdir(ls_pod_);
  scratch_.mkdir(be_pod_);
  std::string be_statuses;
  if (!spec.be_container_id.empty()) {
    be_container_ = *layout.container_dir(cgroup::KubeQos::kBestEffort, "be-uid",
                                          "containerd://" + spec.be_container_id);
    scratch_.mkdir(be_container_);
    be_statuses = R"(,"containerStatuses":[{"name":"c","containerID":"containerd://)" +
                  spec.be_container_id + R"("}])";
  }
  // The agent's own pod, as the DaemonSet makes it (Burstable, cpu request 50m, limit 500m).
  agent_pod_ = layout.pod_dir(cgroup::KubeQos::kBurstable, "agent-uid");
  scratch_.mkdir(agent_pod_);
  {
    cgroup::CgroupFs fs(scratch_.root(), scratch_.version());
    cgroup::WriteExecutor kubelet(fs);
    kubelet.apply({{cgroup::Resource::kCpuShares, agent_pod_, "51", "kubelet"},
                   {cgroup::Resource::kCpuQuota, agent_pod_, "50000", "kubelet"}});
    if (scratch_.version() == cgroup::CgroupVersion::kV1) {
      if (auto shares = fs.path_of(cgroup::Resource::kCpuShares, agent_pod_); shares.ok()) {
        agent_tasks_file_ = std::filesystem::path(*shares).parent_path() / "tasks";
      }
    }
  }
  files_.write("pods.json", R"({"items":[
    {"metadata":{"name":"api-0","namespace":"web","uid":"ls-uid"},
     "spec":{"containers":)" + spec.ls_containers +
                                R"(},"status":{"phase":"Running","qosClass":"Burstable"}},
    {"metadata":{"name":"exec-1","namespace":"spark","uid":"be-uid",
                 "labels":{"koordinator.sh/qosClass":"BE"}},
     "spec":{"containers":)" + spec.be_containers +
                                R"(},"status":{"phase":"Running","qosClass":"BestEffort")" +
                                be_statuses + R"(}}]})");
  files_.write("config/resource-threshold-config", spec.threshold_config);
  if (!spec.qos_config.empty()) files_.write("config/resource-qos-config", spec.qos_config);
}

}  // namespace gleaner::testing
