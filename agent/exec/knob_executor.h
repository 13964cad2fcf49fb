#pragma once
// The one writer of the kernel state the agent changes (docs/architecture.md, "One writer
// for kernel state"). Three back ends hold the rules of their knobs: cgroup files
// (cgroup::WriteExecutor: ordering and clamping under the kernel's hierarchy rules), resctrl
// groups, schemata and tasks (ResctrlExecutor), and the sysctl and sysfs files of
// system-config (SystemExecutor). Around them this executor keeps what they share:
// one record of the values found before the first change (one persist hook, called before
// any change, and one JSON form: agent/exec/knob_originals.h), one adopt / release /
// restore_all path, one report, and the refusal back-off of cgroup/write_backoff.h.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/exec/knob_originals.h"
#include "agent/exec/resctrl_executor.h"
#include "agent/exec/system_executor.h"
#include "agent/qos/qos_types.h"
#include "cgroup/executor.h"
#include "common/clock.h"
#include "common/result.h"

namespace gleaner::agent::exec {

enum class KnobKind { kCgroup, kResctrl, kSysctl };
const char* to_string(KnobKind kind);

// One file (or resctrl group directory) changed: its value before and after.
struct KnobChange {
  KnobKind kind = KnobKind::kCgroup;
  std::string path;
  std::string old_value;  // empty where the back end does not read it first (resctrl)
  std::string value;
  std::string reason;
};

struct KnobFailure {
  KnobKind kind = KnobKind::kCgroup;
  std::string path;  // empty when the request named no file (an invalid value)
  Error error;
};

struct KnobReport {
  std::vector<KnobChange> written;
  std::vector<KnobFailure> failed;    // attempted, and the kernel (or the file) said no
  std::vector<KnobFailure> rejected;  // invalid or unresolvable requests, never attempted
  int64_t unrecorded = 0;             // held: their originals could not be put on record

  [[nodiscard]] size_t written_of(KnobKind kind) const;
  [[nodiscard]] size_t failed_of(KnobKind kind) const;
  // Every failure is a cgroup that no longer exists (nothing is left to put back).
  [[nodiscard]] bool nothing_left() const;
};

class KnobExecutor {
 public:
  // `resctrl` may be null (no resctrl on this node): resctrl actions are then dropped.
  // `proc_root` is procfs (/proc), `sys_root` the directory holding sys/ (/).
  KnobExecutor(cgroup::CgroupFs& cgroups, const resctrl::ResctrlFs* resctrl, std::string proc_root,
               std::string sys_root, bool dry_run = false, const Clock* clock = nullptr);
  KnobExecutor(const KnobExecutor&) = delete;
  KnobExecutor& operator=(const KnobExecutor&) = delete;

  // What apply() would write, reading only (`plan` prints it): the cgroup writes as
  // resolved, fitted and ordered, the resctrl actions, and the sysctls that differ (not the
  // ones a full pass would put back). Invalid or unresolvable requests come as rejected.
  KnobReport plan(const std::vector<cgroup::CgroupWrite>& cgroups,
                  const std::vector<qos::ResctrlAction>& resctrl,
                  const std::vector<qos::SystemWrite>* sysctls = nullptr);
  // Performs the cgroup writes, then the resctrl actions, then, when `sysctls` is given (a
  // full pass), sets every knob in it and puts back the ones changed earlier and not in it.
  KnobReport apply(const std::vector<cgroup::CgroupWrite>& cgroups,
                   const std::vector<qos::ResctrlAction>& resctrl,
                   const std::vector<qos::SystemWrite>* sysctls = nullptr);
  // Writes back every original value: resctrl first (removing its groups moves their tasks
  // back), then cgroups (in safe order), then sysctls. The ones that fail stay on record.
  KnobReport restore_all();

  // Called with the whole record whenever it grows, before the change that grew it: the
  // caller persists it (a crash must not lose it). When that fails, the change is held
  // (counted as unrecorded) and tried again with the next apply.
  using Persist = std::function<Status(const KnobOriginals&)>;
  void set_persist(Persist persist) { persist_ = std::move(persist); }
  // Takes the record of an earlier run (a crashed or upgraded agent): its values, not the
  // ones found now, are what restore_all() puts back. Call before the first apply.
  void adopt(const KnobOriginals& earlier);
  // Forgets every original without writing (the values stay for a successor to restore).
  void release();
  [[nodiscard]] KnobOriginals originals() const;
  // Persist calls that failed so far (0: every original reached the record).
  [[nodiscard]] int64_t persist_failures() const { return persist_failures_; }

  // The cgroup back end, for `plan`'s reads and the tick's records.
  [[nodiscard]] cgroup::WriteExecutor& cgroups() { return cgroups_; }
  [[nodiscard]] bool has_resctrl() const { return resctrl_ != nullptr; }
  // Write counters by cgroup resource name ("cpu_quota") and by sysctl name
  // ("vm.min_free_kbytes"); the two sets of names do not meet.
  [[nodiscard]] std::map<std::string, cgroup::WriteCounters> counters() const;

 private:
  Status record(KnobOriginals all);
  // Writes held back so far because their originals could not be recorded.
  [[nodiscard]] int64_t held() const;

  cgroup::WriteExecutor cgroups_;
  const resctrl::ResctrlFs* resctrl_fs_;
  std::unique_ptr<ResctrlExecutor> resctrl_;
  SystemExecutor sysctls_;
  Persist persist_;
  int64_t persist_failures_ = 0;
};

}  // namespace gleaner::agent::exec
