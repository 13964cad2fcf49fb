#include "resctrl/resctrl_fs.h"

#include <cerrno>
#include <charconv>

#include <sys/stat.h>
#include <unistd.h>

#include "common/file_io.h"

namespace gleaner::resctrl {
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

Result<int> read_int_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  std::string t = trimmed(*text);
  int value = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || ptr != t.data() + t.size()) {
    return make_error(ErrorCode::kParse, path + ": expected an integer, got \"" + t + "\"");
  }
  return value;
}

Result<uint64_t> read_u64_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  std::string t = trimmed(*text);
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || ptr != t.data() + t.size()) {
    return make_error(ErrorCode::kParse, path + ": expected a counter, got \"" + t + "\"");
  }
  return value;
}

std::vector<int> ids_of(const Schemata& schemata, const std::string& resource) {
  std::vector<int> ids;
  auto it = schemata.find(resource);
  if (it != schemata.end()) {
    for (const auto& [id, value] : it->second)
      ids.push_back(id);
  }
  return ids;
}

}  // namespace

Result<Capability> ResctrlFs::detect() const {
  if (!path_exists(join_path(root_, "schemata")) || !is_directory(join_path(root_, "info"))) {
    return make_error(ErrorCode::kUnsupported,
                      "resctrl is not mounted at " + root_ + " (no RDT on this machine)");
  }
  auto root_schemata = read_schemata("");
  if (!root_schemata) return root_schemata.error();
  Capability cap;
  const std::string l3 = join_path(root_, "info/L3");
  if (is_directory(l3)) {
    auto mask_text = read_file(join_path(l3, "cbm_mask"));
    if (!mask_text) return mask_text.error();
    L3Info info;
    std::string t = trimmed(*mask_text);
    auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), info.cbm_mask, 16);
    if (ec != std::errc() || info.cbm_mask == 0) {
      return make_error(ErrorCode::kParse, l3 + "/cbm_mask: bad mask \"" + t + "\"");
    }
    info.ways = 64 - __builtin_clzll(info.cbm_mask);
    if (auto min_bits = read_int_file(join_path(l3, "min_cbm_bits"))) info.min_cbm_bits = *min_bits;
    info.cache_ids = ids_of(*root_schemata, "L3");
    cap.l3 = info;
  }
  const std::string mb = join_path(root_, "info/MB");
  if (is_directory(mb)) {
    MbaInfo info;
    if (auto v = read_int_file(join_path(mb, "min_bandwidth"))) info.min_bandwidth = *v;
    if (auto v = read_int_file(join_path(mb, "bandwidth_gran"))) info.bandwidth_granularity = *v;
    info.domain_ids = ids_of(*root_schemata, "MB");
    cap.mba = info;
  }
  cap.monitoring = is_directory(join_path(root_, "info/L3_MON"));
  return cap;
}

std::string ResctrlFs::group_dir(const std::string& group) const {
  return group.empty() ? root_ : join_path(root_, group);
}

Status ResctrlFs::create_group(const std::string& group) const {
  if (group.empty() || group.find('/') != std::string::npos || group == "info") {
    return make_error(ErrorCode::kInvalidArgument, "bad resctrl group name \"" + group + "\"");
  }
  if (::mkdir(group_dir(group).c_str(), 0755) != 0 && errno != EEXIST) {
    return errno_error(errno, "mkdir " + group_dir(group));
  }
  return ok_status();
}

Status ResctrlFs::remove_group(const std::string& group) const {
  if (group.empty()) return make_error(ErrorCode::kInvalidArgument, "cannot remove the root group");
  // rmdir on resctrl moves the group's tasks back to the root group.
  if (::rmdir(group_dir(group).c_str()) != 0 && errno != ENOENT) {
    return errno_error(errno, "rmdir " + group_dir(group));
  }
  return ok_status();
}

Result<Schemata> ResctrlFs::read_schemata(const std::string& group) const {
  auto text = read_file(join_path(group_dir(group), "schemata"));
  if (!text) return text.error();
  return parse_schemata(*text);
}

Result<std::vector<std::string>> ResctrlFs::apply_schemata(const std::string& group,
                                                           const Schemata& desired) const {
  auto current = read_schemata(group);
  if (!current) return current.error();
  std::vector<std::string> written;
  const std::string path = join_path(group_dir(group), "schemata");
  for (const auto& [resource, domains] : desired) {
    bool differs = false;
    const auto& now = (*current)[resource];
    for (const auto& [id, value] : domains) {
      auto it = now.find(id);
      if (it == now.end() || !same_value(resource, it->second, value)) differs = true;
    }
    if (!differs) continue;
    std::string line = format_schemata_line(resource, domains) + "\n";
    if (auto status = write_file(path, line); !status) return status.error();
    written.push_back(line.substr(0, line.size() - 1));
  }
  return written;
}

Result<std::vector<int>> ResctrlFs::read_tasks(const std::string& group) const {
  auto text = read_file(join_path(group_dir(group), "tasks"));
  if (!text) return text.error();
  std::vector<int> tasks;
  size_t pos = 0;
  const std::string& t = *text;
  while (pos < t.size()) {
    size_t nl = t.find('\n', pos);
    if (nl == std::string::npos) nl = t.size();
    if (nl > pos) {
      int tid = 0;
      auto [ptr, ec] = std::from_chars(t.data() + pos, t.data() + nl, tid);
      if (ec != std::errc() || ptr != t.data() + nl) {
        return make_error(ErrorCode::kParse, "bad task id in " + group_dir(group) + "/tasks");
      }
      tasks.push_back(tid);
    }
    pos = nl + 1;
  }
  return tasks;
}

Status ResctrlFs::add_task(const std::string& group, int tid) const {
  return append_file(join_path(group_dir(group), "tasks"), std::to_string(tid) + "\n");
}

Result<MonData> ResctrlFs::read_mon_data(const std::string& group) const {
  const std::string base = join_path(group_dir(group), "mon_data");
  auto domains = list_directories(base);
  if (!domains) return domains.error();
  MonData out;
  constexpr std::string_view kPrefix = "mon_L3_";
  for (const auto& dir : *domains) {
    if (dir.rfind(kPrefix, 0) != 0) continue;
    int id = 0;
    auto [ptr, ec] = std::from_chars(dir.data() + kPrefix.size(), dir.data() + dir.size(), id);
    if (ec != std::errc()) continue;
    const std::string d = join_path(base, dir);
    if (auto v = read_u64_file(join_path(d, "llc_occupancy"))) out.llc_occupancy_bytes[id] = *v;
    if (auto v = read_u64_file(join_path(d, "mbm_total_bytes"))) out.mbm_total_bytes[id] = *v;
    if (auto v = read_u64_file(join_path(d, "mbm_local_bytes"))) out.mbm_local_bytes[id] = *v;
  }
  return out;
}

}  // namespace gleaner::resctrl
