#pragma once
// SchedProbe's state on libbpf, shared by the loader and public API
// (sched_probe_libbpf.cc) and the map reader (sched_probe_maps.cc). Only built with BPF.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <bpf/libbpf.h>
#include <unistd.h>

#include "agent/bpf/registered_levels.h"
#include "agent/bpf/runq_histogram.h"
#include "agent/bpf/sched_probe.h"
#include "sched_probe.skel.h"

namespace gleaner::agent::bpf {

// A cgroup's counters since it was registered, summed over CPUs.
struct Cumulative {
  int64_t cpu_ns = 0;
  RunqHistogram runq;
  RunqHistogram be_runq;
};

struct SchedProbe::Impl {
  gleaner_sched_probe* skel = nullptr;
  ring_buffer* wakeups = nullptr;  // the kernel side's wake-up signals
  void* drain_context = nullptr;   // set by drain_wakeups() while it consumes
  int stats_fd = -1;
  int ncpus = 0;
  std::map<uint64_t, std::string> dirs;  // registered cgroup id -> directory
  std::map<std::string, uint64_t> ids;   // and back: the id each directory had when named
  std::map<uint64_t, uint32_t> levels;   // registered cgroup id -> its cgroup level
  RegisteredLevels distinct_levels;      // what the kernel side reads ancestors at
  uint64_t be_cgroup_id = 0;             // set_be_cgroup (0: none)
  std::map<uint64_t, Cumulative> previous;
  int64_t previous_ns = 0;
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> previous_costs;  // id -> time, count
  int64_t previous_costs_ns = 0;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (wakeups != nullptr) ring_buffer__free(wakeups);
    if (skel != nullptr) gleaner_sched_probe__destroy(skel);  // detaches, closes, frees
    if (stats_fd >= 0) ::close(stats_fd);
  }
  [[nodiscard]] std::vector<bpf_program*> programs() const {
    std::vector<bpf_program*> out{skel->progs.gleaner_runtime, skel->progs.gleaner_switch};
    if (bpf_program__fd(skel->progs.gleaner_calibrate) >= 0)
      out.push_back(skel->progs.gleaner_calibrate);
    return out;
  }
  [[nodiscard]] static int fd(const bpf_map* map) { return bpf_map__fd(map); }
  // The ring buffer's callback; `ctx` is this Impl.
  static int on_ring_event(void* ctx, void* data, size_t size);

  // Every tracked cgroup's counters summed over CPUs.
  [[nodiscard]] std::map<uint64_t, Cumulative> read_counters() const;
  // Switches not accounted because the cgroup table was full (cumulative).
  [[nodiscard]] uint64_t read_dropped() const;
  // A free stats index for cgroup `id`, taken the way the kernel side takes one.
  [[nodiscard]] Result<uint32_t> claim_index(uint64_t id) const;
  // Zeroes an index's counters and frees it.
  void release_index(uint32_t index) const;
  // Unregisters cgroup `id` (its map entries, index and user-space records).
  void forget(uint64_t id);
  // Counts cgroup `id`'s level among the distinct levels (kUnavailable when it would be one
  // more than the kernel side reads), or uncounts it; publish_levels() hands the kernel
  // side the result (before the generation is bumped).
  Status count_level(uint64_t id, uint32_t level);
  void uncount_level(uint64_t id);
  void publish_levels() const;
  // Cached resolutions in the kernel are stale from now on.
  void bump_generation() const {
    __atomic_fetch_add(&skel->data->tracked_gen, 1, __ATOMIC_SEQ_CST);
  }
};

}  // namespace gleaner::agent::bpf
