#pragma once
// The agent's one record of the values it found before changing them, for every knob
// family, and its one JSON form: the originals file of cgroup/originals_file.h, whose
// "cgroups" list holds the cgroup files and whose sections hold resctrl's ("resctrl") and
// the sysctls' ("system"). The form is the one agents have always written, so an upgraded
// agent adopts and restores what an older one changed.

#include <string>
#include <vector>

#include "agent/exec/resctrl_executor.h"
#include "agent/exec/system_executor.h"
#include "cgroup/executor.h"
#include "cgroup/originals_file.h"
#include "common/result.h"

namespace gleaner::agent::exec {

struct KnobOriginals {
  cgroup::Originals cgroups;  // by path
  ResctrlOriginals resctrl;   // groups created, schemata lines found, tasks placed
  SystemOriginals sysctls;    // by knob name ("vm.min_free_kbytes")
  [[nodiscard]] bool empty() const { return cgroups.empty() && resctrl.empty() && sysctls.empty(); }
};

// A record read back: what could be parsed, and what could not (each error names the
// file and the section; a bad section is skipped, the others are still adopted).
struct ReadOriginals {
  KnobOriginals originals;
  bool other_boot = false;  // recorded before the last reboot: nothing to restore
  std::vector<Error> problems;
};

ReadOriginals read_knob_originals(cgroup::LoadedOriginals loaded, const std::string& where);
// Replaces the file's record with `originals` (atomically; cgroup/originals_file.h).
Status save_knob_originals(const cgroup::OriginalsFile& file, const KnobOriginals& originals);

}  // namespace gleaner::agent::exec
