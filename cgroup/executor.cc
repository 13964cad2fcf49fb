#include "cgroup/executor.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>

#include <spdlog/spdlog.h>

#include "cgroup/parsers.h"
#include "common/strings.h"

namespace gleaner::cgroup {
namespace {

size_t depth_of(const std::string& cgroup) {
  return static_cast<size_t>(std::count(cgroup.begin(), cgroup.end(), '/'));
}

std::string logical_or_raw(const FileWrite& w, const std::string& content, CgroupVersion v) {
  auto logical = logical_from_file(w.resource, v, content);
  return logical.ok() ? *logical : content;
}

constexpr std::chrono::seconds kWarnEvery{60};

const Clock& system_clock() {
  static const SystemClock clock;
  return clock;
}

const char* hierarchy_reason(FittedValue::Kind kind) {
  return kind == FittedValue::Kind::kReleased ? "parent-limit-released" : "parent-limit";
}

}  // namespace

WriteExecutor::WriteExecutor(CgroupFs& fs, bool dry_run, const Clock* clock)
    : fs_(fs), dry_run_(dry_run), clock_(clock != nullptr ? clock : &system_clock()) {}

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
  // Planning a fit moves the clamps on; a plan shown before apply() must leave them as they
  // are, or apply() would start from clamps its writes never made.
  HeldClamps unchanged = held_;
  return plan(writes, rejected, unchanged);
}

std::vector<FileWrite> WriteExecutor::plan(const std::vector<CgroupWrite>& writes,
                                           std::vector<Error>* rejected, HeldClamps& held) {
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
    auto current = fs_.read_cached(*path);
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
  for (Resource r : {Resource::kCpuQuota, Resource::kCpusetCpus}) {
    if (hierarchy_rule(r, fs_.version()) == HierarchyRule::kNone) continue;
    const bool changes = std::any_of(resolved.begin(), resolved.end(),
                                     [&](const FileWrite& f) { return f.resource == r; });
    if (changes) fit_hierarchy(r, writes, resolved, held);
  }
  auto ordered = order_writes(resolved, fs_.version());
  std::set<std::pair<Resource, std::string>> held_back;
  std::vector<FileWrite> out;
  for (auto& w : ordered) {
    if (deferred(w)) {
      held_back.emplace(w.resource, w.cgroup);
    } else if (!narrows_over_refused(w, held_back)) {
      out.push_back(std::move(w));
    }
  }
  return out;
}

void WriteExecutor::fit_hierarchy(Resource resource, const std::vector<CgroupWrite>& requests,
                                  std::vector<FileWrite>& resolved, HeldClamps& held_clamps) {
  const CgroupVersion v = fs_.version();
  std::map<std::string, std::string> wishes;
  std::map<std::string, std::string> reasons;
  for (const auto& w : requests) {
    if (w.resource != resource || !validate_value(resource, w.value).ok()) continue;
    wishes[w.cgroup] = w.value;
    reasons[w.cgroup] = w.reason;
  }
  // The subtrees of every asked-for cgroup, and their ancestors up to the root.
  std::map<std::string, LimitNode> tree;
  std::map<std::string, std::string> raw;  // cgroup -> trimmed file content
  auto add = [&](const std::string& cg) {
    if (tree.count(cg) > 0) return true;
    auto path = fs_.path_of(resource, cg);
    if (!path) return false;
    auto content = fs_.read_cached(*path);
    if (!content) return false;
    auto logical = logical_from_file(resource, v, *content);
    if (!logical) return false;
    LimitNode node{*logical, 0};
    if (resource == Resource::kCpuQuota) {
      node.period_us = fs_.read_int(Resource::kCpuPeriod, cg).value_or(0);
    }
    tree.emplace(cg, std::move(node));
    raw.emplace(cg, std::string(trim(*content)));
    return true;
  };
  std::function<void(const std::string&)> add_subtree = [&](const std::string& cg) {
    if (!add(cg)) return;
    auto children = list_directories(fs_.dir_of(resource, cg));
    if (!children) return;
    for (const auto& child : *children)
      add_subtree(join_below(cg, "/", child));
  };
  auto add_with_ancestors = [&](const std::string& cg) {
    for (std::string p = cg; !p.empty();) {
      p = parent_cgroup(p);
      add(p);
    }
    return add(cg);
  };
  const std::vector<HeldClamp> clamps = held_clamps.list();
  for (const auto& [cg, value] : wishes) {
    if (!add_with_ancestors(cg)) continue;
    // The kernel keeps every descendant within its ancestors' limits, so a value no
    // narrower than the one in place fits the subtree as it is: its descendants (BE may
    // make thousands of cgroups below a container) are walked only when it narrows. Wider,
    // it may give back what its earlier narrowing clamped: those cgroups are looked at.
    const Direction d = direction_of(resource, tree.at(cg).value, value);
    if (d == Direction::kNarrow || d == Direction::kMixed) {
      add_subtree(cg);
      continue;
    }
    const std::string below = cg.empty() ? "" : cg + "/";
    for (const auto& c : clamps) {
      if (c.resource == resource && c.cgroup.compare(0, below.size(), below) == 0) {
        add_with_ancestors(c.cgroup);
      }
    }
  }
  auto held =
      held_clamps.standing(resource, tree, [&](const std::string& cg) { return fs_.exists(cg); });
  auto fitted = fit_to_ancestors(hierarchy_rule(resource, v), tree, wishes, held);
  held_clamps.keep(resource, held, fitted, tree);

  // Fitted values replace the asked ones where they stand (keeping the request order);
  // cgroups nobody asked about follow.
  auto reason_of = [&](const std::string& cg, FittedValue::Kind kind) {
    auto it = reasons.find(cg);
    if (it == reasons.end()) return std::string(hierarchy_reason(kind));
    return kind == FittedValue::Kind::kClamped ? it->second + " (within parent limit)" : it->second;
  };
  auto to_write = [&](const std::string& cg, const FittedValue& fit) -> std::optional<FileWrite> {
    auto path = fs_.path_of(resource, cg);
    auto content = file_from_logical(resource, v, fit.value, raw[cg]);
    if (!path || !content) return std::nullopt;
    if (fit.kind == FittedValue::Kind::kClamped) ++counters_[to_string(resource)].clamped;
    return FileWrite{resource, cg, *path, raw[cg], *content, reason_of(cg, fit.kind)};
  };
  std::vector<FileWrite> out;
  for (auto& f : resolved) {
    if (f.resource != resource) {
      out.push_back(std::move(f));
      continue;
    }
    auto it = fitted.find(f.cgroup);
    if (it == fitted.end()) continue;  // nothing to change once fitted
    if (auto w = to_write(it->first, it->second)) out.push_back(std::move(*w));
    fitted.erase(it);
  }
  for (const auto& [cg, fit] : fitted) {
    if (auto w = to_write(cg, fit)) out.push_back(std::move(*w));
  }
  resolved = std::move(out);
}

