#pragma once
// A scratch cgroup hierarchy on the REAL cgroup filesystem, for integration tests.
//
// It is made under this process's own cgroup in every controller (so a sandbox's memory
// accounting still covers it), and exposed through a directory of symlinks that looks
// like a cgroup root (<root>/cpu, <root>/memory, ... or a v2 root), so production code
// uses the same relative paths ("kubepods/besteffort/pod1") as on a node. Everything is
// removed on destruction; children die with the test (PR_SET_PDEATHSIG) and stale
// hierarchies of dead test processes are swept at start, so a crash leaves nothing behind.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "cgroup/version.h"

namespace gleaner::testing {

// Empty when the test can run; otherwise why it must be skipped.
std::string real_cgroup_skip_reason();
// Empty on the host; inside the cgroup v2 VM (GLEANER_IN_VM, test/vm/run.sh) why a test
// whose assertions are about time (run-queue latency, reaction within a window) is skipped:
// under software emulation those are the emulator's, not the kernel's.
std::string host_timing_skip_reason();

class ScratchCgroups {
 public:
  ScratchCgroups();
  ~ScratchCgroups();
  ScratchCgroups(const ScratchCgroups&) = delete;
  ScratchCgroups& operator=(const ScratchCgroups&) = delete;

  // The symlink root to hand to CgroupFs / the agent.
  [[nodiscard]] const std::string& root() const { return root_; }
  [[nodiscard]] cgroup::CgroupVersion version() const { return version_; }

  // Creates `relative` (and parents) in every controller; cpusets inherit the parent's.
  void mkdir(const std::string& relative);
  // Removes `relative` from every controller (its tasks must be gone).
  void rmdir(const std::string& relative);
  // Starts a child that spins on a CPU inside `relative`, after touching `touch_bytes` of
  // anonymous memory charged there. Returns once the child is inside and has touched it.
  pid_t spawn_busy(const std::string& relative, size_t touch_bytes = 0);
  // Starts a child inside `relative` that wants both CPU and cache: it sweeps its own
  // `buffer_bytes` buffer, a write per cache line, for as long as it runs.
  pid_t spawn_cache_hungry(const std::string& relative, size_t buffer_bytes);
  // Starts a latency-sensitive child inside `relative`: it wakes every `period`, spins for
  // `work`, and sleeps again (a server handling a steady trickle of requests).
  pid_t spawn_periodic(const std::string& relative, std::chrono::microseconds work,
                       std::chrono::microseconds period);
  // Runs `argv` (argv[0] an absolute path) inside `relative` from its first instruction, in
  // a process group of its own, output appended to `log_file` ("" discards it). It dies
  // with this process; kill_child and the destructor kill its whole group, and the
  // destructor kills whatever is left in the scratch cgroups before removing them.
  pid_t spawn_exec(const std::string& relative, const std::vector<std::string>& argv,
                   const std::string& log_file = "");
  // Starts a child that sleeps (blocked on a pipe) inside `relative`.
  pid_t spawn_idle(const std::string& relative);
  // Gives `relative` this CPU weight among its siblings: cpu.shares on v1, the cpu.weight
  // kubelet would derive from them on v2.
  void set_cpu_shares(const std::string& relative, int64_t shares);
  // Moves an existing process into `relative` in every controller.
  void move(pid_t pid, const std::string& relative);
  void kill_child(pid_t pid);
  // Sends `signal` to a child and waits up to `grace` for it to exit (a graceful stop: an
  // agent restoring what it changed). Its exit status (as waitpid gives it), or nullopt when it
  // outlived the grace and was killed with its group.
  std::optional<int> stop_child(pid_t pid, int signal, std::chrono::milliseconds grace);

 private:
  std::vector<std::string> controller_dirs() const;  // real directories of the scratch base
  // Forks a child that dies with this process, moves it into `relative`, and only then lets
  // it run `setup` (inside the cgroup from its first instruction) and, once the parent has
  // seen `setup` finish, `run`, which never returns.
  pid_t spawn(const std::string& relative, const std::function<void()>& setup,
              const std::function<void()>& run);

  std::string root_;
  std::string name_;
  cgroup::CgroupVersion version_ = cgroup::CgroupVersion::kV1;
  std::vector<std::pair<std::string, std::string>> bases_;  // controller -> real base dir
  std::vector<std::string> created_;
  std::vector<pid_t> children_;
};

// Pins `pid` to CPU `cpu`; whether that worked.
bool pin_to_cpu(pid_t pid, int cpu);

// Waits out a measurement window (rates need time to pass; this is not synchronisation).
void measurement_window(std::chrono::milliseconds duration);

}  // namespace gleaner::testing
