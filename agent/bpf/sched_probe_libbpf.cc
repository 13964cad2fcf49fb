// SchedProbe on libbpf: the skeleton generated from sched_probe.bpf.c at build time.
#if GLEANER_HAVE_BPF

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/bpf/running_slots.h"
#include "agent/bpf/sched_probe.h"
#include "cgroup/version.h"
#include "sched_probe.skel.h"

namespace gleaner::agent::bpf {
namespace {

constexpr const char* kBtfPath = "/sys/kernel/btf/vmlinux";

int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // the clock bpf_ktime_get_ns() reads
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// libbpf's messages go to the debug log; the last ones are kept so an error can quote
// the verifier's verdict.
std::mutex g_log_mutex;
std::deque<std::string> g_log_tail;

int libbpf_print(enum libbpf_print_level level, const char* format, va_list args) {
  char line[1024];
  std::vsnprintf(line, sizeof(line), format, args);
  std::string text(line);
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  if (level != LIBBPF_DEBUG) {
    std::lock_guard lock(g_log_mutex);
    g_log_tail.push_back(text);
    if (g_log_tail.size() > 12) g_log_tail.pop_front();
  }
  spdlog::debug("libbpf: {}", text);
  return 0;
}

std::string take_log_tail() {
  std::lock_guard lock(g_log_mutex);
  std::string out;
  bool verifier = false;
  for (const auto& line : g_log_tail) {
    if (line.find("PROG LOAD LOG") != std::string::npos) verifier = true;
    out += "\n  " + line;
  }
  g_log_tail.clear();
  return (verifier ? "[verifier]" : "") + out;
}

// Maps a libbpf failure to a typed error; `stage` is load or attach.
Error probe_error(const char* stage, int err) {
  err = err < 0 ? -err : err;
  std::string tail = take_log_tail();
  bool verifier = tail.rfind("[verifier]", 0) == 0;
  std::string message = std::string("sched probe ") + stage + ": " + std::strerror(err);
  if (verifier) {
    return make_error(ErrorCode::kInvalidArgument, message + ": verifier rejected" + tail);
  }
  if (err == EPERM || err == EACCES) {
    return make_error(ErrorCode::kPermission,
                      message + " (needs root or CAP_BPF + CAP_PERFMON)" + tail);
  }
  if (err == ENOENT || err == ESRCH || err == EOPNOTSUPP || err == ENOTSUP || err == EINVAL) {
    return make_error(ErrorCode::kUnsupported, message + " (kernel too old?)" + tail);
  }
  return make_error(ErrorCode::kIo, message + tail);
}

struct Cumulative {
  int64_t cpu_ns = 0;
  RunqHistogram runq;
};

}  // namespace

struct SchedProbe::Impl {
  gleaner_sched_probe* skel = nullptr;
  int stats_fd = -1;
  int ncpus = 0;
  std::map<uint64_t, std::string> dirs;  // registered cgroup id -> directory
  std::map<uint64_t, Cumulative> previous;
  int64_t previous_ns = 0;
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> previous_costs;  // id -> time, count
  int64_t previous_costs_ns = 0;