bool WriteExecutor::deferred(const FileWrite& w) {
  if (!backoff_.waiting(w.path)) return false;
  ++counters_[to_string(w.resource)].deferred;
  return true;
}

void WriteExecutor::note_refusal(const FileWrite& w, const Error& error) {
  // A narrowing write protects LS: it is tried again every second, never left for 30.
  const auto before = logical_from_file(w.resource, fs_.version(), w.old_content);
  const auto after = logical_from_file(w.resource, fs_.version(), w.content);
  const bool narrows =
      before && after && direction_of(w.resource, *before, *after) == Direction::kNarrow;
  const std::string message = error.describe();
  const auto verdict = backoff_.refused(w.path, message, narrows);
  if (verdict.warn) {
    spdlog::warn("cgroup write failed: {}: {} -> {} ({}): {} ({} attempts; next in {}s)", w.path,
                 w.old_content, w.content, w.reason, message, verdict.failures,
                 verdict.wait.count());
  }
}

std::string WriteExecutor::original_content(Resource resource, const std::string& cgroup,
                                            const std::string& found) const {
  if (!kubelet_) return found;
  auto logical = kubelet_(resource, cgroup);
  if (!logical) return found;
  auto content = file_from_logical(resource, fs_.version(), *logical, found);
  return content ? *content : found;
}

void WriteExecutor::record_unwritten(const std::vector<CgroupWrite>& writes,
                                     const std::vector<FileWrite>& ordered) {
  std::set<std::string> written;
  for (const auto& w : ordered)
    written.insert(w.path);
  std::vector<std::string> added;
  for (const auto& w : writes) {
    auto path = fs_.path_of(w.resource, w.cgroup);
    if (!path || written.count(*path) > 0 || originals_.count(*path) > 0) continue;
    auto current = fs_.read_cached(*path);
    if (!current) continue;
    const std::string found(trim(*current));
    const std::string original = original_content(w.resource, w.cgroup, found);
    const FileWrite entry{w.resource, w.cgroup, *path, found, original, "restore"};
    if (logical_or_raw(entry, original, fs_.version()) ==
        logical_or_raw(entry, found, fs_.version())) {
      continue;
    }
    originals_.emplace(*path, entry);
    added.push_back(*path);
  }
  if (!added.empty() && !persist_originals()) {
    for (const auto& path : added)
      originals_.erase(path);
  }
}

void WriteExecutor::remember_original(const FileWrite& w, std::vector<std::string>& added) {
  if (originals_
          .try_emplace(w.path,
                       FileWrite{w.resource, w.cgroup, w.path, w.content,
                                 original_content(w.resource, w.cgroup, w.old_content), "restore"})
          .second) {
    added.push_back(w.path);
  }
  // Entering idle: the weight read from now on is the kernel's fixed one, so keep the
  // real one for restore_all(). (Leaving idle needs nothing: the weight reads true again.)
  if (w.resource == Resource::kCpuIdle && w.old_content == "0") {
    remember_weight_under_idle(w.cgroup, added);
  }
}

