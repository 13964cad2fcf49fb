#pragma once
// The agent's record of what it changed, on the node (<--state-dir>/originals.json): at
// start the knob executor adopts what an earlier run recorded (a crashed or upgraded
// agent), and from then on records every new original there before it changes the knob.
// docs/agent.md describes the format and the cases.

#include <cstdint>
#include <memory>
#include <string>

#include "agent/exec/knob_executor.h"
#include "cgroup/originals_file.h"

namespace gleaner::agent {

class StateRecord {
 public:
  StateRecord(const std::string& state_dir, const std::string& proc_root,
              exec::KnobExecutor& knobs);
  StateRecord(const StateRecord&) = delete;
  StateRecord& operator=(const StateRecord&) = delete;

  // Every original of every executor reached the file: a successor could adopt them.
  [[nodiscard]] bool complete() const { return knobs_.persist_failures() == 0; }
  // Why the last save failed (empty when it succeeded, or none was needed): changes whose
  // originals it should have recorded are held meanwhile.
  [[nodiscard]] const std::string& problem() const { return problem_; }
  // Reads and writes of the file that failed (gleaner_agent_state_file_errors_total).
  [[nodiscard]] uint64_t errors() const { return errors_; }
  [[nodiscard]] const std::string& path() const { return file_.path(); }
  // The record found at start could not be parsed (truncated, corrupt) and was set aside: what an
  // earlier run changed is not known, so the originals to restore are kubelet's values
  // (agent/qos/kubelet_values.h).
  [[nodiscard]] bool lost() const { return lost_; }
  // Nothing left to restore.
  void remove() const { (void)file_.remove(); }

 private:
  void adopt(cgroup::LoadedOriginals loaded);
  Status save(const exec::KnobOriginals& originals);

  cgroup::OriginalsFile file_;
  exec::KnobExecutor& knobs_;
  uint64_t errors_ = 0;
  bool lost_ = false;
  std::string problem_;
};

// Mounts resctrl at `root` where the CPU has RDT allocation and nobody mounted it (as
// koordlet does), unless `may_mount` is false; logs which of "mounted", "not mounted",
// "no RDT" and "no kernel support" applies.
void prepare_resctrl(const std::string& root, const std::string& proc_root, bool may_mount);

}  // namespace gleaner::agent
