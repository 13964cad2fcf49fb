#pragma once
// The only writer of cgroup state. Every write is read first and skipped when the file
// already expresses the value, validated, ordered so that hierarchical limits stay
// consistent (widen parents before children, narrow children before parents), logged
// old -> new, counted, and the first value found in each file is remembered so that
// restore_all() can put the node back as it was.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cgroup/cgroup_fs.h"
#include "cgroup/resource.h"

namespace gleaner::cgroup {

// What a strategy wants: a logical value for a resource of a cgroup.
struct CgroupWrite {
  Resource resource;
  std::string cgroup;  // relative, e.g. "kubepods/besteffort"
  std::string value;   // logical value, e.g. quota "170000", "-1", cpuset "0-3"
  std::string reason;  // e.g. "cpu-suppress"
};

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
  int64_t vanished = 0;   // the cgroup disappeared (pod deleted): routine
  int64_t unchanged = 0;  // skipped because the file already held the value
};

struct ApplyReport {
  std::vector<FileWrite> written;
  std::vector<std::pair<FileWrite, Error>> failed;
  std::vector<Error> rejected;  // invalid or unresolvable requests, never attempted
};

class WriteExecutor {
 public:
  explicit WriteExecutor(CgroupFs& fs, bool dry_run = false) : fs_(fs), dry_run_(dry_run) {}

  // Resolves, reads current values, drops unchanged writes and orders the rest. Reads only.
  std::vector<FileWrite> plan(const std::vector<CgroupWrite>& writes,
                              std::vector<Error>* rejected = nullptr);
  // Plans, then writes in order (nothing is written in dry-run mode, only logged).
  ApplyReport apply(const std::vector<CgroupWrite>& writes);
  // Writes back the first value seen in every file this executor changed, in safe order.
  ApplyReport restore_all();

  // path -> original content, for every file changed so far.
  [[nodiscard]] const std::map<std::string, FileWrite>& originals() const { return originals_; }
  [[nodiscard]] const std::map<std::string, WriteCounters>& counters() const { return counters_; }
  [[nodiscard]] bool dry_run() const { return dry_run_; }

 private:
  ApplyReport perform(std::vector<FileWrite> ordered);

  CgroupFs& fs_;
  bool dry_run_;
  std::map<std::string, FileWrite> originals_;
  // Entering cpu.idle changes the group's weight as the kernel sees it (an idle group reads
  // a fixed weight, and leaving idle resets it to the default), so the weight found before
  // is remembered too and restore_all() puts it back after cpu.idle.
  void remember_weight_under_idle(const std::string& cgroup);
  std::map<std::string, WriteCounters> counters_;  // by resource name
};

// Orders file writes: widening writes parents-first, then neutral ones in request order,
// then narrowing writes children-first. A cpuset change that is neither (0-1 -> 2-3)
// becomes a widen to the union followed by the narrow to the target, so a child's CPUs
// are inside its parent's at every step. Pure; exposed for tests.
std::vector<FileWrite> order_writes(const std::vector<FileWrite>& writes, CgroupVersion version);

}  // namespace gleaner::cgroup
