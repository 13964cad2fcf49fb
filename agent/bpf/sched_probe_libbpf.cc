// SchedProbe on libbpf: the skeleton generated from sched_probe.bpf.c at build time.
#if GLEANER_HAVE_BPF

#include <atomic>
#include <cerrno>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/bpf/cgroup_level.h"
#include "agent/bpf/libbpf_log.h"
#include "agent/bpf/sched_probe_impl.h"
#include "cgroup/version.h"

namespace gleaner::agent::bpf {
namespace {

constexpr const char* kBtfPath = "/sys/kernel/btf/vmlinux";

int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // the clock bpf_ktime_get_ns() reads
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

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
  install_libbpf_log();

  auto impl = std::make_unique<SchedProbe::Impl>();
  impl->ncpus = libbpf_num_possible_cpus();
  if (impl->ncpus <= 0) return libbpf_error("count CPUs", impl->ncpus);
  impl->skel = gleaner_sched_probe__open();
  if (impl->skel == nullptr) return libbpf_error("open", errno);
  impl->skel->rodata->track_all = options.track_all;
  impl->skel->rodata->v1_cpu_controller = v1;
  bpf_program__set_autoload(impl->skel->progs.gleaner_calibrate, options.calibrate);
  if (int err = gleaner_sched_probe__load(impl->skel); err != 0) return libbpf_error("load", err);
  if (options.enable_stats) {
    impl->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (impl->stats_fd < 0) return libbpf_error("enable stats", impl->stats_fd);
  }
  if (int err = gleaner_sched_probe__attach(impl->skel); err != 0) {
    return libbpf_error("attach", err);
  }
  impl->wakeups = ring_buffer__new(bpf_map__fd(impl->skel->maps.wakeups),
                                   &SchedProbe::Impl::on_ring_event, impl.get(), nullptr);
  if (impl->wakeups == nullptr) {
    spdlog::warn("sched probe: no wake-up ring buffer ({}); reacting at the sampling loop's pace",
                 errno);
  }
  impl->previous_ns = monotonic_ns();
  impl->previous_costs_ns = impl->previous_ns;
  spdlog::info("sched probe attached ({} cgroups, {})", options.track_all ? "all" : "registered",
               v1 ? "cpu controller" : "default hierarchy");
  return impl;
}

}  // namespace

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
  // Named again each pass (the daemon does): a directory made anew at the same path (a pod's
  // cgroup recreated) has another id, and the kernel side attributes by id, so the old one
  // would leave the pod's tasks unseen. The id is re-read here, a stat(); unchanged, that is
  // all it costs, and a stale id is dropped from the maps, as is one whose directory went.
  auto known = impl_->ids.find(cgroup_dir);
  struct stat st {};
  if (::stat(cgroup_dir.c_str(), &st) != 0) {
    const int err = errno;
    if (known != impl_->ids.end()) impl_->forget(known->second);
    return errno_error(err, "track " + cgroup_dir);
  }
  if (!S_ISDIR(st.st_mode)) {
    if (known != impl_->ids.end()) impl_->forget(known->second);
    return make_error(ErrorCode::kInvalidArgument, "track " + cgroup_dir + ": not a directory");
  }
  // On 64-bit kernels a cgroup directory's inode number is its kernfs node id.
  uint64_t id = st.st_ino;
  if (known != impl_->ids.end()) {
    if (known->second == id) return id;
    impl_->forget(known->second);
  }
  // The kernel side finds a task's registered ancestor at the registered levels only.
  auto level = cgroup_level(cgroup_dir);
  if (!level) return level.error();
  if (Status counted = impl_->count_level(id, *level); !counted.ok()) {
    return make_error(counted.error().code, "track " + cgroup_dir + ": " + counted.error().message);
  }
  const int tracked = impl_->fd(impl_->skel->maps.tracked);
  uint32_t index = 0;
  if (bpf_map_lookup_elem(tracked, &id, &index) != 0) {  // not yet (track_all may have it)
    auto claimed = impl_->claim_index(id);
    if (!claimed) {
      impl_->uncount_level(id);
      return claimed.error();
    }
    index = *claimed;
    if (bpf_map_update_elem(tracked, &id, &index, BPF_NOEXIST) != 0) {
      int err = errno;
      impl_->release_index(index);
      // The kernel side registered it meanwhile (track_all): that index stands.
      if (err != EEXIST || bpf_map_lookup_elem(tracked, &id, &index) != 0) {
        impl_->uncount_level(id);
        return errno_error(err, "track " + cgroup_dir);
      }
    }
  }
  impl_->publish_levels();
  impl_->bump_generation();
  impl_->dirs[id] = cgroup_dir;
  impl_->ids[cgroup_dir] = id;
  return id;
}

