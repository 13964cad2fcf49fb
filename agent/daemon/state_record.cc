#include "agent/daemon/state_record.h"

#include <spdlog/spdlog.h>

#include "common/file_io.h"
#include "resctrl/availability.h"
#include "resctrl/resctrl_fs.h"

namespace gleaner::agent {

StateRecord::StateRecord(const std::string& state_dir, const std::string& proc_root,
                         cgroup::WriteExecutor& cgroups, qos::ResctrlExecutor* resctrl,
                         qos::SystemExecutor& system)
    : file_(join_path(state_dir, "originals.json"), cgroup::read_boot_id(proc_root)),
      cgroups_(cgroups),
      resctrl_(resctrl),
      system_(system) {
  auto loaded = file_.load();
  if (loaded) {
    adopt(std::move(*loaded));
  } else if (loaded.error().code != ErrorCode::kNotFound) {
    ++errors_;
    spdlog::warn(
        "{}; set aside as {}.corrupt: values found now are taken as originals, which may be an "
        "earlier agent's own",
        loaded.error().describe(), file_.path());
    (void)file_.set_aside();
  }
  cgroups_.set_persist([this](const cgroup::Originals& originals) {
    return save(originals, resctrl_originals(), system_.originals());
  });
  if (resctrl_ != nullptr) {
    resctrl_->set_persist([this](const qos::ResctrlOriginals& changes) {
      if (save(cgroups_.originals(), changes, system_.originals())) return true;
      ++resctrl_save_failures_;
      return false;
    });
  }
  system_.set_persist([this](const qos::SystemOriginals& knobs) {
    if (save(cgroups_.originals(), resctrl_originals(), knobs)) return true;
    ++system_save_failures_;
    return false;
  });
}

void StateRecord::adopt(cgroup::LoadedOriginals loaded) {
  if (loaded.other_boot) {
    spdlog::info("{}: recorded before the last reboot, nothing to restore", file_.path());
    (void)file_.remove();
    return;
  }
  if (!loaded.originals.empty()) {
    spdlog::info(
        "{}: adopting {} original values recorded by an earlier run (restored on stop instead "
        "of the values found now)",
        file_.path(), loaded.originals.size());
    cgroups_.adopt_originals(loaded.originals);
  }
  if (auto knobs = loaded.sections.find("system"); knobs != loaded.sections.end()) {
    if (auto earlier = qos::parse_system_originals(*knobs, file_.path()); !earlier) {
      ++errors_;
      spdlog::warn("{}; system-config knobs are restored from the values found now",
                   earlier.error().describe());
    } else {
      spdlog::info("{}: adopting {} system-config knob values recorded by an earlier run",
                   file_.path(), earlier->size());
      system_.adopt(*earlier);
    }
  }
  auto section = loaded.sections.find("resctrl");
  if (section == loaded.sections.end()) return;
  auto earlier = qos::parse_resctrl_originals(*section, file_.path());
  if (!earlier) {
    ++errors_;
    spdlog::warn("{}; resctrl is restored from the values found now", earlier.error().describe());
  } else if (resctrl_ == nullptr) {
    spdlog::warn("{}: resctrl changes on record but resctrl is not available here; left as is",
                 file_.path());
  } else {
    resctrl_->adopt(*earlier);
  }
}

Status StateRecord::save(const cgroup::Originals& cgroups, const qos::ResctrlOriginals& resctrl,
                         const qos::SystemOriginals& system) {
  Json sections = Json::object();
  if (!resctrl.empty()) sections["resctrl"] = qos::resctrl_originals_json(resctrl);
  if (!system.empty()) sections["system"] = qos::system_originals_json(system);
  auto saved = file_.save(cgroups, sections);
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
