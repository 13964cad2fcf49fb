#include "agent/qos/cpu_topology.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "cgroup/parsers.h"
#include "common/file_io.h"

namespace gleaner::agent::qos {
namespace {

namespace fs = std::filesystem;

// Index of "cpu12" / "node3" style directory names, -1 otherwise.
int numbered(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  int v = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

Result<int> read_number(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  auto v = cgroup::parse_int_value(*text);
  if (!v) return make_error(ErrorCode::kParse, path + ": " + v.error().message);
  return static_cast<int>(*v);
}

}  // namespace

std::vector<int> CpuTopology::ids() const {
  std::vector<int> out;
  for (const auto& c : cpus)
    out.push_back(c.cpu);
  return out;
}

Result<CpuTopology> read_cpu_topology(const std::string& sys_root) {
  const std::string cpu_dir = join_path(sys_root, "sys/devices/system/cpu");
  const std::string node_dir = join_path(sys_root, "sys/devices/system/node");
  if (!is_directory(cpu_dir)) {
    return make_error(ErrorCode::kNotFound, cpu_dir + ": no such directory");
  }
  CpuTopology topo;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cpu_dir, ec)) {
    int id = numbered(entry.path().filename().string(), "cpu");
    if (id < 0) continue;
    const std::string t = join_path(entry.path().string(), "topology");
    // Offline CPUs have no topology directory; they cannot run BE work either.
    if (!is_directory(t)) continue;
    auto core = read_number(join_path(t, "core_id"));
    if (!core) return core.error();
    auto socket = read_number(join_path(t, "physical_package_id"));
    if (!socket) return socket.error();
    topo.cpus.push_back({id, *core, *socket, 0});
  }
  if (topo.cpus.empty()) return make_error(ErrorCode::kNotFound, cpu_dir + ": no CPUs");
  std::sort(topo.cpus.begin(), topo.cpus.end(),
            [](const CpuInfo& a, const CpuInfo& b) { return a.cpu < b.cpu; });
  if (is_directory(node_dir)) {
    for (const auto& entry : fs::directory_iterator(node_dir, ec)) {
      int node = numbered(entry.path().filename().string(), "node");
      if (node < 0) continue;
      const std::string list_path = join_path(entry.path().string(), "cpulist");
      auto text = read_file(list_path);
      if (!text) return text.error();
      auto cpus = cgroup::parse_cpu_list(*text);
      if (!cpus) return make_error(ErrorCode::kParse, list_path + ": " + cpus.error().message);
      for (int c : *cpus) {
        for (auto& info : topo.cpus) {
          if (info.cpu == c) info.node = node;
        }
      }
    }
  }
  return topo;
}

CpuTopology flat_topology(const std::vector<int>& cpus) {
  CpuTopology topo;
  for (int c : cpus)
    topo.cpus.push_back({c, c, 0, 0});
  std::sort(topo.cpus.begin(), topo.cpus.end(),
            [](const CpuInfo& a, const CpuInfo& b) { return a.cpu < b.cpu; });
  return topo;
}

std::vector<int> be_cpu_order(const CpuTopology& topology, const std::vector<int>& reserved) {
  const std::set<int> excluded(reserved.begin(), reserved.end());
  // node -> (socket, core) -> cpus of that physical core, in id order.
  std::map<int, std::map<std::pair<int, int>, std::vector<int>>> cores;
  for (const auto& c : topology.cpus) {
    if (excluded.count(c.cpu) != 0) continue;
    cores[c.node][{c.socket, c.core}].push_back(c.cpu);
  }
  // Per node, interleave sockets so a node spanning two packages also alternates them.
  std::vector<std::vector<std::vector<int>>> per_node;
  for (auto& [node, by_core] : cores) {
    std::map<int, std::vector<std::vector<int>>> by_socket;
    for (auto& [key, cpus] : by_core)
      by_socket[key.first].push_back(cpus);
    std::vector<std::vector<int>> order;
    for (size_t i = 0;; ++i) {
      bool any = false;
      for (auto& [socket, list] : by_socket) {
        if (i < list.size()) {
          order.push_back(list[i]);
          any = true;
        }
      }
      if (!any) break;
    }
    per_node.push_back(std::move(order));
  }
  std::vector<int> out;
  for (size_t i = 0;; ++i) {
    bool any = false;
    for (const auto& order : per_node) {
      if (i < order.size()) {
        out.insert(out.end(), order[i].begin(), order[i].end());
        any = true;
      }
    }
    if (!any) break;
  }
  return out;
}

}  // namespace gleaner::agent::qos
