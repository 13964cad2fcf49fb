#include "agent/edge/knob_reader.h"

#include "common/file_io.h"

namespace gleaner::agent::edge {

KnobSnapshot FsQosReader::read(const KnobReads& reads) {
  KnobSnapshot knobs(fs_.version());
  for (const auto& [cg, resources] : reads.files) {
    for (const auto resource : resources) {
      if (!fs_.has(resource, cg)) continue;
      // Task lists change constantly and are read rarely: no cached descriptor for them.
      const bool tasks =
          resource == cgroup::Resource::kThreads || resource == cgroup::Resource::kProcs;
      auto path = fs_.path_of(resource, cg);
      auto raw = !tasks ? fs_.read_raw(resource, cg)
                 : path ? read_file(*path)
                        : Result<std::string>(path.error());
      knobs.set_file(resource, cg, raw ? std::optional<std::string>(*raw) : std::nullopt);
    }
  }
  for (const auto& cg : reads.counters) {
    auto usage = fs_.read_cpu_usage_ns(cg);
    auto throttle = fs_.read_cpu_throttle(cg);
    if (usage && throttle) knobs.set_counters(cg, {*usage, throttle->nr_throttled});
  }
  if (!reads.resctrl || resctrl_ == nullptr) return knobs;
  if (auto cap = resctrl_->detect()) knobs.set_resctrl_capability(*cap);
  for (const auto& group : reads.resctrl_groups) {
    // A group directory without a readable schemata counts as empty: every line differs.
    if (is_directory(resctrl_->group_dir(group))) {
      auto s = resctrl_->read_schemata(group);
      knobs.set_resctrl_schemata(group, s ? *s : resctrl::Schemata{});
    }
    if (auto t = resctrl_->read_tasks(group)) knobs.set_resctrl_tasks(group, *t);
  }
  return knobs;
}

}  // namespace gleaner::agent::edge
