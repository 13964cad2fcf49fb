// SchedProbe's registered levels: which ancestors the kernel side reads (resolve_cgroup).
#if GLEANER_HAVE_BPF

#include <string>

#include "agent/bpf/sched_probe_impl.h"

namespace gleaner::agent::bpf {

Status SchedProbe::Impl::count_level(uint64_t id, uint32_t level) {
  if (levels.contains(id)) return ok_status();
  if (!distinct_levels.add(level)) {
    return make_error(ErrorCode::kUnavailable,
                      "sched probe: registered cgroups already sit at " +
                          std::to_string(distinct_levels.capacity()) +
                          " distinct levels, none more can be read (level " +
                          std::to_string(level) + ")");
  }
  levels[id] = level;
  return ok_status();
}

void SchedProbe::Impl::uncount_level(uint64_t id) {
  auto found = levels.find(id);
  if (found == levels.end()) return;
  distinct_levels.remove(found->second);
  levels.erase(found);
}

void SchedProbe::Impl::publish_levels() const {
  const std::vector<uint32_t> deepest_first = distinct_levels.deepest_first();
  for (size_t i = 0; i < deepest_first.size(); ++i)
    __atomic_store_n(&skel->bss->tracked_levels[i], deepest_first[i], __ATOMIC_SEQ_CST);
  __atomic_store_n(&skel->bss->tracked_level_count, static_cast<uint32_t>(deepest_first.size()),
                   __ATOMIC_SEQ_CST);
}

}  // namespace gleaner::agent::bpf

#endif
