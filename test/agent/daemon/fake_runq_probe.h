#pragma once
// A run-queue probe without the kernel, for driving the daemon in a test: each cgroup the
// daemon tracks reports the p99 wait the test chose for it, and the wake-ups the test
// queues are signalled on an eventfd, as the real probe signals its ring buffer. Calls come
// from the daemon's loop thread while the test thread scripts it, hence the lock.
//
// Like the kernel side, it knows a cgroup by the id it had when named: the directory's inode
// number (a cgroup's kernfs node id; fs/kernfs/dir.c, __kernfs_new_node, takes ids from a
// cyclic allocator, so a directory made anew gets another). A tracked directory made anew at
// its path reports nothing until it is named again, as the real probe's tasks are then
// counted under an id it does not know.

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/bpf/sched_probe.h"

namespace gleaner::agent::test {

class FakeRunqProbe final : public bpf::RunqProbe {
 public:
  FakeRunqProbe() : wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~FakeRunqProbe() override {
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }
  FakeRunqProbe(const FakeRunqProbe&) = delete;
  FakeRunqProbe& operator=(const FakeRunqProbe&) = delete;

  // The waits `dir` reports at each sample() from now on (while it is tracked).
  void set_wait(const std::string& dir, double p99_ns, double be_caused_p99_ns) {
    std::lock_guard lock(mu_);
    waits_[dir] = {p99_ns, be_caused_p99_ns};
  }
  // track(`dir`) fails with `code` from now on, as the real probe refuses a cgroup at a level
  // beyond the ones it reads (kUnavailable) or a directory not there (kNotFound).
  void refuse(const std::string& dir, ErrorCode code) {
    std::lock_guard lock(mu_);
    refused_[dir] = code;
  }
  // Queues a wake-up and makes wake_fd() readable.
  void signal(bpf::Wakeup wakeup) {
    {
      std::lock_guard lock(mu_);
      queued_.push_back(std::move(wakeup));
    }
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
  [[nodiscard]] std::set<std::string> tracked() const {
    std::lock_guard lock(mu_);
    std::set<std::string> dirs;
    for (const auto& [dir, id] : tracked_)
      dirs.insert(dir);
    return dirs;
  }
  [[nodiscard]] std::string be_cgroup() const {
    std::lock_guard lock(mu_);
    return be_cgroup_;
  }
  [[nodiscard]] bpf::WakeSettings wake() const {
    std::lock_guard lock(mu_);
    return wake_;
  }
  [[nodiscard]] int drains() const {
    std::lock_guard lock(mu_);
    return drains_;
  }
  [[nodiscard]] int samples() const {
    std::lock_guard lock(mu_);
    return samples_;
  }

  Result<uint64_t> track(const std::string& cgroup_dir) override {
    std::lock_guard lock(mu_);
    if (auto refused = refused_.find(cgroup_dir); refused != refused_.end()) {
      tracked_.erase(cgroup_dir);
      return make_error(refused->second, "track " + cgroup_dir + ": refused by the test");
    }
    auto id = id_of(cgroup_dir);
    if (!id) {
      tracked_.erase(cgroup_dir);
      return make_error(ErrorCode::kNotFound, "track " + cgroup_dir + ": no directory");
    }
    tracked_[cgroup_dir] = *id;
    return *id;
  }
  Status untrack(const std::string& cgroup_dir) override {
    std::lock_guard lock(mu_);
    tracked_.erase(cgroup_dir);
    return ok_status();
  }
  Status set_be_cgroup(const std::string& cgroup_dir) override {
    std::lock_guard lock(mu_);
    be_cgroup_ = cgroup_dir;
    return ok_status();
  }
  Result<bpf::SchedInterval> sample() override {
    std::lock_guard lock(mu_);
    ++samples_;
    bpf::SchedInterval interval;
    for (const auto& [dir, id] : tracked_) {
      auto it = waits_.find(dir);
      if (it == waits_.end() || id_of(dir) != id) continue;
      bpf::CgroupSchedSample s;
      s.dir = dir;
      s.runq_p99_ns = it->second.first;
      s.be_runq_p99_ns = it->second.second;
      interval.cgroups.push_back(std::move(s));
    }
    return interval;
  }
  void set_wake(const bpf::WakeSettings& settings) override {
    std::lock_guard lock(mu_);
    wake_ = settings;
  }
  [[nodiscard]] int wake_fd() const override { return wake_fd_; }
  std::vector<bpf::Wakeup> drain_wakeups() override {
    uint64_t count = 0;
    (void)!::read(wake_fd_, &count, sizeof count);
    std::lock_guard lock(mu_);
    ++drains_;
    return std::exchange(queued_, {});
  }
  [[nodiscard]] uint64_t wakeups_lost() const override { return 0; }
  Result<std::vector<bpf::ProgramCost>> program_costs() override {
    return make_error(ErrorCode::kUnsupported, "fake probe: no kernel statistics");
  }
  [[nodiscard]] bool stats_enabled() const override { return false; }

 private:
  mutable std::mutex mu_;
  int wake_fd_;
  std::map<std::string, std::pair<double, double>> waits_;
  std::map<std::string, ErrorCode> refused_;
  // The directory's id now (its inode number), nullopt when there is none.
  static std::optional<uint64_t> id_of(const std::string& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
    return static_cast<uint64_t>(st.st_ino);
  }

  std::map<std::string, uint64_t> tracked_;  // directory -> its id when named
  std::string be_cgroup_;
  bpf::WakeSettings wake_;
  std::vector<bpf::Wakeup> queued_;
  int drains_ = 0;
  int samples_ = 0;
};

}  // namespace gleaner::agent::test
