#pragma once
// Fake node trees and snapshots for the QoS strategy tests.

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/edge/knob_reader.h"
#include "agent/qos/qos_types.h"
#include "agent/snapshot/node_snapshot.h"
#include "cgroup/executor.h"
#include "cgroup/layout.h"
#include "cgroup/version.h"
#include "common/json_util.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent::qos::test {

using gleaner::testing::TempDir;
// The cgroup vocabulary of every QoS test (`using namespace test;` brings it in).
using cgroup::CgroupDriver;
using cgroup::CgroupVersion;
using cgroup::KubeQos;
using cgroup::Resource;

// Current values from maps (as a v1 node's files hold them); CPU counters for the CFS
// quota burst. Converts to the KnobSnapshot of all of them, for a strategy called directly.
class MapReader : public QosReader {
 public:
  std::map<std::pair<cgroup::Resource, std::string>, int64_t> values;
  std::map<std::string, CpuCounters> counters;
  int counter_reads = 0;

  KnobSnapshot read(const KnobReads& reads) override {
    KnobSnapshot knobs(cgroup::CgroupVersion::kV1);
    for (const auto& [key, v] : values) {
      auto it = reads.files.find(key.second);
      if (it != reads.files.end() && it->second.contains(key.first))
        knobs.set_file(key.first, key.second, std::to_string(v));
    }
    for (const auto& cg : reads.counters) {
      ++counter_reads;
      if (auto it = counters.find(cg); it != counters.end()) knobs.set_counters(cg, it->second);
    }
    return knobs;
  }
  operator KnobSnapshot() const {  // NOLINT(google-explicit-constructor): a test's shorthand
    KnobSnapshot knobs(cgroup::CgroupVersion::kV1);
    for (const auto& [key, v] : values)
      knobs.set_file(key.first, key.second, std::to_string(v));
    for (const auto& [cg, c] : counters)
      knobs.set_counters(cg, c);
    return knobs;
  }
};

// FsQosReader over a test's tree that also converts to the KnobSnapshot of every knob of
// every cgroup in it (and the resctrl groups), for a strategy called directly.
class TreeReader : public edge::FsQosReader {
 public:
  TreeReader(cgroup::CgroupFs& fs, const resctrl::ResctrlFs* resctrl)
      : edge::FsQosReader(fs, resctrl), fs_(fs) {}
  operator KnobSnapshot() {  // NOLINT(google-explicit-constructor): a test's shorthand
    namespace fsys = std::filesystem;
    KnobReads reads;
    reads.resctrl = true;
    reads.resctrl_groups = {"LSR", "LS", "BE"};
    std::set<std::string> cgroups = {""};
    for (const auto& top : fsys::directory_iterator(fs_.root())) {
      if (!top.is_directory()) continue;
      const fsys::path base =
          fs_.version() == cgroup::CgroupVersion::kV2 ? fsys::path(fs_.root()) : top.path();
      if (fs_.version() == cgroup::CgroupVersion::kV2) cgroups.insert(top.path().filename());
      for (const auto& e : fsys::recursive_directory_iterator(top.path())) {
        if (e.is_directory()) cgroups.insert(fsys::relative(e.path(), base).string());
      }
    }
    for (const auto& cg : cgroups) {
      for (int r = 0; r <= static_cast<int>(cgroup::kLastResource); ++r)
        reads.files[cg].insert(static_cast<cgroup::Resource>(r));
      reads.counters.insert(cg);
    }
    return read(reads);
  }

 private:
  cgroup::CgroupFs& fs_;
};

// A container id the layout accepts, derived from a short name.
inline std::string container_id(const std::string& name) {
  std::string hex;
  for (char c : name)
    hex += "0123456789abcdef"[static_cast<unsigned char>(c) % 16];
  return "containerd://" + hex + "00";
}

struct FakePod {
  std::string ns = "default";
  std::string name;
  std::string uid;
  std::string qos_label;  // koordinator.sh/qosClass, "" for none
  std::string kube_qos = "BestEffort";
  int priority = 0;
  Json containers = Json::array();  // v1 container objects (name, resources)
  bool terminating = false;
  std::string cpu_usage = "0";
  std::string memory_usage = "0";
};