bool WriteExecutor::persist_originals() {
  if (!persist_) return true;
  auto saved = persist_(originals_);
  if (saved) {
    if (recording_failed_) spdlog::info("original cgroup values are on record again");
    recording_failed_ = false;
    return true;
  }
  ++persist_failures_;
  recording_failed_ = true;
  const SteadyTime now = clock_->now();
  if (persist_failures_ == 1 || now - persist_warned_at_ >= kWarnEvery) {
    spdlog::warn(
        "cannot record original cgroup values ({}); files not yet on record are left as they "
        "are ({} failure(s) so far): a crash after changing them would leave them changed",
        saved.error().describe(), persist_failures_);
    persist_warned_at_ = now;
  }
  return false;
}

ApplyReport WriteExecutor::apply(const std::vector<CgroupWrite>& writes) {
  std::vector<Error> rejected;
  auto ordered = plan(writes, &rejected, held_);
  if (kubelet_ && !dry_run_) record_unwritten(writes, ordered);
  ApplyReport report = perform(std::move(ordered));
  report.rejected = std::move(rejected);
  return report;
}

ApplyReport WriteExecutor::perform(std::vector<FileWrite> ordered) {
  ApplyReport report;
  if (dry_run_) {
    for (auto& w : ordered) {
      spdlog::info("dry-run: would write {}: {} -> {} ({})", w.path, w.old_content, w.content,
                   w.reason);
      report.written.push_back(std::move(w));
    }
    return report;
  }
  // Every value found before a first change is on record before any of the batch's
  // writes, in one save (a narrowing that clamps N containers must not wait N fsyncs).
  std::vector<std::string> added;
  for (const auto& w : ordered)
    remember_original(w, added);
  if (!added.empty() && !persist_originals()) {
    // Not on record, not changed: forget them so that the next apply records them first.
    const std::set<std::string> unrecorded(added.begin(), added.end());
    for (const auto& path : unrecorded)
      originals_.erase(path);
    std::erase_if(ordered, [&](const FileWrite& w) {
      if (unrecorded.count(w.path) == 0) return false;
      ++counters_[to_string(w.resource)].unrecorded;
      return true;
    });
  }
  std::set<std::pair<Resource, std::string>> refused;  // (resource, cgroup) that failed
  for (auto& w : ordered) {
    auto& c = counters_[to_string(w.resource)];
    if (narrows_over_refused(w, refused)) {
      // The kernel refuses a parent narrower than a child it could not clamp; trying would
      // only add a refusal (and its backoff) to the write that protects LS.
      spdlog::debug("cgroup write {} skipped: a descendant could not be clamped", w.path);
      continue;
    }
    // An empty value (a v2 cpuset that inherits its parent's) is written as a newline:
    // an empty write(2) never reaches the kernel's handler.
    const std::string_view content = w.content.empty() ? std::string_view("\n") : w.content;
    auto status = writer_ ? writer_(w.path, content) : write_file(w.path, content);
    if (!status) {
      if (status.error().code == ErrorCode::kNotFound) {
        ++c.vanished;
        spdlog::debug("cgroup gone before write: {}", w.path);
      } else {
        ++c.failures;
        note_refusal(w, status.error());
        refused.emplace(w.resource, w.cgroup);
      }
      report.failed.emplace_back(std::move(w), status.error());
      continue;
    }
    if (const int refusals = backoff_.succeeded(w.path); refusals > 0) {
      spdlog::info("cgroup write {} succeeded after {} refusals", w.path, refusals);
    }
    ++c.writes;
    spdlog::info("cgroup write {}: {} -> {} ({})", w.path, w.old_content, w.content, w.reason);
    report.written.push_back(std::move(w));
  }
  return report;
}

bool WriteExecutor::narrows_over_refused(
    const FileWrite& w, const std::set<std::pair<Resource, std::string>>& refused) const {
  if (refused.empty() || hierarchy_rule(w.resource, fs_.version()) == HierarchyRule::kNone) {
    return false;
  }
  const auto before = logical_from_file(w.resource, fs_.version(), w.old_content);
  const auto after = logical_from_file(w.resource, fs_.version(), w.content);
  if (!before || !after || direction_of(w.resource, *before, *after) != Direction::kNarrow) {
    return false;
  }
  const std::string prefix = w.cgroup.empty() ? "" : w.cgroup + "/";
  return std::any_of(refused.begin(), refused.end(), [&](const auto& r) {
    return r.first == w.resource && r.second.size() > prefix.size() &&
           r.second.compare(0, prefix.size(), prefix) == 0;
  });
}

}  // namespace gleaner::cgroup
