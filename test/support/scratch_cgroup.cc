#include "test/support/scratch_cgroup.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup_fs.h"
#include "cgroup/resource.h"
#include "common/file_io.h"
#include "test/support/eventually.h"

namespace gleaner::testing {
namespace fs = std::filesystem;
namespace {

constexpr const char* kCgroupRoot = "/sys/fs/cgroup";
constexpr const char* kPrefix = "gleaner-test-";
const std::vector<std::string> kControllers = {"cpu", "cpuacct", "cpuset", "memory"};

// controller -> this process's path in it, from /proc/self/cgroup.
std::string own_path(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    auto first = line.find(':');
    auto second = line.find(':', first + 1);
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    std::stringstream list(controllers);
    std::string c;
    while (std::getline(list, c, ',')) {
      if (c == controller) return path;
    }
    if (controller.empty() && controllers.empty()) return path;  // v2 "0::/path"
  }
  return "/";
}

void write_or_throw(const std::string& path, const std::string& value) {
  auto status = write_file(path, value);
  if (!status) throw std::runtime_error(status.error().describe());
}

bool pid_alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

// Removes a cgroup directory tree bottom-up (cgroupfs only allows rmdir of empty dirs).
// SIGKILLs every process left in `dir` (a child's own children, say stress-ng's workers)
// and waits, up to 2 s, until the kernel has taken them out of it.
void empty_cgroup(const fs::path& dir) {
  eventually(
      [&dir] {
        std::ifstream procs(dir / "cgroup.procs");
        bool any = false;
        for (pid_t pid = 0; procs >> pid;) {
          any = true;
          ::kill(pid, SIGKILL);
        }
        return !any;
      },
      std::chrono::seconds(2), std::chrono::milliseconds(5));
}

void remove_tree(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> dirs;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) dirs.push_back(it->path());
  }
  std::sort(dirs.begin(), dirs.end(), [](const fs::path& a, const fs::path& b) {
    return a.string().size() > b.string().size();
  });
  for (const auto& d : dirs) {
    empty_cgroup(d);
    ::rmdir(d.c_str());
  }
  empty_cgroup(dir);
  ::rmdir(dir.c_str());
}

// Removes hierarchies left by test processes that died without cleaning up.
void sweep_stale(const std::string& base) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    pid_t owner = std::atoi(name.c_str() + std::strlen(kPrefix));
    if (owner > 0 && !pid_alive(owner)) remove_tree(entry.path());
  }
}

// The symlink directories of this kind's hierarchies: /tmp/gleaner-cgroot-<owner pid>-XXXXXX.
constexpr const char* kLinkDirPrefix = "gleaner-cgroot-";

// Removes the symlink directories of owners that died without their destructor (a test
// that SIGKILLs a process holding a scratch hierarchy, say); sweep_stale removes their
// cgroups. Only links are inside: remove_all does not follow them.
void sweep_stale_link_dirs() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/tmp", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kLinkDirPrefix, 0) != 0) continue;
    char* end = nullptr;
    const long owner = std::strtol(name.c_str() + std::strlen(kLinkDirPrefix), &end, 10);
    if (owner <= 0 || end == nullptr || *end != '-') continue;  // not named by its owner
    if (!pid_alive(static_cast<pid_t>(owner))) fs::remove_all(entry.path(), ec);
  }
}

}  // namespace

std::string host_timing_skip_reason() {
  if (std::getenv("GLEANER_IN_VM") == nullptr) return "";
  return "timing is asserted on the host only: under QEMU's software emulation scheduling "
         "latencies are the emulator's";
}

std::string real_cgroup_skip_reason() {
  if (::geteuid() != 0) return "needs root to create cgroups (run the suite as root)";
  auto version = cgroup::detect_version(kCgroupRoot);
  if (!version) return "no cgroup filesystem at /sys/fs/cgroup: " + version.error().message;
  if (*version != cgroup::CgroupVersion::kV2) {
    for (const auto& c : kControllers) {
      if (!is_directory(std::string(kCgroupRoot) + "/" + c)) {
        return "cgroup v1 controller " + c + " is not mounted";
      }
    }
  }
  return "";
}

