#pragma once
// The only writer of cgroup state. Every write is read first and skipped when the file
// already expresses the value, validated, ordered so that hierarchical limits stay
// consistent (widen parents before children, narrow children before parents), logged
// old -> new, counted, and the first value found in each file is remembered so that
// restore_all() can put the node back as it was. Knobs the kernel bounds by their
// ancestors (cgroup/hierarchy.h) are fitted over the whole subtree, so a plan the kernel
// would refuse part of is never attempted. A write the kernel still refuses is retried
// with backoff and warned about at most once a minute (cgroup/write_backoff.h).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cgroup/cgroup_fs.h"
#include "cgroup/cgroup_write.h"
#include "cgroup/held_clamp.h"
#include "cgroup/hierarchy.h"
#include "cgroup/resource.h"
#include "cgroup/write_backoff.h"
#include "common/clock.h"

namespace gleaner::cgroup {

// A write resolved to a file: what `plan` prints and `apply` performs.
struct FileWrite {
  Resource resource;
  std::string cgroup;
  std::string path;
  std::string old_content;  // trimmed file content before the write
  std::string content;      // what will be written
  std::string reason;
};

struct WriteCounters {
  int64_t writes = 0;
  int64_t failures = 0;
  int64_t vanished = 0;    // the cgroup disappeared (pod deleted): routine
  int64_t unchanged = 0;   // skipped because the file already held the value
  int64_t clamped = 0;     // written below what was asked, to fit under an ancestor
  int64_t deferred = 0;    // a refused write not retried yet (backoff)
  int64_t unrecorded = 0;  // held: its original could not be put on record first
};

// path -> the value found before the first change, with its resource and cgroup.
using Originals = std::map<std::string, FileWrite>;

struct ApplyReport {
  std::vector<FileWrite> written;
  std::vector<std::pair<FileWrite, Error>> failed;
  std::vector<Error> rejected;  // invalid or unresolvable requests, never attempted
};

class WriteExecutor {
 public:
  explicit WriteExecutor(CgroupFs& fs, bool dry_run = false, const Clock* clock = nullptr);

  // Called with every original value whenever one is added, before the write that changes
  // that file: the caller persists them (a crash must not lose them). When that fails, the
  // files whose originals are not on record are left as they are (counted as unrecorded,
  // warned about once a minute) and retried at the next apply: an agent that crashed after
  // changing them could never put them back, and a node left worse than found is worse
  // than a node not yet protected. Files already on record are written as usual.
  using PersistOriginals = std::function<Status(const Originals&)>;
  void set_persist(PersistOriginals persist) { persist_ = std::move(persist); }
  // Takes originals recorded by an earlier run (a crashed or upgraded agent): they, not
  // the values found now, are what restore_all() puts back. Call before the first write.
  void adopt_originals(const Originals& originals);
  // The record of originals was lost (corrupt): a value found now may be an earlier agent's
  // own, so from now on the original of a file is the value `kubelet` gives (resource,
  // cgroup) as a logical value, where it gives one, and every file a request names is put
  // on record, even one that already holds the requested value (an earlier agent may have
  // written it). nullopt from `kubelet`: the value found is kept, as without the hook.
  using KubeletValue =
      std::function<std::optional<std::string>(Resource resource, const std::string& cgroup)>;
  void set_lost_record(KubeletValue kubelet) { kubelet_ = std::move(kubelet); }
  // Forgets every original without writing (the values stay for a successor to restore).
  void release_originals() { originals_.clear(); }
  [[nodiscard]] int64_t persist_failures() const { return persist_failures_; }
  // The last attempt to record originals failed (writes to unrecorded files are held).
  [[nodiscard]] bool recording_failed() const { return recording_failed_; }
  // How files are written (tests put a model of the kernel's refusals here).
  using FileWriter = std::function<Status(const std::string& path, std::string_view content)>;
  void set_writer(FileWriter writer) { writer_ = std::move(writer); }

