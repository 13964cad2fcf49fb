#pragma once
// The sysctl back end of the knob executor (agent/exec/knob_executor.h): the only writer of
// the node-wide kernel knobs of system-config (agent/qos/system_config.h).
// Like the cgroup executor: every write is read first and skipped when the file already
// holds the value; the value found before the first change is remembered (and handed to
// the persist hook before the change, so a crash does not lose it); a knob the config no
// longer sets goes back to that value; restore_all() puts every knob back on stop. A write
// the kernel refuses (a read-only /proc/sys in an unprivileged container) is retried with
// the cgroup writes' backoff (cgroup/write_backoff.h: 1 s doubling to 30 s, warned about at
// most once a minute). A knob whose file
// this kernel does not have (the Alibaba Cloud Linux memcg_reaper) is said once and left.

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/qos/system_config.h"
#include "cgroup/executor.h"
#include "cgroup/write_backoff.h"
#include "common/clock.h"
#include "common/json_fwd.h"
#include "common/result.h"

namespace gleaner::agent::exec {

using qos::SystemKnob;
using qos::SystemWrite;

// Knob name ("vm.min_free_kbytes") -> the file's content before the agent's first change.
using SystemOriginals = std::map<std::string, std::string>;
// The state-file form ("system" in originals.json): {"vm.min_free_kbytes": "67584", ...}.
Json system_originals_json(const SystemOriginals& originals);
// Errors name `where` and the entry; unknown knob names are refused (a newer agent's
// record is not half-read).
Result<SystemOriginals> parse_system_originals(const Json& json, const std::string& where);

// A knob write resolved to its file, as `plan` prints it.
struct SystemFileWrite {
  std::string knob;
  std::string path;
  std::string old_content;
  std::string content;
  std::string reason;
};

struct SystemApplyReport {
  std::vector<SystemFileWrite> written;
  std::vector<Error> failed;
};

class SystemExecutor {
 public:
  // `proc_root`: procfs (/proc); `sys_root`: the directory holding sys/ (/).
  SystemExecutor(std::string proc_root, std::string sys_root, bool dry_run = false,
                 const Clock* clock = nullptr);

  // The writes apply(wanted) would make for `wanted` (not the restores), reading only:
  // unchanged knobs and knobs this kernel does not have are left out.
  [[nodiscard]] std::vector<SystemFileWrite> plan(const std::vector<SystemWrite>& wanted) const;
  // `wanted`: every knob the config sets this pass. The knobs changed earlier and not in
  // `wanted` go back to their original values.
  SystemApplyReport apply(const std::vector<SystemWrite>& wanted);
  // Writes back every original value; the ones that fail stay on record.
  SystemApplyReport restore_all();

  // Puts the originals on record before a knob changes; false: not recorded, and the knob
  // it was called for is left as it is (counted as unrecorded, retried next pass).
  using Persist = std::function<bool(const SystemOriginals&)>;
  void set_persist(Persist persist) { persist_ = std::move(persist); }
  // Originals recorded by an earlier run win over the values found now.
  void adopt(const SystemOriginals& earlier);
  // Forgets the originals without writing (a successor restores them).
  void release() { originals_.clear(); }
  [[nodiscard]] const SystemOriginals& originals() const { return originals_; }
  // By knob name, as the cgroup executor counts by resource.
  [[nodiscard]] const std::map<std::string, cgroup::WriteCounters>& counters() const {
    return counters_;
  }

 private:
  [[nodiscard]] std::string path_of(SystemKnob knob) const {
    return qos::knob_path(knob, proc_root_, sys_root_);
  }
  // Writes `content` to `knob` (remembering the original first when `remember`).
  void write(SystemKnob knob, const std::string& content, const std::string& reason, bool remember,
             SystemApplyReport& report);
  void note_refusal(SystemKnob knob, const std::string& content, const Error& error);

  std::string proc_root_;
  std::string sys_root_;
  bool dry_run_;
  SystemClock system_clock_;
  const Clock* clock_;
  SystemOriginals originals_;
  Persist persist_;
  cgroup::WriteBackoff backoff_{*clock_};  // by knob name
  std::set<std::string> said_absent_;
  std::map<std::string, cgroup::WriteCounters> counters_;
};

}  // namespace gleaner::agent::exec
