#include "agent/daemon/state_record.h"

#include <spdlog/spdlog.h>

#include "common/file_io.h"
#include "resctrl/availability.h"
#include "resctrl/resctrl_fs.h"

namespace gleaner::agent {

StateRecord::StateRecord(const std::string& state_dir, const std::string& proc_root,
                         exec::KnobExecutor& knobs)
    : file_(join_path(state_dir, "originals.json"), cgroup::read_boot_id(proc_root)),
      knobs_(knobs) {
  auto loaded = file_.load();
  if (loaded) {
    adopt(std::move(*loaded));
  } else if (loaded.error().code != ErrorCode::kNotFound) {
    ++errors_;
    // A record that cannot be read (a state dir that is not a directory) may still be whole
    // for a successor; one that cannot be parsed is lost for good.
    lost_ = loaded.error().code == ErrorCode::kParse;
    spdlog::warn("{}; set aside as {}.corrupt: {}", loaded.error().describe(), file_.path(),
                 lost_ ? "the values found now may be an earlier agent's own, so kubelet's "
                         "values are restored on stop where they are known (docs/agent.md)"
                       : "values found now are taken as originals");
    (void)file_.set_aside();
  }
  knobs_.set_persist([this](const exec::KnobOriginals& originals) { return save(originals); });
}

void StateRecord::adopt(cgroup::LoadedOriginals loaded) {
  auto read = exec::read_knob_originals(std::move(loaded), file_.path());
  if (read.other_boot) {
    spdlog::info("{}: recorded before the last reboot, nothing to restore", file_.path());
    (void)file_.remove();
    return;
  }
  for (const auto& problem : read.problems) {
    ++errors_;
    spdlog::warn("{}; that section is restored from the values found now", problem.describe());
  }
  const auto& earlier = read.originals;
  if (earlier.empty()) return;
  spdlog::info(
      "{}: adopting {} cgroup values, {} system-config knobs and {} resctrl groups/lines "
      "recorded by an earlier run (restored on stop instead of the values found now)",
      file_.path(), earlier.cgroups.size(), earlier.sysctls.size(),
      earlier.resctrl.created_groups.size() + earlier.resctrl.schemata.size());
  knobs_.adopt(earlier);
}

Status StateRecord::save(const exec::KnobOriginals& originals) {
  auto saved = exec::save_knob_originals(file_, originals);
  if (!saved) ++errors_;
  problem_ = saved ? std::string() : saved.error().describe();
  return saved;
}

void prepare_resctrl(const std::string& root, const std::string& proc_root, bool may_mount) {
  const bool mounted = resctrl::ResctrlFs(root).detect().ok();
  auto cpuinfo = read_file(join_path(proc_root, "cpuinfo"));
  auto availability =
      resctrl::classify(is_directory(root), mounted, cpuinfo ? *cpuinfo : std::string());
  if (availability == resctrl::Availability::kMounted) return;
  if (availability != resctrl::Availability::kNotMounted || !may_mount) {
    spdlog::info("resctrl at {}: {}; resctrl QoS off", root, resctrl::describe(availability));
    return;
  }
  if (auto done = resctrl::mount_resctrl(root); !done) {
    spdlog::warn("resctrl at {}: {}, and mounting it failed ({}); resctrl QoS off", root,
                 resctrl::describe(availability), done.error().describe());
    return;
  }
  spdlog::info("resctrl mounted at {}", root);
}

}  // namespace gleaner::agent
