// SchedProbe's map reader: the counters and the stats-index protocol.
#if GLEANER_HAVE_BPF

#include <cerrno>
#include <string>

#include <bpf/bpf.h>

#include "agent/bpf/sched_probe_impl.h"

namespace gleaner::agent::bpf {

std::map<uint64_t, Cumulative> SchedProbe::Impl::read_counters() const {
  std::map<uint64_t, Cumulative> out;
  std::vector<gleaner_cgroup_stats> values(static_cast<size_t>(ncpus));
  uint64_t key = 0;
  uint64_t next = 0;
  const void* prev_key = nullptr;
  while (bpf_map_get_next_key(fd(skel->maps.tracked), prev_key, &next) == 0) {
    key = next;
    prev_key = &key;
    uint32_t index = 0;
    if (bpf_map_lookup_elem(fd(skel->maps.tracked), &key, &index) != 0) continue;  // deleted
    if (bpf_map_lookup_elem(fd(skel->maps.stats), &index, values.data()) != 0) continue;
    Cumulative& c = out[key];
    for (const auto& v : values) {
      c.cpu_ns += static_cast<int64_t>(v.cpu_ns);
      c.runq.count += v.runq_count;
      c.runq.sum_ns += v.runq_sum_ns;
      c.be_runq.count += v.be_runq_count;
      c.be_runq.sum_ns += v.be_runq_sum_ns;
      for (size_t i = 0; i < c.runq.slots.size(); ++i) {
        c.runq.slots[i] += v.runq_slots[i];
        c.be_runq.slots[i] += v.be_runq_slots[i];
      }
    }
  }
  return out;
}

uint64_t SchedProbe::Impl::read_dropped() const {
  std::vector<uint64_t> values(static_cast<size_t>(ncpus));
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(fd(skel->maps.dropped), &zero, values.data()) != 0) return 0;
  uint64_t sum = 0;
  for (uint64_t v : values)
    sum += v;
  return sum;
}

Result<uint32_t> SchedProbe::Impl::claim_index(uint64_t id) const {
  // The same protocol as the kernel side: an index is taken by inserting it into
  // `claimed` with BPF_NOEXIST, so user space and CPUs never hand out one index twice.
  uint32_t hint = skel->bss->last_index;
  for (uint32_t i = 1; i < GLEANER_MAX_CGROUPS; ++i) {
    uint32_t index = (hint + i) % (GLEANER_MAX_CGROUPS - 1) + 1;
    if (bpf_map_update_elem(fd(skel->maps.claimed), &index, &id, BPF_NOEXIST) == 0) {
      skel->bss->last_index = index;
      return index;
    }
    if (errno != EEXIST) return errno_error(errno, "claim a stats index");
  }
  return make_error(
      ErrorCode::kUnavailable,
      "sched probe: all " + std::to_string(GLEANER_MAX_CGROUPS - 1) + " cgroup slots are in use");
}

void SchedProbe::Impl::release_index(uint32_t index) const {
  // Zeroed before it is free again, so the next owner starts from nothing.
  std::vector<gleaner_cgroup_stats> zeros(static_cast<size_t>(ncpus));
  bpf_map_update_elem(fd(skel->maps.stats), &index, zeros.data(), BPF_ANY);
  bpf_map_delete_elem(fd(skel->maps.claimed), &index);
}

void SchedProbe::Impl::forget(uint64_t id) {
  const int tracked = fd(skel->maps.tracked);
  uint32_t index = 0;
  uncount_level(id);
  if (bpf_map_lookup_elem(tracked, &id, &index) == 0) {
    bpf_map_delete_elem(tracked, &id);
    publish_levels();
    bump_generation();  // before the index is free for another cgroup
    release_index(index);
  }
  previous.erase(id);
  auto dir = dirs.find(id);
  if (dir == dirs.end()) return;
  auto named = ids.find(dir->second);
  if (named != ids.end() && named->second == id) ids.erase(named);
  dirs.erase(dir);
}

}  // namespace gleaner::agent::bpf

#endif
