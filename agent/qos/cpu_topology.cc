#include "agent/qos/cpu_topology.h"

#include <algorithm>
#include <map>
#include <set>

#include "cgroup/parsers.h"

namespace gleaner::agent::qos {
std::vector<int> CpuTopology::ids() const {
  std::vector<int> out;
  for (const auto& c : cpus)
    out.push_back(c.cpu);
  return out;
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