ScratchCgroups::ScratchCgroups() {
  auto version = cgroup::detect_version(kCgroupRoot);
  if (!version) throw std::runtime_error(version.error().describe());
  version_ = *version;
  static std::atomic<int> counter{0};
  name_ = kPrefix + std::to_string(::getpid()) + "-" + std::to_string(counter++);

  sweep_stale_link_dirs();
  std::string tmpl = std::string("/tmp/") + kLinkDirPrefix + std::to_string(::getpid()) + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  root_ = tmpl;

  if (version_ == cgroup::CgroupVersion::kV2) {
    std::string parent = join_path(kCgroupRoot, own_path(""));
    bases_.emplace_back("", join_path(parent, name_));
  } else {
    for (const auto& c : kControllers) {
      std::string parent = join_path(join_path(kCgroupRoot, c), own_path(c));
      bases_.emplace_back(c, join_path(parent, name_));
    }
  }
  std::vector<std::string> made;
  for (const auto& [controller, base] : bases_) {
    // cpu and cpuacct are often one hierarchy reached through two names.
    std::string canonical = fs::weakly_canonical(base).string();
    bool same_hierarchy = std::find(made.begin(), made.end(), canonical) != made.end();
    if (same_hierarchy) {
      fs::create_symlink(base, root_ + "/" + controller);
      continue;
    }
    made.push_back(canonical);
    sweep_stale(fs::path(base).parent_path().string());
    if (::mkdir(base.c_str(), 0755) != 0) {
      throw std::runtime_error("mkdir " + base + ": " + std::strerror(errno));
    }
    if (controller == "cpuset") {
      std::string parent = fs::path(base).parent_path().string();
      write_or_throw(base + "/cpuset.cpus", *read_file(parent + "/cpuset.cpus"));
      write_or_throw(base + "/cpuset.mems", *read_file(parent + "/cpuset.mems"));
    }
    if (controller.empty()) {
      // v2: the scratch root is the cgroup root the code sees; enable controllers below it.
      write_or_throw(base + "/cgroup.subtree_control", "+cpu +memory +cpuset");
      fs::create_symlink(base, root_ + "/v2");
    } else {
      fs::create_symlink(base, root_ + "/" + controller);
    }
  }
  if (version_ == cgroup::CgroupVersion::kV2) {
    // Point root_ at the v2 base itself: a v2 root is one directory.
    root_ = root_ + "/v2";
  }
}