  ~Impl() {
    if (skel != nullptr) gleaner_sched_probe__destroy(skel);  // detaches, closes, frees
    if (stats_fd >= 0) ::close(stats_fd);
  }
  [[nodiscard]] std::vector<bpf_program*> programs() const {
    std::vector<bpf_program*> out{skel->progs.gleaner_switch};
    if (bpf_program__fd(skel->progs.gleaner_calibrate) >= 0)
      out.push_back(skel->progs.gleaner_calibrate);
    return out;
  }
  [[nodiscard]] int fd(bpf_map* map) const { return bpf_map__fd(map); }
  Result<std::map<uint64_t, Cumulative>> read_cumulative() const;
  // The per-CPU running slots, one per possible CPU.
  Result<std::vector<gleaner_cpu_slot>> read_running() const;
  // Every tracked cgroup's counters summed over CPUs; fills stats index -> cgroup id.
  std::map<uint64_t, Cumulative> read_counters(std::map<uint32_t, uint64_t>& id_of) const;
  [[nodiscard]] uint64_t read_dropped() const;
  Result<uint32_t> claim_index(uint64_t id) const;
  void release_index(uint32_t index) const;
  // Cached resolutions in the kernel are stale from now on.
  void bump_generation() const {
    __atomic_fetch_add(&skel->data->tracked_gen, 1, __ATOMIC_SEQ_CST);
  }
};

namespace {

Result<std::unique_ptr<SchedProbe::Impl>> load(const SchedProbeOptions& options) {
  struct stat st {};
  if (::stat(kBtfPath, &st) != 0) {
    return make_error(ErrorCode::kUnsupported, std::string("sched probe: no kernel BTF at ") +
                                                   kBtfPath + " (CONFIG_DEBUG_INFO_BTF off?)");
  }
  bool v1 = false;
  if (options.v1_cpu_controller) {
    v1 = *options.v1_cpu_controller;
  } else {
    auto version = cgroup::detect_version(options.cgroup_root);
    if (!version) return version.error();
    v1 = *version != cgroup::CgroupVersion::kV2;
  }
  libbpf_set_print(libbpf_print);
  take_log_tail();

  auto impl = std::make_unique<SchedProbe::Impl>();
  impl->ncpus = libbpf_num_possible_cpus();
  if (impl->ncpus <= 0) return probe_error("count CPUs", impl->ncpus);
  impl->skel = gleaner_sched_probe__open();
  if (impl->skel == nullptr) return probe_error("open", errno);
  impl->skel->rodata->track_all = options.track_all;
  impl->skel->rodata->v1_cpu_controller = v1;
  bpf_program__set_autoload(impl->skel->progs.gleaner_calibrate, options.calibrate);
  if (int err = gleaner_sched_probe__load(impl->skel); err != 0) return probe_error("load", err);
  if (options.enable_stats) {
    impl->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (impl->stats_fd < 0) return probe_error("enable stats", impl->stats_fd);
  }
  if (int err = gleaner_sched_probe__attach(impl->skel); err != 0) {
    return probe_error("attach", err);
  }
  impl->previous_ns = monotonic_ns();
  impl->previous_costs_ns = impl->previous_ns;
  spdlog::info("sched probe attached ({} cgroups, {})", options.track_all ? "all" : "registered",
               v1 ? "cpu controller" : "default hierarchy");
  return impl;
}

}  // namespace

// Runtime of a thread so far (ns, including the slice it is in now), from
// /proc/<tid>/schedstat; nullopt when it is gone or in another pid namespace.
std::optional<uint64_t> thread_runtime_ns(uint32_t tid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(tid) + "/schedstat").c_str(), "re");
  if (f == nullptr) return std::nullopt;
  unsigned long long runtime = 0;
  int fields = std::fscanf(f, "%llu", &runtime);
  std::fclose(f);
  if (fields != 1) return std::nullopt;
  return runtime;
}

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

uint64_t SchedProbe::Impl::read_dropped() const {
  std::vector<uint64_t> values(static_cast<size_t>(ncpus));
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.dropped), &zero, values.data()) != 0) return 0;
  uint64_t sum = 0;
  for (uint64_t v : values)
    sum += v;
  return sum;
}

Result<std::unique_ptr<SchedProbe>> SchedProbe::open(const SchedProbeOptions& options) {
  auto impl = load(options);
  if (!impl) {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true)) {
      spdlog::warn("eBPF sched probe unavailable, running without it: {}", impl.error().describe());
    }
    return impl.error();
  }
  return std::unique_ptr<SchedProbe>(new SchedProbe(std::move(*impl)));
}