inline Json pod_json(const FakePod& p) {
  Json labels = Json::object();
  if (!p.qos_label.empty()) labels["koordinator.sh/qosClass"] = p.qos_label;
  Json statuses = Json::array();
  for (const auto& c : p.containers) {
    statuses.push_back({{"name", c["name"]}, {"containerID", container_id(c["name"])}});
  }
  Json meta = {{"name", p.name}, {"namespace", p.ns}, {"uid", p.uid}, {"labels", labels}};
  if (p.terminating) meta["deletionTimestamp"] = "2024-01-01T00:00:00Z";
  return {{"metadata", meta},
          {"spec", {{"priority", p.priority}, {"containers", p.containers}}},
          {"status",
           {{"phase", "Running"}, {"qosClass", p.kube_qos}, {"containerStatuses", statuses}}}};
}

inline Json container(const std::string& name, Json requests = Json::object(),
                      Json limits = Json::object()) {
  return {{"name", name}, {"resources", {{"requests", requests}, {"limits", limits}}}};
}

struct FakeNode {
  std::string cpu = "8";
  std::string memory = "16Gi";
  std::string allocatable_cpu = "8";
  std::string allocatable_memory = "16Gi";
  std::string node_cpu_usage = "0";
  std::string node_memory_usage = "0";
  std::string system_cpu = "0";
  std::string system_memory = "0";
  double age_seconds = 0;
  Json annotations = Json::object();
};

inline Json snapshot_json(const FakeNode& n, const std::vector<FakePod>& pods) {
  Json node = {{"metadata",
                {{"name", "node-1"}, {"labels", Json::object()}, {"annotations", n.annotations}}},
               {"status",
                {{"capacity", {{"cpu", n.cpu}, {"memory", n.memory}}},
                 {"allocatable", {{"cpu", n.allocatable_cpu}, {"memory", n.allocatable_memory}}}}}};
  Json pod_list = Json::array();
  Json usage = Json::object();
  for (const auto& p : pods) {
    pod_list.push_back(pod_json(p));
    usage[p.ns + "/" + p.name] = {{"cpu", p.cpu_usage}, {"memory", p.memory_usage}};
  }
  return {{"node", node},
          {"pods", pod_list},
          {"metrics",
           {{"ageSeconds", n.age_seconds},
            {"node", {{"cpu", n.node_cpu_usage}, {"memory", n.node_memory_usage}}},
            {"system", {{"cpu", n.system_cpu}, {"memory", n.system_memory}}},
            {"pods", usage}}}};
}

inline snapshot::NodeSnapshot make_snapshot(const FakeNode& n, const std::vector<FakePod>& pods) {
  auto snap = snapshot::parse_snapshot(snapshot_json(n, pods), "test");
  if (!snap) throw std::runtime_error(snap.error().message);
  return *snap;
}

// A fake sysfs: 2 NUMA nodes (one socket each), 4 cores per node, 2 threads per core;
// cpu N and N+8 are siblings, node 0 holds cpus 0-3,8-11.
inline void make_sysfs16(const TempDir& t) {
  for (int cpu = 0; cpu < 16; ++cpu) {
    const std::string base = "sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    const int core = cpu % 8;
    t.write(base + "core_id", std::to_string(core % 4) + "\n");
    t.write(base + "physical_package_id", std::to_string(core / 4) + "\n");
    t.write(base + "thread_siblings_list", std::to_string(core) + "," + std::to_string(core + 8));
  }
  t.write("sys/devices/system/node/node0/cpulist", "0-3,8-11\n");
  t.write("sys/devices/system/node/node1/cpulist", "4-7,12-15\n");
}

