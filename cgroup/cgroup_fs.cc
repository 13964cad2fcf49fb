#include "cgroup/cgroup_fs.h"

#include <algorithm>
#include <utility>

namespace gleaner::cgroup {

CgroupFs::CgroupFs(std::string root, CgroupVersion version)
    : root_(std::move(root)), version_(version) {}

std::string CgroupFs::dir_of(Resource resource, const std::string& cgroup) const {
  const ResourceSpec& spec = spec_of(resource);
  if (version_ == CgroupVersion::kV2) return join_path(root_, cgroup);
  if (version_ == CgroupVersion::kHybrid && spec.v1_file == nullptr) {
    return join_path(join_path(root_, "unified"), cgroup);
  }
  return join_path(join_path(root_, spec.v1_controller), cgroup);
}

Result<std::string> CgroupFs::path_of(Resource resource, const std::string& cgroup) const {
  const ResourceSpec& spec = spec_of(resource);
  const bool use_v2 =
      version_ == CgroupVersion::kV2 || (version_ == CgroupVersion::kHybrid && !spec.v1_file);
  const char* file = use_v2 ? spec.v2_file : spec.v1_file;
  if (file == nullptr) {
    return make_error(ErrorCode::kUnsupported,
                      std::string(spec.name) + " is not offered on cgroup " + to_string(version_));
  }
  return join_path(dir_of(resource, cgroup), file);
}

bool CgroupFs::has(Resource resource, const std::string& cgroup) const {
  auto path = path_of(resource, cgroup);
  if (!path) return false;
  Offer& offer = offers_[static_cast<size_t>(resource)];
  if (open_files_.count(*path) > 0) {
    offer = Offer::kOffered;
    return true;
  }
  if (offer == Offer::kAbsent) return false;
  ++lookups_;
  if (path_exists(*path)) {
    offer = Offer::kOffered;
    return true;
  }
  // A miss of a file the kernel offers is a cgroup not made yet, or being removed.
  if (offer == Offer::kUnknown) offer = judge_offer(resource);
  return false;
}

CgroupFs::Offer CgroupFs::judge_offer(Resource resource) const {
  // Judged in the reference cgroup, never in the cgroup asked about: a pod's cgroup can be
  // caught half made or half removed. rmdir takes each controller's files away (kill_css()
  // -> css_clear_dir()) before the directory itself (kernfs_remove() in
  // cgroup_destroy_locked(), kernel/cgroup/cgroup.c), and kubelet lists a pod before its
  // cgroup is made, so a miss followed by a look at the directory can see a directory without
  // the file of a kernel that has it. kubepods is made before any pod and lives as long as
  // kubelet. Which files a kernel offers does not change until it reboots.
  if (reference_.empty()) return Offer::kUnknown;
  ++lookups_;
  if (path_exists(*path_of(resource, reference_))) return Offer::kOffered;
  ++lookups_;
  const std::string dir = dir_of(resource, reference_);
  if (!is_directory(dir)) return Offer::kUnknown;
  const bool unified = version_ == CgroupVersion::kV2 ||
                       (version_ == CgroupVersion::kHybrid && spec_of(resource).v1_file == nullptr);
  // PSI files are the cgroup core's, there whatever the controllers.
  if (!unified || resource == Resource::kCpuPressure || resource == Resource::kMemoryPressure ||
      resource == Resource::kIoPressure) {
    return Offer::kAbsent;
  }
  // On v2 a controller's files exist only where it is enabled (listed in cgroup.controllers),
  // and enabling it in the parent's cgroup.subtree_control adds them to existing cgroups:
  // a miss while it is off says nothing of the kernel, and is judged again at the next miss.
  ++lookups_;
  auto controllers = read_file(join_path(dir, "cgroup.controllers"));
  if (!controllers) return Offer::kUnknown;
  std::string words = " " + *controllers + " ";
  std::replace(words.begin(), words.end(), '\n', ' ');
  const std::string file = spec_of(resource).v2_file;
  const bool enabled = words.find(" " + file.substr(0, file.find('.')) + " ") != std::string::npos;
  return enabled ? Offer::kAbsent : Offer::kUnknown;
}

bool CgroupFs::exists(const std::string& cgroup) const {
  return is_directory(dir_of(Resource::kCpuShares, cgroup));
}

Result<std::string> CgroupFs::read_cached(const std::string& path) {
  auto it = open_files_.find(path);
  if (it == open_files_.end()) {
    if (open_files_.size() >= descriptor_cap_) return read_file(path);
    auto opened = OpenFile::open(path);
    if (!opened) return opened.error();
    it = open_files_.emplace(path, std::move(*opened)).first;
  }
  auto content = it->second.read();
  // A removed cgroup answers ENODEV on a kept descriptor: drop it so a re-created cgroup
  // of the same name is opened afresh.
  if (!content) open_files_.erase(it);
  return content;
}

Result<std::string> CgroupFs::read_raw(Resource resource, const std::string& cgroup) {
  auto path = path_of(resource, cgroup);
  if (!path) return path.error();
  return read_cached(*path);
}

Result<std::string> CgroupFs::read_logical(Resource resource, const std::string& cgroup) {
  auto raw = read_raw(resource, cgroup);
  if (!raw) return raw.error();
  return logical_from_file(resource, version_, *raw);
}

Result<int64_t> CgroupFs::read_int(Resource resource, const std::string& cgroup) {
  auto logical = read_logical(resource, cgroup);
  if (!logical) return logical.error();
  return parse_int_value(*logical);
}

Result<int64_t> CgroupFs::read_cpu_usage_ns(const std::string& cgroup) {
  auto raw = read_raw(Resource::kCpuUsage, cgroup);
  if (!raw) return raw.error();
  if (version_ != CgroupVersion::kV2) return parse_int_value(*raw);
  auto stat = parse_flat_keyed(*raw);
  if (!stat) return stat.error();
  auto it = stat->find("usage_usec");
  if (it == stat->end()) return make_error(ErrorCode::kParse, "cpu.stat lacks usage_usec");
  return it->second * 1000;
}

Result<CpuThrottle> CgroupFs::read_cpu_throttle(const std::string& cgroup) {
  auto raw = read_raw(Resource::kCpuStat, cgroup);
  if (!raw) return raw.error();
  auto stat = parse_flat_keyed(*raw);
  if (!stat) return stat.error();
  CpuThrottle out;
  auto get = [&](const char* key) {
    auto it = stat->find(key);
    return it == stat->end() ? int64_t{0} : it->second;
  };
  out.nr_periods = get("nr_periods");
  out.nr_throttled = get("nr_throttled");
  out.throttled_ns =
      version_ == CgroupVersion::kV2 ? get("throttled_usec") * 1000 : get("throttled_time");
  return out;
}

Result<std::vector<int>> CgroupFs::read_cpuset(const std::string& cgroup) {
  auto raw = read_raw(Resource::kCpusetCpus, cgroup);
  if (!raw) return raw.error();
  return parse_cpu_list(*raw);
}

Result<int64_t> CgroupFs::read_memory_working_set(const std::string& cgroup) {
  auto raw = read_raw(Resource::kMemoryStat, cgroup);
  if (!raw) return raw.error();
  return memory_working_set_from_text(*raw, version_ != CgroupVersion::kV2);
}

Result<Psi> CgroupFs::read_pressure(Resource resource, const std::string& cgroup) {
  auto raw = read_raw(resource, cgroup);
  if (!raw) return raw.error();
  return parse_psi(*raw);
}

Result<std::vector<int>> CgroupFs::read_ids(Resource resource, const std::string& cgroup) {
  // Task lists change constantly and are read rarely: no cached descriptor.
  auto path = path_of(resource, cgroup);
  if (!path) return path.error();
  auto raw = read_file(*path);
  if (!raw) return raw.error();
  if (resource == Resource::kCpusetCpus || resource == Resource::kCpusetEffective) {
    return parse_cpu_list(*raw);
  }
  return parse_id_list(*raw);
}

void CgroupFs::forget(const std::string& cgroup) {
  for (auto it = open_files_.begin(); it != open_files_.end();) {
    if (it->first.find("/" + cgroup + "/") != std::string::npos) {
      it = open_files_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace gleaner::cgroup