SchedProbe::SchedProbe(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SchedProbe::~SchedProbe() = default;

Result<uint64_t> SchedProbe::track(const std::string& cgroup_dir) {
  struct stat st {};
  if (::stat(cgroup_dir.c_str(), &st) != 0) return errno_error(errno, "track " + cgroup_dir);
  if (!S_ISDIR(st.st_mode)) {
    return make_error(ErrorCode::kInvalidArgument, "track " + cgroup_dir + ": not a directory");
  }
  // On 64-bit kernels a cgroup directory's inode number is its kernfs node id.
  uint64_t id = st.st_ino;
  const int tracked = impl_->fd(impl_->skel->maps.tracked);
  uint32_t index = 0;
  if (bpf_map_lookup_elem(tracked, &id, &index) != 0) {  // not yet (track_all may have it)
    auto claimed = impl_->claim_index(id);
    if (!claimed) return claimed.error();
    index = *claimed;
    if (bpf_map_update_elem(tracked, &id, &index, BPF_NOEXIST) != 0) {
      int err = errno;
      impl_->release_index(index);
      // The kernel side registered it meanwhile (track_all): that index stands.
      if (err != EEXIST || bpf_map_lookup_elem(tracked, &id, &index) != 0) {
        return errno_error(err, "track " + cgroup_dir);
      }
    }
    impl_->bump_generation();
  }
  impl_->dirs[id] = cgroup_dir;
  return id;
}

Status SchedProbe::untrack(const std::string& cgroup_dir) {
  for (auto it = impl_->dirs.begin(); it != impl_->dirs.end(); ++it) {
    if (it->second != cgroup_dir) continue;
    uint64_t id = it->first;
    const int tracked = impl_->fd(impl_->skel->maps.tracked);
    uint32_t index = 0;
    if (bpf_map_lookup_elem(tracked, &id, &index) == 0) {
      bpf_map_delete_elem(tracked, &id);
      impl_->bump_generation();  // before the index is free for another cgroup
      impl_->release_index(index);
    }
    impl_->previous.erase(id);
    impl_->dirs.erase(it);
    return ok_status();
  }
  return make_error(ErrorCode::kNotFound, "untrack " + cgroup_dir + ": not tracked");
}

Result<SchedInterval> SchedProbe::sample() {
  int64_t now = monotonic_ns();
  auto current = impl_->read_cumulative();
  if (!current) return current.error();
  SchedInterval interval;
  interval.elapsed = std::chrono::nanoseconds(now - impl_->previous_ns);
  interval.dropped_events = impl_->read_dropped();
  for (const auto& [id, dir] : impl_->dirs)
    (*current)[id];  // registered cgroups appear even when idle
  for (const auto& [id, c] : *current) {
    CgroupSchedSample s;
    s.cgroup_id = id;
    auto dir = impl_->dirs.find(id);
    if (dir != impl_->dirs.end()) s.dir = dir->second;
    auto before = impl_->previous.find(id);
    if (before == impl_->previous.end()) {
      s.cpu_ns = c.cpu_ns;
      s.runq = c.runq;
    } else {
      s.cpu_ns = std::max<int64_t>(0, c.cpu_ns - before->second.cpu_ns);
      s.runq = histogram_delta(c.runq, before->second.runq);
    }
    s.runq_p50_ns = histogram_quantile_ns(s.runq, 0.50);
    s.runq_p99_ns = histogram_quantile_ns(s.runq, 0.99);
    interval.cgroups.push_back(std::move(s));
  }
  impl_->previous = std::move(*current);
  impl_->previous_ns = now;
  return interval;
}

Result<std::vector<ProgramCost>> SchedProbe::program_costs() {
  int64_t now = monotonic_ns();
  double seconds = static_cast<double>(now - impl_->previous_costs_ns) / 1e9;
  std::vector<ProgramCost> out;
  for (bpf_program* prog : impl_->programs()) {
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) != 0) {
      return errno_error(errno, std::string("program info of ") + bpf_program__name(prog));
    }
    ProgramCost cost;
    cost.name = bpf_program__name(prog);
    cost.id = info.id;
    cost.run_time_ns = info.run_time_ns;
    cost.run_count = info.run_cnt;
    auto [time_before, count_before] = impl_->previous_costs[info.id];
    uint64_t events = info.run_cnt - count_before;
    if (events > 0) {
      cost.ns_per_event =
          static_cast<double>(info.run_time_ns - time_before) / static_cast<double>(events);
    }
    if (seconds > 0) cost.events_per_sec = static_cast<double>(events) / seconds;
    impl_->previous_costs[info.id] = {info.run_time_ns, info.run_cnt};
    out.push_back(std::move(cost));
  }
  impl_->previous_costs_ns = now;
  return out;
}

bool SchedProbe::stats_enabled() const {
  return impl_->stats_fd >= 0;
}

std::vector<uint32_t> SchedProbe::program_ids() const {
  std::vector<uint32_t> ids;
  for (bpf_program* prog : impl_->programs()) {
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0) ids.push_back(info.id);
  }
  return ids;
}

namespace {
Result<std::vector<uint32_t>> iterate_ids(int (*next_id)(uint32_t, uint32_t*), const char* what) {
  std::vector<uint32_t> ids;
  uint32_t id = 0;
  while (next_id(id, &id) == 0)
    ids.push_back(id);
  if (errno != ENOENT) return errno_error(errno, std::string("list BPF ") + what);
  return ids;
}
}  // namespace

Result<std::vector<uint32_t>> kernel_program_ids() {
  return iterate_ids(bpf_prog_get_next_id, "programs");
}
Result<std::vector<uint32_t>> kernel_link_ids() {
  return iterate_ids(bpf_link_get_next_id, "links");
}

bool sched_probe_built() {
  return true;
}
std::string sched_probe_build_reason() {
  return "built with eBPF";
}

}  // namespace gleaner::agent::bpf

#endif
