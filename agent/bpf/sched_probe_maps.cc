// SchedProbe's map reader: the counters, the running slots and the stats-index protocol.
#if GLEANER_HAVE_BPF

#include <cerrno>
#include <charconv>
#include <optional>
#include <string>

#include <bpf/bpf.h>

#include "agent/bpf/running_slots.h"
#include "agent/bpf/sched_probe_impl.h"
#include "common/file_io.h"

namespace gleaner::agent::bpf {
namespace {

// Runtime of a thread so far (ns, including the slice it is in now), from
// /proc/<tid>/schedstat; nullopt when it is gone or in another pid namespace.
std::optional<uint64_t> thread_runtime_ns(uint32_t tid) {
  auto text = read_file("/proc/" + std::to_string(tid) + "/schedstat");
  if (!text) return std::nullopt;
  uint64_t runtime = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), runtime);
  if (ec != std::errc()) return std::nullopt;
  return runtime;
}

}  // namespace

Result<std::vector<gleaner_cpu_slot>> SchedProbe::Impl::read_running() const {
  std::vector<gleaner_cpu_slot> slots(static_cast<size_t>(ncpus));
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(fd(skel->maps.running), &zero, slots.data()) != 0) {
    return errno_error(errno, "read running slots");
  }
  return slots;
}

std::map<uint64_t, Cumulative> SchedProbe::Impl::read_counters(
    std::map<uint32_t, uint64_t>& id_of) const {
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
    id_of[index] = key;
    Cumulative& c = out[key];
    for (const auto& v : values) {
      c.cpu_ns += static_cast<int64_t>(v.cpu_ns);
      c.runq.count += v.runq_count;
      c.runq.sum_ns += v.runq_sum_ns;
      for (size_t i = 0; i < c.runq.slots.size(); ++i)
        c.runq.slots[i] += v.runq_slots[i];
    }
  }
  return out;
}

Result<std::map<uint64_t, Cumulative>> SchedProbe::Impl::read_cumulative() const {
  // Counters bracketed by two reads of the running slots (see running_slots.h). After a
  // few tries the last reading stands: a task switching that often has short slices.
  constexpr int kTries = 4;
  std::map<uint64_t, Cumulative> out;
  std::map<uint32_t, uint64_t> id_of;  // stats index -> cgroup id
  std::vector<gleaner_cpu_slot> slots;
  for (int attempt = 1; attempt <= kTries; ++attempt) {
    auto before = read_running();
    if (!before) return before.error();
    id_of.clear();
    out = read_counters(id_of);
    auto after = read_running();
    if (!after) return after.error();
    slots = std::move(*after);
    if (accounted_tasks_unchanged(*before, slots)) break;
  }
  for (const auto& s : slots) {
    auto id = id_of.find(s.index);
    if (s.index == 0 || id == id_of.end()) continue;
    auto runtime = thread_runtime_ns(s.tid);
    if (runtime && *runtime > s.runtime_at_arrival_ns) {
      out[id->second].cpu_ns += static_cast<int64_t>(*runtime - s.runtime_at_arrival_ns);
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

}  // namespace gleaner::agent::bpf

#endif