  // Resolves, reads current values, drops unchanged writes and orders the rest. Reads only,
  // and changes nothing here either: apply() then makes exactly these writes.
  std::vector<FileWrite> plan(const std::vector<CgroupWrite>& writes,
                              std::vector<Error>* rejected = nullptr);
  // Plans, then writes in order (nothing is written in dry-run mode, only logged).
  ApplyReport apply(const std::vector<CgroupWrite>& writes);
  // Writes back the first value seen in every file this executor changed, in safe order.
  ApplyReport restore_all();

  // path -> original content, for every file changed so far.
  [[nodiscard]] const Originals& originals() const { return originals_; }
  [[nodiscard]] const std::map<std::string, WriteCounters>& counters() const { return counters_; }
  [[nodiscard]] bool dry_run() const { return dry_run_; }
  // The clamps held now (cgroup/held_clamp.h), and replacing them: a pass's writes depend
  // on them, so the daemon records them with each pass and `plan` adopts them to replay it.
  [[nodiscard]] std::vector<HeldClamp> held_clamps() const { return held_.list(); }
  void adopt_held_clamps(const std::vector<HeldClamp>& clamps) { held_.adopt(clamps); }

 private:
  // plan(), with `held` the clamps it starts from and leaves as the writes will.
  std::vector<FileWrite> plan(const std::vector<CgroupWrite>& writes, std::vector<Error>* rejected,
                              HeldClamps& held);
  ApplyReport perform(std::vector<FileWrite> ordered);
  // Replaces the resolved writes of a knob with a hierarchy rule by the values every cgroup
  // of the subtrees they touch must hold (cgroup/hierarchy.h).
  void fit_hierarchy(Resource resource, const std::vector<CgroupWrite>& requests,
                     std::vector<FileWrite>& resolved, HeldClamps& held);
  // Records the value `w` finds, adding the paths of new originals to `added`;
  // persist_originals() hands the record to the persist hook (false: it failed).
  void remember_original(const FileWrite& w, std::vector<std::string>& added);
  bool persist_originals();
  // The content to record as the original of a file holding `found` (trimmed).
  [[nodiscard]] std::string original_content(Resource resource, const std::string& cgroup,
                                             const std::string& found) const;
  // With the record lost: puts the files `writes` names on record that `ordered` does not
  // write and whose content is not kubelet's (they hold what was asked already).
  void record_unwritten(const std::vector<CgroupWrite>& writes,
                        const std::vector<FileWrite>& ordered);
  // Whether `w` narrows a cgroup above one whose write of the same knob was refused or held
  // back (the kernel would refuse `w` too).
  bool narrows_over_refused(const FileWrite& w,
                            const std::set<std::pair<Resource, std::string>>& refused) const;
  void restore_inherited_cpusets(ApplyReport& report);
  void add_cpusets_copied_at_creation(std::vector<FileWrite>& back);
  void note_refusal(const FileWrite& w, const Error& error);
  bool deferred(const FileWrite& w);

  CgroupFs& fs_;
  bool dry_run_;
  const Clock* clock_;
  Originals originals_;
  PersistOriginals persist_;
  FileWriter writer_;
  KubeletValue kubelet_;
  int64_t persist_failures_ = 0;
  bool recording_failed_ = false;
  SteadyTime persist_warned_at_{};
  WriteBackoff backoff_{*clock_};  // by path
  HeldClamps held_;
  // Entering cpu.idle changes the group's weight as the kernel sees it (an idle group reads
  // a fixed weight, and leaving idle resets it to the default), so the weight found before
  // is remembered too and restore_all() puts it back after cpu.idle.
  void remember_weight_under_idle(const std::string& cgroup, std::vector<std::string>& added);
  std::map<std::string, WriteCounters> counters_;  // by resource name
};

// Orders file writes: widening writes parents-first, then neutral ones in request order,
// then narrowing writes children-first. A cpuset change that is neither (0-1 -> 2-3)
// becomes a widen to the union followed by the narrow to the target, so a child's CPUs
// are inside its parent's at every step. Pure; exposed for tests.
std::vector<FileWrite> order_writes(const std::vector<FileWrite>& writes, CgroupVersion version);

}  // namespace gleaner::cgroup
