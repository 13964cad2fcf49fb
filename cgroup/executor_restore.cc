// The WriteExecutor's originals: adopting an earlier run's record, the weight remembered on
// entering cpu.idle, and restore_all(): putting back every value the executor changed, in
// an order and form the kernel accepts (cpu.idle before weights, parents widened first, v1
// cpusets kubelet copied from a narrowed parent, v2 cpusets that cannot inherit again).
#include <algorithm>
#include <functional>
#include <set>

#include <spdlog/spdlog.h>

#include "cgroup/executor.h"
#include "cgroup/parsers.h"
#include "common/strings.h"

namespace gleaner::cgroup {

void WriteExecutor::adopt_originals(const Originals& originals) {
  // Files are found again from (resource, cgroup) under this run's root: the record's paths
  // may name another mount point (a changed --cgroup-root), and are never trusted as paths.
  for (const auto& [recorded, original] : originals) {
    auto path = fs_.path_of(original.resource, original.cgroup);
    if (!path) {
      spdlog::warn("recorded original of {} ({}) has no file here: {}", original.cgroup,
                   to_string(original.resource), path.error().describe());
      continue;
    }
    FileWrite adopted = original;
    adopted.path = *path;
    originals_.insert_or_assign(*path, std::move(adopted));
  }
}

ApplyReport WriteExecutor::restore_all() {
  std::vector<FileWrite> back;
  for (const auto& [path, original] : originals_) {
    auto current = read_file(path);
    if (!current) continue;  // cgroup gone: nothing to restore
    std::string now(trim(*current));
    if (now == original.content) continue;
    back.push_back(
        FileWrite{original.resource, original.cgroup, path, now, original.content, "restore"});
  }
  // cpu.idle first: leaving idle resets the group's weight to the kernel default, so the
  // weight is put back only after it; and a group going back to idle refuses weight writes
  // (it has a fixed weight), so none is attempted there.
  std::set<std::string> back_to_idle;
  for (const auto& w : back) {
    if (w.resource == Resource::kCpuIdle && w.content != "0") back_to_idle.insert(w.cgroup);
  }
  std::erase_if(back, [&](const FileWrite& w) {
    return w.resource == Resource::kCpuShares && back_to_idle.count(w.cgroup) > 0;
  });
  std::stable_partition(back.begin(), back.end(),
                        [](const FileWrite& w) { return w.resource == Resource::kCpuIdle; });
  add_cpusets_copied_at_creation(back);
  ApplyReport report = perform(order_writes(back, fs_.version()));
  restore_inherited_cpusets(report);
  originals_.clear();
  held_.clear();
  return report;
}

void WriteExecutor::add_cpusets_copied_at_creation(std::vector<FileWrite>& back) {
  // v1 gives a new cpuset its parent's CPUs: a BE pod created while BE was narrowed holds
  // the narrowed list without the agent ever writing it (so it has no original). Widening
  // the parent back alone would leave such pods narrowed after the agent is gone.
  if (fs_.version() == CgroupVersion::kV2) return;
  std::vector<FileWrite> more;
  for (const auto& w : back) {
    if (w.resource != Resource::kCpusetCpus) continue;
    auto narrowed = parse_cpu_list(w.old_content);
    if (!narrowed || narrowed->empty()) continue;
    std::function<void(const std::string&)> visit = [&](const std::string& cg) {
      auto children = list_directories(fs_.dir_of(Resource::kCpusetCpus, cg));
      if (!children) return;
      for (const auto& child : *children) {
        const std::string sub = join_below(cg, "/", child);
        auto path = fs_.path_of(Resource::kCpusetCpus, sub);
        if (!path || originals_.count(*path) > 0) continue;  // its own original is restored
        auto current = read_file(*path);
        auto cpus = current ? parse_cpu_list(*current) : Result<std::vector<int>>(current.error());
        if (!cpus || *cpus != *narrowed) continue;  // set by someone: not a copy of ours
        more.push_back(FileWrite{Resource::kCpusetCpus, sub, *path, std::string(trim(*current)),
                                 w.content, "restore (copied from its parent at creation)"});
        visit(sub);
      }
    };
    visit(w.cgroup);
  }
  for (auto& m : more)
    back.push_back(std::move(m));
}

void WriteExecutor::restore_inherited_cpusets(ApplyReport& report) {
  // A v2 cpuset that inherited its parent's CPUs (empty) cannot be emptied again while it
  // holds tasks (cpuset.c validate_change: ENOSPC, on 6.1 at least). The CPUs it inherited
  // are the parent's effective ones: written as a list, the node runs as it did.
  std::vector<FileWrite> fallback;
  std::erase_if(report.failed, [&](const auto& failed) {
    const FileWrite& w = failed.first;
    if (w.resource != Resource::kCpusetCpus || !w.content.empty()) return false;
    auto inherited = fs_.path_of(Resource::kCpusetEffective, parent_cgroup(w.cgroup));
    auto cpus = inherited ? read_file(*inherited) : Result<std::string>(inherited.error());
    if (!cpus || trim(*cpus).empty()) return false;
    spdlog::info(
        "{}: the kernel keeps a populated cpuset from inheriting again; set to the "
        "parent's CPUs {}, which it inherited",
        w.path, trim(*cpus));
    FileWrite again = w;
    again.old_content = w.old_content;
    again.content = std::string(trim(*cpus));
    again.reason = "restore (inherited CPUs)";
    backoff_.forget(w.path);
    fallback.push_back(std::move(again));
    return true;
  });
  auto second = perform(std::move(fallback));
  for (auto& w : second.written)
    report.written.push_back(std::move(w));
  for (auto& f : second.failed)
    report.failed.push_back(std::move(f));
}

void WriteExecutor::remember_weight_under_idle(const std::string& cgroup,
                                               std::vector<std::string>& added) {
  auto path = fs_.path_of(Resource::kCpuShares, cgroup);
  if (!path) return;
  auto current = fs_.read_cached(*path);
  if (!current) return;
  if (originals_
          .try_emplace(*path, FileWrite{Resource::kCpuShares, cgroup, *path, "",
                                        original_content(Resource::kCpuShares, cgroup,
                                                         std::string(trim(*current))),
                                        "restore"})
          .second) {
    added.push_back(*path);
  }
}

}  // namespace gleaner::cgroup
