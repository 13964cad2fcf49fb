#include "agent/exec/knob_originals.h"

namespace gleaner::agent::exec {
namespace {

constexpr const char* kResctrlSection = "resctrl";
constexpr const char* kSysctlSection = "system";

}  // namespace

ReadOriginals read_knob_originals(cgroup::LoadedOriginals loaded, const std::string& where) {
  ReadOriginals out;
  out.other_boot = loaded.other_boot;
  if (loaded.other_boot) return out;
  out.originals.cgroups = std::move(loaded.originals);
  if (auto section = loaded.sections.find(kSysctlSection); section != loaded.sections.end()) {
    if (auto knobs = parse_system_originals(*section, where)) {
      out.originals.sysctls = std::move(*knobs);
    } else {
      out.problems.push_back(knobs.error());
    }
  }
  if (auto section = loaded.sections.find(kResctrlSection); section != loaded.sections.end()) {
    if (auto changes = parse_resctrl_originals(*section, where)) {
      out.originals.resctrl = std::move(*changes);
    } else {
      out.problems.push_back(changes.error());
    }
  }
  return out;
}

Status save_knob_originals(const cgroup::OriginalsFile& file, const KnobOriginals& originals) {
  Json sections = Json::object();
  if (!originals.resctrl.empty()) {
    sections[kResctrlSection] = resctrl_originals_json(originals.resctrl);
  }
  if (!originals.sysctls.empty()) {
    sections[kSysctlSection] = system_originals_json(originals.sysctls);
  }
  return file.save(originals.cgroups, sections);
}

}  // namespace gleaner::agent::exec