Status SchedProbe::set_be_cgroup(const std::string& cgroup_dir) {
  uint64_t id = 0;
  uint32_t level = 0;
  if (!cgroup_dir.empty()) {
    struct stat st {};
    if (::stat(cgroup_dir.c_str(), &st) != 0) {
      return errno_error(errno, "BE cgroup " + cgroup_dir);
    }
    if (!S_ISDIR(st.st_mode)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "BE cgroup " + cgroup_dir + ": not a directory");
    }
    id = st.st_ino;  // the kernfs node id, as in track()
  }
  if (id == impl_->be_cgroup_id) return ok_status();  // unchanged: the caches stay valid
  if (id != 0) {
    auto found = cgroup_level(cgroup_dir);  // membership is one read at this level
    if (!found) return found.error();
    level = *found;
  }
  // A CPU may pair the new id with the old level meanwhile: the bump below makes what it
  // cached stale.
  __atomic_store_n(&impl_->skel->bss->be_level, level, __ATOMIC_SEQ_CST);
  __atomic_store_n(&impl_->skel->bss->be_cgroup_id, id, __ATOMIC_SEQ_CST);
  impl_->be_cgroup_id = id;
  impl_->bump_generation();  // cached resolutions carry the old BE membership
  return ok_status();
}

Status SchedProbe::untrack(const std::string& cgroup_dir) {
  auto known = impl_->ids.find(cgroup_dir);
  if (known == impl_->ids.end()) {
    return make_error(ErrorCode::kNotFound, "untrack " + cgroup_dir + ": not tracked");
  }
  impl_->forget(known->second);
  return ok_status();
}

Result<SchedInterval> SchedProbe::sample() {
  int64_t now = monotonic_ns();
  auto current = impl_->read_counters();
  SchedInterval interval;
  interval.elapsed = std::chrono::nanoseconds(now - impl_->previous_ns);
  interval.dropped_events = impl_->read_dropped();
  for (const auto& [id, dir] : impl_->dirs)
    current[id];  // registered cgroups appear even when idle
  for (const auto& [id, c] : current) {
    CgroupSchedSample s;
    s.cgroup_id = id;
    auto dir = impl_->dirs.find(id);
    if (dir != impl_->dirs.end()) s.dir = dir->second;
    auto before = impl_->previous.find(id);
    if (before == impl_->previous.end()) {
      s.cpu_ns = c.cpu_ns;
      s.runq = c.runq;
      s.be_runq = c.be_runq;
    } else {
      s.cpu_ns = std::max<int64_t>(0, c.cpu_ns - before->second.cpu_ns);
      s.runq = histogram_delta(c.runq, before->second.runq);
      s.be_runq = histogram_delta(c.be_runq, before->second.be_runq);
    }
    s.runq_p50_ns = histogram_quantile_ns(s.runq, 0.50);
    s.runq_p99_ns = histogram_quantile_ns(s.runq, 0.99);
    if (impl_->be_cgroup_id != 0) {
      s.be_runq_p99_ns = histogram_quantile_ns(attributed_waits(s.runq, s.be_runq), 0.99);
    }
    interval.cgroups.push_back(std::move(s));
  }
  impl_->previous = std::move(current);
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