// A cgroup directory of a fake tree, with the files kubelet leaves: unlimited quota,
// period 100 ms, the given cpuset, unlimited memory; v2 also offers memory.min/low/high.
inline void make_cgroup(const TempDir& t, cgroup::CgroupVersion v, const std::string& cg,
                        const std::string& cpus = "0-7", bool memory_qos_files = true) {
  if (v == cgroup::CgroupVersion::kV2) {
    t.write("cgroup.controllers", "cpuset cpu io memory pids\n");
    t.write(cg + "/cpu.max", "max 100000\n");
    t.write(cg + "/cpu.weight", "100\n");
    t.write(cg + "/cpuset.cpus", cpus + "\n");
    t.write(cg + "/memory.max", "max\n");
    t.write(cg + "/cgroup.threads", "");
    if (memory_qos_files) {
      t.write(cg + "/memory.min", "0\n");
      t.write(cg + "/memory.low", "0\n");
      t.write(cg + "/memory.high", "max\n");
    }
  } else {
    t.write("cpu/" + cg + "/cpu.cfs_quota_us", "-1\n");
    t.write("cpu/" + cg + "/cpu.cfs_period_us", "100000\n");
    t.write("cpu/" + cg + "/cpu.shares", "1024\n");
    t.write("cpu/" + cg + "/tasks", "");
    t.write("cpuset/" + cg + "/cpuset.cpus", cpus + "\n");
    t.write("memory/" + cg + "/memory.limit_in_bytes", "9223372036854771712\n");
    if (memory_qos_files) {
      t.write("memory/" + cg + "/memory.min", "0\n");
      t.write("memory/" + cg + "/memory.low", "0\n");
      t.write("memory/" + cg + "/memory.high", "9223372036854771712\n");
    }
  }
}

// kubepods, its QoS dirs, and the pod and container dirs of `pods`.
inline void make_node_tree(const TempDir& t, cgroup::CgroupVersion v,
                           const cgroup::KubeletLayout& layout, const std::vector<FakePod>& pods,
                           const std::string& cpus = "0-7", bool memory_qos_files = true) {
  make_cgroup(t, v, layout.kubepods_dir(), cpus, memory_qos_files);
  make_cgroup(t, v, layout.qos_dir(cgroup::KubeQos::kBurstable), cpus, memory_qos_files);
  make_cgroup(t, v, layout.qos_dir(cgroup::KubeQos::kBestEffort), cpus, memory_qos_files);
  for (const auto& p : pods) {
    auto qos = *cgroup::parse_kube_qos(p.kube_qos);
    make_cgroup(t, v, layout.pod_dir(qos, p.uid), cpus, memory_qos_files);
    for (const auto& c : p.containers) {
      make_cgroup(t, v, *layout.container_dir(qos, p.uid, container_id(c["name"])), cpus,
                  memory_qos_files);
    }
  }
}

// The kubelet tree of `pods` in a scratch folder, with the file system, reader and
// executor a strategy test works through.
struct NodeTree {
  NodeTree(cgroup::CgroupVersion version, cgroup::CgroupDriver driver,
           const std::vector<FakePod>& pods)
      : layout(driver), fs(t.path(), version) {
    make_node_tree(t, version, layout, pods);
  }
  TempDir t;
  cgroup::KubeletLayout layout;
  cgroup::CgroupFs fs;
  TreeReader reader{fs, nullptr};
  cgroup::WriteExecutor exec{fs};
};

// The four kubelet trees a strategy must handle: cgroup v1 and v2, each under the cgroupfs
// and the systemd driver; a parameterised suite runs on each, named e.g. "v1_systemd".
struct TreeCase {
  cgroup::CgroupVersion version;
  cgroup::CgroupDriver driver;
};
inline auto every_kubelet_tree() {
  using cgroup::CgroupDriver;
  using cgroup::CgroupVersion;
  return ::testing::Values(TreeCase{CgroupVersion::kV1, CgroupDriver::kCgroupfs},
                           TreeCase{CgroupVersion::kV1, CgroupDriver::kSystemd},
                           TreeCase{CgroupVersion::kV2, CgroupDriver::kCgroupfs},
                           TreeCase{CgroupVersion::kV2, CgroupDriver::kSystemd});
}
inline std::string tree_case_name(const ::testing::TestParamInfo<TreeCase>& info) {
  return std::string(cgroup::to_string(info.param.version)) + "_" +
         cgroup::to_string(info.param.driver);
}

// A resctrl mount whose L3 cache ids are 0 and 2 (two sockets, ids not contiguous).
inline void make_resctrl(const TempDir& t) {
  t.write("schemata", "    L3:0=7ff;2=7ff\n    MB:0=100;2=100\n");
  t.write("tasks", "1\n2\n");
  t.write("info/L3/cbm_mask", "7ff\n");
  t.write("info/L3/min_cbm_bits", "1\n");
  t.write("info/MB/min_bandwidth", "10\n");
  t.write("info/MB/bandwidth_gran", "10\n");
}

}  // namespace gleaner::agent::qos::test
