#include "agent/exec/knob_executor.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace gleaner::agent::exec {
namespace {

KnobChange cgroup_change(const cgroup::FileWrite& w) {
  return {KnobKind::kCgroup, w.path, w.old_content, w.content, w.reason};
}

KnobChange sysctl_change(const SystemFileWrite& w) {
  return {KnobKind::kSysctl, w.path, w.old_content, w.content, w.reason};
}

void add_cgroups(cgroup::ApplyReport&& from, KnobReport& to) {
  for (const auto& w : from.written)
    to.written.push_back(cgroup_change(w));
  for (auto& [w, e] : from.failed)
    to.failed.push_back({KnobKind::kCgroup, w.path, std::move(e)});
  for (auto& e : from.rejected)
    to.rejected.push_back({KnobKind::kCgroup, "", std::move(e)});
}

void add_resctrl(ResctrlApplyReport&& from, KnobReport& to) {
  for (auto& w : from.changes)
    to.written.push_back(
        {KnobKind::kResctrl, std::move(w.path), "", std::move(w.value), std::move(w.reason)});
  for (auto& e : from.failed)
    to.failed.push_back({KnobKind::kResctrl, "", std::move(e)});
  to.unrecorded += from.unrecorded;
}

void add_sysctls(SystemApplyReport&& from, KnobReport& to) {
  for (const auto& w : from.written)
    to.written.push_back(sysctl_change(w));
  for (auto& e : from.failed)
    to.failed.push_back({KnobKind::kSysctl, "", std::move(e)});
}

}  // namespace

const char* to_string(KnobKind kind) {
  switch (kind) {
    case KnobKind::kCgroup:
      return "cgroup";
    case KnobKind::kResctrl:
      return "resctrl";
    case KnobKind::kSysctl:
      return "sysctl";
  }
  return "?";
}

size_t KnobReport::written_of(KnobKind kind) const {
  return static_cast<size_t>(std::count_if(written.begin(), written.end(),
                                           [&](const KnobChange& c) { return c.kind == kind; }));
}

size_t KnobReport::failed_of(KnobKind kind) const {
  return static_cast<size_t>(std::count_if(failed.begin(), failed.end(),
                                           [&](const KnobFailure& f) { return f.kind == kind; }));
}

bool KnobReport::nothing_left() const {
  return std::all_of(failed.begin(), failed.end(), [](const KnobFailure& f) {
    return f.kind == KnobKind::kCgroup && f.error.code == ErrorCode::kNotFound;
  });
}

KnobExecutor::KnobExecutor(cgroup::CgroupFs& cgroups, const resctrl::ResctrlFs* resctrl,
                           std::string proc_root, std::string sys_root, bool dry_run,
                           const Clock* clock)
    : cgroups_(cgroups, dry_run, clock),
      resctrl_fs_(resctrl),
      resctrl_(resctrl != nullptr ? std::make_unique<ResctrlExecutor>(*resctrl, dry_run) : nullptr),
      sysctls_(std::move(proc_root), std::move(sys_root), dry_run, clock) {
  // Each back end hands over its own grown record; the whole record is the others' as they
  // stand plus that one.
  cgroups_.set_persist([this](const cgroup::Originals& grown) {
    KnobOriginals all = originals();
    all.cgroups = grown;
    return record(std::move(all));
  });
  if (resctrl_) {
    resctrl_->set_persist([this](const ResctrlOriginals& grown) {
      KnobOriginals all = originals();
      all.resctrl = grown;
      return record(std::move(all)).ok();
    });
  }
  sysctls_.set_persist([this](const SystemOriginals& grown) {
    KnobOriginals all = originals();
    all.sysctls = grown;
    return record(std::move(all)).ok();
  });
}

Status KnobExecutor::record(KnobOriginals all) {
  if (!persist_) return ok_status();
  auto saved = persist_(all);
  if (!saved) ++persist_failures_;
  return saved;
}

KnobReport KnobExecutor::plan(const std::vector<cgroup::CgroupWrite>& cgroups,
                              const std::vector<qos::ResctrlAction>& resctrl,
                              const std::vector<qos::SystemWrite>* sysctls) {
  cgroup::ApplyReport planned;
  planned.written = cgroups_.plan(cgroups, &planned.rejected);
  KnobReport report;
  add_cgroups(std::move(planned), report);
  if (resctrl_fs_ != nullptr) {
    for (const auto& a : resctrl) {
      auto d = describe(*resctrl_fs_, a);
      report.written.push_back(
          {KnobKind::kResctrl, std::move(d.path), "", std::move(d.value), std::move(d.reason)});
    }
  }
  if (sysctls != nullptr) {
    for (const auto& w : sysctls_.plan(*sysctls))
      report.written.push_back(sysctl_change(w));
  }
  return report;
}

KnobReport KnobExecutor::apply(const std::vector<cgroup::CgroupWrite>& cgroups,
                               const std::vector<qos::ResctrlAction>& resctrl,
                               const std::vector<qos::SystemWrite>* sysctls) {
  KnobReport report;
  // The cgroup and sysctl back ends count what they hold back in their counters.
  const int64_t held_before = held();
  if (!cgroups.empty()) add_cgroups(cgroups_.apply(cgroups), report);
  if (!resctrl.empty() && resctrl_) add_resctrl(resctrl_->apply(resctrl), report);
  if (sysctls != nullptr) add_sysctls(sysctls_.apply(*sysctls), report);
  report.unrecorded += held() - held_before;
  return report;
}

int64_t KnobExecutor::held() const {
  int64_t sum = 0;
  for (const auto* counters : {&cgroups_.counters(), &sysctls_.counters()}) {
    for (const auto& [name, c] : *counters)
      sum += c.unrecorded;
  }
  return sum;
}

KnobReport KnobExecutor::restore_all() {
  KnobReport report;
  if (resctrl_) add_resctrl(resctrl_->restore_all(), report);
  add_cgroups(cgroups_.restore_all(), report);
  add_sysctls(sysctls_.restore_all(), report);
  return report;
}

void KnobExecutor::adopt(const KnobOriginals& earlier) {
  cgroups_.adopt_originals(earlier.cgroups);
  sysctls_.adopt(earlier.sysctls);
  if (earlier.resctrl.empty()) return;
  if (resctrl_) {
    resctrl_->adopt(earlier.resctrl);
  } else {
    spdlog::warn("resctrl changes on record but resctrl is not available here; left as is");
  }
}

void KnobExecutor::release() {
  cgroups_.release_originals();
  if (resctrl_) resctrl_->release();
  sysctls_.release();
}

KnobOriginals KnobExecutor::originals() const {
  KnobOriginals out;
  out.cgroups = cgroups_.originals();
  if (resctrl_) out.resctrl = resctrl_->originals();
  out.sysctls = sysctls_.originals();
  return out;
}

std::map<std::string, cgroup::WriteCounters> KnobExecutor::counters() const {
  auto out = cgroups_.counters();
  for (const auto& [name, c] : sysctls_.counters())
    out[name] = c;
  return out;
}

}  // namespace gleaner::agent::exec
