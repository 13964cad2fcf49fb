#pragma once
// The node the agent-step suites run on: a v1 cgroupfs tree with an LS web pod (one CPU
// requested, two used) and a BE spark executor (1.5 CPUs used) on 8 CPUs, 4 busy.

#include <string>
#include <vector>

#include "cgroup/layout.h"
#include "test/agent/qos/qos_test_util.h"

namespace gleaner::agent::step::test {

inline const cgroup::KubeletLayout kLayout(cgroup::CgroupDriver::kCgroupfs);
inline const std::string kBeQos = "kubepods/besteffort";

inline std::vector<qos::test::FakePod> web_and_spark() {
  using qos::test::container;
  qos::test::FakePod ls{.name = "web", .uid = "ls-1", .kube_qos = "Burstable", .cpu_usage = "2"};
  ls.containers = Json::array({container("app", {{"cpu", "1"}})});
  qos::test::FakePod be{.name = "spark", .uid = "be-1", .qos_label = "BE", .cpu_usage = "1500m"};
  be.containers = Json::array({container("exec")});
  return {ls, be};
}

inline qos::test::FakeNode busy_node() {
  qos::test::FakeNode n;  // 8 CPUs
  n.node_cpu_usage = "4";
  n.system_cpu = "500m";
  return n;
}

}  // namespace gleaner::agent::step::test
