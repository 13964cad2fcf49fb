#include "cgroup/executor.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "cgroup/parsers.h"

namespace gleaner::cgroup {
namespace {

size_t depth_of(const std::string& cgroup) {
  return static_cast<size_t>(std::count(cgroup.begin(), cgroup.end(), '/'));
}

std::string logical_or_raw(const FileWrite& w, const std::string& content, CgroupVersion v) {
  auto logical = logical_from_file(w.resource, v, content);
  return logical.ok() ? *logical : content;
}

}  // namespace

std::vector<FileWrite> order_writes(const std::vector<FileWrite>& writes, CgroupVersion version) {
  std::vector<FileWrite> widen;
  std::vector<FileWrite> neutral;
  std::vector<FileWrite> narrow;
  for (const auto& w : writes) {
    std::string before = logical_or_raw(w, w.old_content, version);
    std::string after = logical_or_raw(w, w.content, version);
    switch (direction_of(w.resource, before, after)) {
      case Direction::kWiden:
        widen.push_back(w);
        break;
      case Direction::kNarrow:
        narrow.push_back(w);
        break;
      case Direction::kNeutral:
        neutral.push_back(w);
        break;
      case Direction::kMixed: {
        auto a = parse_cpu_list(before);
        auto b = parse_cpu_list(after);
        std::vector<int> both = *a;
        both.insert(both.end(), b->begin(), b->end());
        FileWrite step = w;
        step.content = format_cpu_list(both);
        widen.push_back(step);
        FileWrite last = w;
        last.old_content = step.content;
        narrow.push_back(last);
        break;
      }
    }
  }
  auto by_depth = [](const FileWrite& x, const FileWrite& y) {
    return depth_of(x.cgroup) < depth_of(y.cgroup);
  };
  std::stable_sort(widen.begin(), widen.end(), by_depth);
  std::stable_sort(narrow.begin(), narrow.end(),
                   [&](const FileWrite& x, const FileWrite& y) { return by_depth(y, x); });
  std::vector<FileWrite> out;
  out.reserve(widen.size() + neutral.size() + narrow.size());
  for (auto* group : {&widen, &neutral, &narrow}) {
    out.insert(out.end(), group->begin(), group->end());
  }
  return out;
}

std::vector<FileWrite> WriteExecutor::plan(const std::vector<CgroupWrite>& writes,
                                           std::vector<Error>* rejected) {
  std::vector<FileWrite> resolved;
  auto reject = [&](const CgroupWrite& w, const Error& e) {
    auto& c = counters_[to_string(w.resource)];
    if (e.code == ErrorCode::kNotFound) {
      ++c.vanished;
    } else {
      ++c.failures;
      spdlog::warn("cgroup write rejected: {} of {}: {}", to_string(w.resource), w.cgroup,
                   e.describe());
    }
    if (rejected != nullptr) rejected->push_back(e);
  };
  for (const auto& w : writes) {
    if (auto valid = validate_value(w.resource, w.value); !valid) {
      reject(w, valid.error());
      continue;
    }
    auto path = fs_.path_of(w.resource, w.cgroup);
    if (!path) {
      reject(w, path.error());
      continue;
    }
    auto current = read_file(*path);
    if (!current) {
      reject(w, current.error());
      continue;
    }
    auto current_logical = logical_from_file(w.resource, fs_.version(), *current);
    auto desired_logical =
        logical_from_file(w.resource, fs_.version(),
                          *file_from_logical(w.resource, fs_.version(), w.value, *current));
    if (current_logical.ok() && desired_logical.ok() && *current_logical == *desired_logical) {
      ++counters_[to_string(w.resource)].unchanged;
      continue;
    }
    auto content = file_from_logical(w.resource, fs_.version(), w.value, *current);
    resolved.push_back(
        FileWrite{w.resource, w.cgroup, *path, std::string(trim(*current)), *content, w.reason});
  }
  return order_writes(resolved, fs_.version());
}

ApplyReport WriteExecutor::apply(const std::vector<CgroupWrite>& writes) {
  std::vector<Error> rejected;
  auto ordered = plan(writes, &rejected);
  ApplyReport report = perform(std::move(ordered));
  report.rejected = std::move(rejected);
  return report;
}

ApplyReport WriteExecutor::perform(std::vector<FileWrite> ordered) {
  ApplyReport report;
  for (auto& w : ordered) {
    auto& c = counters_[to_string(w.resource)];
    if (dry_run_) {
      spdlog::info("dry-run: would write {}: {} -> {} ({})", w.path, w.old_content, w.content,
                   w.reason);
      report.written.push_back(std::move(w));
      continue;
    }
    // Remember the value found before the first change, for restore_all().
    originals_.try_emplace(
        w.path, FileWrite{w.resource, w.cgroup, w.path, w.content, w.old_content, "restore"});
    // Entering idle: the weight read from now on is the kernel's fixed one, so keep the
    // real one for restore_all(). (Leaving idle needs nothing: the weight reads true again.)
    if (w.resource == Resource::kCpuIdle && w.old_content == "0") {
      remember_weight_under_idle(w.cgroup);
    }
    auto status = write_file(w.path, w.content);
    if (!status) {
      if (status.error().code == ErrorCode::kNotFound) {
        ++c.vanished;
        spdlog::debug("cgroup gone before write: {}", w.path);
      } else {
        ++c.failures;
        spdlog::warn("cgroup write failed: {}: {} -> {} ({}): {}", w.path, w.old_content, w.content,
                     w.reason, status.error().describe());
      }
      report.failed.emplace_back(std::move(w), status.error());
      continue;
    }
    ++c.writes;
    spdlog::info("cgroup write {}: {} -> {} ({})", w.path, w.old_content, w.content, w.reason);
    report.written.push_back(std::move(w));
  }
  return report;
}

void WriteExecutor::remember_weight_under_idle(const std::string& cgroup) {
  auto path = fs_.path_of(Resource::kCpuShares, cgroup);
  if (!path) return;
  auto current = read_file(*path);
  if (!current) return;
  originals_.try_emplace(*path, FileWrite{Resource::kCpuShares, cgroup, *path, "",
                                          std::string(trim(*current)), "restore"});
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
  ApplyReport report = perform(order_writes(back, fs_.version()));
  originals_.clear();
  return report;
}

}  // namespace gleaner::cgroup