ScratchCgroups::~ScratchCgroups() {
  for (pid_t pid : children_) {
    if (::getpgid(pid) == pid) ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  for (const auto& [controller, base] : bases_)
    remove_tree(base);
  std::error_code ec;
  fs::path link_dir =
      version_ == cgroup::CgroupVersion::kV2 ? fs::path(root_).parent_path() : fs::path(root_);
  fs::remove_all(link_dir, ec);
}

void ScratchCgroups::set_cpu_shares(const std::string& relative, int64_t shares) {
  auto path = cgroup::CgroupFs(root_, version_).path_of(cgroup::Resource::kCpuShares, relative);
  if (!path.ok())
    throw std::runtime_error("cpu weight of " + relative + ": " + path.error().describe());
  const int64_t value =
      version_ == cgroup::CgroupVersion::kV2 ? cgroup::shares_to_weight(shares) : shares;
  write_or_throw(*path, std::to_string(value));
}

void ScratchCgroups::mkdir(const std::string& relative) {
  for (const auto& [controller, base] : bases_) {
    fs::path path = base;
    fs::path rel(relative);
    for (const auto& part : rel) {
      fs::path parent = path;
      path /= part;
      if (::mkdir(path.c_str(), 0755) != 0) {
        if (errno == EEXIST) continue;
        throw std::runtime_error("mkdir " + path.string() + ": " + std::strerror(errno));
      }
      if (controller == "cpuset") {
        write_or_throw(path.string() + "/cpuset.cpus",
                       *read_file(parent.string() + "/cpuset.cpus"));
        write_or_throw(path.string() + "/cpuset.mems",
                       *read_file(parent.string() + "/cpuset.mems"));
      }
      // v2: the parent hands its controllers down (the base already does). Never the new
      // directory itself: a cgroup that enables controllers for children may hold no
      // processes (the "no internal processes" rule), and tests put processes in leaves.
      if (controller.empty() && parent != fs::path(base)) {
        write_or_throw(parent.string() + "/cgroup.subtree_control", "+cpu +memory +cpuset");
      }
    }
  }
  created_.push_back(relative);
}

void ScratchCgroups::rmdir(const std::string& relative) {
  for (const auto& [controller, base] : bases_)
    remove_tree(fs::path(base) / relative);
}

void ScratchCgroups::move(pid_t pid, const std::string& relative) {
  for (const auto& [controller, base] : bases_) {
    write_or_throw((fs::path(base) / relative / "cgroup.procs").string(), std::to_string(pid));
  }
}

pid_t ScratchCgroups::spawn(const std::string& relative, const std::function<void()>& setup,
                            const std::function<void()>& run) {
  int go[2];
  int ready[2];
  if (::pipe(go) != 0 || ::pipe(ready) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(go[1]);
    ::close(ready[0]);
    char byte = 0;
    if (::read(go[0], &byte, 1) != 1) ::_exit(1);  // inside the cgroup from here on
    setup();
    if (::write(ready[1], &byte, 1) != 1) ::_exit(3);
    ::close(go[0]);
    ::close(ready[1]);
    run();
    ::_exit(0);
  }
  children_.push_back(pid);
  ::close(go[0]);
  ::close(ready[1]);
  move(pid, relative);
  char byte = 1;
  const bool started = ::write(go[1], &byte, 1) == 1 && ::read(ready[0], &byte, 1) == 1;
  ::close(go[1]);
  ::close(ready[0]);
  if (!started) throw std::runtime_error("child in " + relative + " did not start");
  return pid;
}

pid_t ScratchCgroups::spawn_busy(const std::string& relative, size_t touch_bytes) {
  return spawn(
      relative,
      [touch_bytes] {
        if (touch_bytes == 0) return;
        void* mem = ::mmap(nullptr, touch_bytes, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) ::_exit(2);
        std::memset(mem, 1, touch_bytes);  // charged to the cgroup before the parent goes on
      },
      [] {
        volatile uint64_t spin = 0;
        for (;;)
          spin = spin + 1;
      });
}

pid_t ScratchCgroups::spawn_cache_hungry(const std::string& relative, size_t buffer_bytes) {
  return spawn(
      relative, [] {},
      [buffer_bytes] {
        constexpr size_t kCacheLine = 64;
        std::vector<unsigned char> buffer(buffer_bytes, 1);
        volatile unsigned char* bytes = buffer.data();
        for (unsigned char round = 0;; ++round) {
          for (size_t i = 0; i < buffer_bytes; i += kCacheLine)
            bytes[i] = static_cast<unsigned char>(bytes[i] + round);
        }
      });
}

pid_t ScratchCgroups::spawn_periodic(const std::string& relative, std::chrono::microseconds work,
                                     std::chrono::microseconds period) {
  return spawn(
      relative, [] {},
      [work, period] {
        auto next = std::chrono::steady_clock::now();
        for (;;) {
          const auto until = std::chrono::steady_clock::now() + work;
          volatile uint64_t spin = 0;
          while (std::chrono::steady_clock::now() < until)
            spin = spin + 1;
          next += period;
          std::this_thread::sleep_until(next);  // the child's own cadence, not test synchronisation
        }
      });
}

pid_t ScratchCgroups::spawn_idle(const std::string& relative) {
  // Sleeps until killed (by kill_child, the destructor, or this process's death).
  return spawn(
      relative, [] {},
      [] {
        for (;;)
          ::pause();
      });
}

pid_t ScratchCgroups::spawn_exec(const std::string& relative, const std::vector<std::string>& argv,
                                 const std::string& log_file) {
  if (argv.empty()) throw std::runtime_error("spawn_exec: no program");
  return spawn(
      relative,
      [&log_file] {
        ::setpgid(0, 0);  // its own group: kill_child reaches what it forks
        int log = ::open(log_file.empty() ? "/dev/null" : log_file.c_str(),
                         O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log >= 0) {
          ::dup2(log, STDOUT_FILENO);
          ::dup2(log, STDERR_FILENO);
        }
      },
      [argv] {
        std::vector<char*> args;
        for (const auto& a : argv)
          args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(127);
      });
}

void ScratchCgroups::kill_child(pid_t pid) {
  if (::getpgid(pid) == pid) ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  children_.erase(std::remove(children_.begin(), children_.end(), pid), children_.end());
}

std::optional<int> ScratchCgroups::stop_child(pid_t pid, int signal,
                                              std::chrono::milliseconds grace) {
  // A pidfd becomes readable when the process exits: the wait is on that event, bounded by the
  // grace, not a poll of waitpid.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  ::kill(pid, signal);
  bool exited = false;
  if (pidfd >= 0) {
    pollfd fd{pidfd, POLLIN, 0};
    exited = ::poll(&fd, 1, static_cast<int>(grace.count())) == 1;
    ::close(pidfd);
  }
  int status = 0;
  if (exited && ::waitpid(pid, &status, 0) == pid) {
    children_.erase(std::remove(children_.begin(), children_.end(), pid), children_.end());
    return status;
  }
  kill_child(pid);
  return std::nullopt;
}

bool pin_to_cpu(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::sched_setaffinity(pid, sizeof(set), &set) == 0;
}

void measurement_window(std::chrono::milliseconds duration) {
  std::this_thread::sleep_until(std::chrono::steady_clock::now() + duration);
}

}  // namespace gleaner::testing
