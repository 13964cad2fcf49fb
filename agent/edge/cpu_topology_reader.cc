#include "agent/edge/cpu_topology_reader.h"

#include <algorithm>
#include <filesystem>

#include "cgroup/parsers.h"
#include "common/file_io.h"

namespace gleaner::agent::edge {
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

Result<qos::CpuTopology> read_cpu_topology(const std::string& sys_root) {
  const std::string cpu_dir = join_path(sys_root, "sys/devices/system/cpu");
  const std::string node_dir = join_path(sys_root, "sys/devices/system/node");
  if (!is_directory(cpu_dir)) {
    return make_error(ErrorCode::kNotFound, cpu_dir + ": no such directory");
  }
  qos::CpuTopology topo;
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
            [](const qos::CpuInfo& a, const qos::CpuInfo& b) { return a.cpu < b.cpu; });
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

}  // namespace gleaner::agent::edge
