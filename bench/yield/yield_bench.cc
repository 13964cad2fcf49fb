// yield_bench: which upstream kernel mechanism makes a BE task give up the CPU at once when
// an LS task wakes on the CPU it holds (issue 62 item 1). A scratch kubepods tree in kubelet's
// layout (kubepods/besteffort/<pod> at cpu.shares 2, kubepods/burstable/<pod> at normal
// shares) on the real cgroup filesystem holds one BE spinner pinned to each CPU and one LS
// process that sleeps to an absolute deadline at a fixed rate (clock_nanosleep, timer slack
// 1 ns), runs a short burst and sleeps again; its wake-up latency is the time from the
// deadline to the moment it runs again, read with the same clock. BE's harvested CPU is
// its group's cpuacct usage (cpu.stat usage_usec on v2), so no mechanism wins by starving BE.
//
// Configurations (--configs, letters):
//   0  LS alone (no BE): the floor of timer and wake-up cost on this machine
//   a  kubelet today: besteffort cpu.shares 2, every task SCHED_OTHER
//   A  a again, run apart in every round: the A/A twin whose ratio to (a) is the noise floor
//   b  a, plus SCHED_IDLE on every BE task (sched_setscheduler)
//   c  cpu.idle 1 on kubepods/besteffort itself (where LS and BE meet), shares as the kernel
//      sets them
//   d  a, plus an EEVDF slice of --slice-us for the LS task (sched_setattr sched_runtime,
//      kernels >= 6.12)
//   e  a, plus an EEVDF slice of --slice-us for every BE task
// Every configuration runs once per round, the order shuffled each round from a printed seed
// (--seed repeats it); the table gives medians over the rounds with their spread and each
// figure's ratio to the same round's kubelet run (a), with a verdict on p99 bounded by the
// A/A twin's ratios (bench/yield/yield_report.h). Run as root; otherwise it says why
// and exits 0. The scratch tree is removed on exit, on an exception and on SIGINT/SIGTERM.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_cli.h"
#include "bench/bench_stats.h"
#include "bench/yield/yield_report.h"
#include "test/support/scratch_cgroup.h"

namespace {

using gleaner::bench::yield::Config;
using gleaner::bench::yield::print_report;
using gleaner::bench::yield::Run;
using gleaner::testing::ScratchCgroups;

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop.store(true);
}

constexpr const char* kBestEffort = "kubepods/besteffort";
constexpr const char* kBePod = "kubepods/besteffort/pod-be";
constexpr const char* kBurstable = "kubepods/burstable";
constexpr const char* kLsPod = "kubepods/burstable/pod-ls";

// The kernel's sched_attr (include/uapi/linux/sched/types.h, first version's fields); glibc
// on Debian 12 has no wrapper.
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
};

// Gives `pid` (SCHED_OTHER, nice 0) an EEVDF request size of `slice_ns`; errno on failure.
int set_slice(pid_t pid, uint64_t slice_ns) {
  SchedAttr attr{};
  attr.size = sizeof(attr);
  attr.sched_policy = SCHED_OTHER;
  attr.sched_runtime = slice_ns;
  return ::syscall(SYS_sched_setattr, pid, &attr, 0U) == 0 ? 0 : errno;
}

// The request size the kernel holds for `pid` (0 when it cannot be read).
uint64_t read_slice(pid_t pid) {
  SchedAttr attr{};
  if (::syscall(SYS_sched_getattr, pid, &attr, sizeof(attr), 0U) != 0) return 0;
  return attr.sched_runtime;
}

bool pin(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::sched_setaffinity(pid, sizeof(set), &set) == 0;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `value`; the errno of a refused write (0 when it took).
int write_text(const std::string& path, const std::string& value) {
  FILE* f = std::fopen(path.c_str(), "we");
  if (f == nullptr) return errno;
  int err = 0;
  if (std::fputs(value.c_str(), f) < 0) err = errno;
  if (std::fflush(f) != 0 && err == 0) err = errno;
  if (std::fclose(f) != 0 && err == 0) err = errno;
  return err;
}

void write_or_throw(const std::string& path, const std::string& value) {
  if (int err = write_text(path, value); err != 0)
    throw std::system_error(err, std::generic_category(), "write " + value + " to " + path);
}

// Paths of the files this benchmark reads and writes, per cgroup version.
struct Files {
  const ScratchCgroups& scratch;
  [[nodiscard]] bool v2() const { return scratch.version() == gleaner::cgroup::CgroupVersion::kV2; }
  [[nodiscard]] std::string cpu(const std::string& cg, const std::string& file) const {
    return scratch.root() + (v2() ? "/v2/" : "/cpu/") + cg + "/" + file;
  }
  // CPU time used by `cg` and its descendants, in ns.
  [[nodiscard]] double usage_ns(const std::string& cg) const {
    if (!v2()) return std::stod(read_text(scratch.root() + "/cpuacct/" + cg + "/cpuacct.usage"));
    std::istringstream in(read_text(cpu(cg, "cpu.stat")));
    std::string key;
    double value = 0;
    while (in >> key >> value)
      if (key == "usage_usec") return value * 1000;
    throw std::runtime_error("no usage_usec in " + cpu(cg, "cpu.stat"));
  }
  [[nodiscard]] std::string shares_file() const { return v2() ? "cpu.weight" : "cpu.shares"; }
  // kubelet's cpu.shares 2 on this version (v2: the weight kubelet derives from it).
  [[nodiscard]] std::string kubelet_be_shares() const { return v2() ? "1" : "2"; }
};

// Puts kubepods/besteffort back as kubelet leaves it: not idle, shares 2. Leaving idle resets
// the weight to the kernel default, so the weight is written after the flag.
void restore_besteffort(const Files& files, bool has_idle) {
  if (has_idle) (void)write_text(files.cpu(kBestEffort, "cpu.idle"), "0");
  (void)write_text(files.cpu(kBestEffort, files.shares_file()), files.kubelet_be_shares());
}

struct Options {
  double seconds = 3;
  int rounds = 5;
  std::string configs = "0aAbcde";
  uint64_t seed = 0;
  bool seed_given = false;
  int period_us = 2000;
  int work_us = 100;
  int slice_us = 100;
  int ls_cpu = 0;
};

// What the LS process measured, in a shared mapping it writes and the parent reads.
struct LsRecord {
  std::atomic<uint32_t> count;
  std::atomic<uint32_t> done;
  uint32_t capacity;
  int32_t setup_errno;  // a refused sched_setattr
  uint64_t slice_ns;    // what the kernel holds after it
  uint32_t latency_ns[1];
};

void spin_for(std::chrono::microseconds work) {
  const auto end = std::chrono::steady_clock::now() + work;
  volatile uint64_t spin = 0;
  while (std::chrono::steady_clock::now() < end)
    spin = spin + 1;
}

// The LS process's life: wait for the go byte, then `samples` wake-ups at `period` (plus a
// jitter so the wake-ups fall anywhere in the tick), each followed by `work` of CPU.
[[noreturn]] void ls_main(int go_fd, LsRecord* rec, const Options& opt, uint64_t slice_ns,
                          uint64_t seed) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::prctl(PR_SET_NAME, "yield-ls");
  ::prctl(PR_SET_TIMERSLACK, 1UL);
  char byte = 0;
  if (::read(go_fd, &byte, 1) != 1) ::_exit(1);
  ::close(go_fd);
  if (slice_ns != 0) rec->setup_errno = set_slice(0, slice_ns);
  rec->slice_ns = read_slice(0);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> jitter(0, int64_t{opt.period_us} * 500);
  timespec next{};
  ::clock_gettime(CLOCK_MONOTONIC, &next);
  for (uint32_t i = 0; i < rec->capacity && !g_stop.load(); ++i) {
    int64_t ns = next.tv_nsec + int64_t{opt.period_us} * 1000 + jitter(rng);
    next.tv_sec += ns / 1'000'000'000;
    next.tv_nsec = ns % 1'000'000'000;
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr) == EINTR) {
    }
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t late = (now.tv_sec - next.tv_sec) * 1'000'000'000 + (now.tv_nsec - next.tv_nsec);
    rec->latency_ns[i] = static_cast<uint32_t>(std::clamp<int64_t>(late, 0, UINT32_MAX));
    rec->count.store(i + 1);
    spin_for(std::chrono::microseconds(opt.work_us));
    // Re-anchor on a late wake-up so that one delay does not make the next deadlines past.
    if (late > int64_t{opt.period_us} * 1000) next = now;
  }
  rec->done.store(1);
  for (;;)
    ::pause();
}

std::string describe(char letter, const Options& opt) {
  switch (letter) {
    case '0':
      return "LS alone (no BE)";
    case 'a':
      return "(a) kubelet: besteffort cpu.shares 2";
    case 'A':
      return "(a') kubelet again: the A/A twin of (a)";
    case 'b':
      return "(b) a + SCHED_IDLE on BE tasks";
    case 'c':
      return "(c) cpu.idle 1 on kubepods/besteffort";
    case 'd':
      return "(d) a + LS task slice " + std::to_string(opt.slice_us) + " us";
    case 'e':
      return "(e) a + BE task slice " + std::to_string(opt.slice_us) + " us";
    default:
      return {};
  }
}

// Kills and reaps `pid` (a child of this process).
void reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

// One run of configuration `letter`. Everything it changed is undone before it returns,
// also when it throws.
Run run_once(char letter, ScratchCgroups& scratch, const Files& files, bool has_idle,
             const Options& opt, uint64_t seed) {
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<pid_t> be;
  pid_t ls = -1;
  LsRecord* rec = nullptr;
  size_t map_bytes = 0;
  struct Cleanup {
    std::vector<pid_t>& be;
    pid_t& ls;
    ScratchCgroups& scratch;
    const Files& files;
    bool has_idle;
    LsRecord*& rec;
    size_t& bytes;
    ~Cleanup() {
      if (ls > 0) reap(ls);
      for (pid_t p : be)
        scratch.kill_child(p);
      restore_besteffort(files, has_idle);
      if (rec != nullptr) ::munmap(rec, bytes);
    }
  } cleanup{be, ls, scratch, files, has_idle, rec, map_bytes};

  if (letter == 'c') {
    if (!has_idle) throw std::runtime_error("this kernel has no cpu.idle");
    write_or_throw(files.cpu(kBestEffort, "cpu.idle"), "1");
  }
  Run run;
  if (letter != '0') {
    for (int cpu = 0; cpu < cpus; ++cpu) {
      pid_t p = scratch.spawn_busy(kBePod);
      be.push_back(p);
      if (!pin(p, cpu)) throw std::runtime_error("cannot pin a BE spinner");
      if (letter == 'b') {
        sched_param param{};
        if (::sched_setscheduler(p, SCHED_IDLE, &param) != 0)
          throw std::system_error(errno, std::generic_category(), "sched_setscheduler IDLE");
      }
      if (letter == 'e') {
        if (int err = set_slice(p, uint64_t(opt.slice_us) * 1000); err != 0)
          throw std::system_error(err, std::generic_category(), "sched_setattr BE slice");
      }
    }
    run.be_slice_ns = read_slice(be.front());
  }

  const auto capacity = static_cast<uint32_t>(opt.seconds * 1e6 / std::max(1, opt.period_us) + 16);
  map_bytes = sizeof(LsRecord) + sizeof(uint32_t) * capacity;
  void* mem = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap");
  rec = static_cast<LsRecord*>(mem);
  rec->capacity = capacity;
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  const uint64_t ls_slice = letter == 'd' ? uint64_t(opt.slice_us) * 1000 : 0;
  ls = ::fork();
  if (ls == 0) {
    ::close(go[1]);
    ls_main(go[0], rec, opt, ls_slice, seed);
  }
  ::close(go[0]);
  if (ls < 0) {
    ::close(go[1]);
    throw std::system_error(errno, std::generic_category(), "fork");
  }
  scratch.move(ls, kLsPod);
  if (opt.ls_cpu >= 0 && !pin(ls, opt.ls_cpu % cpus)) throw std::runtime_error("cannot pin LS");

  const double be0 = letter == '0' ? 0 : files.usage_ns(kBestEffort);
  const double ls0 = files.usage_ns(kLsPod);
  const auto start = std::chrono::steady_clock::now();
  char byte = 1;
  const bool started = ::write(go[1], &byte, 1) == 1;
  ::close(go[1]);
  if (!started) throw std::runtime_error("LS process did not start");
  // The run lasts until LS has taken its samples (or an interruption); this waits for the
  // measurement to finish, it does not stand in for any ordering.
  const auto deadline = start + std::chrono::duration<double>(opt.seconds * 3 + 5);
  while (rec->done.load() == 0 && !g_stop.load() && std::chrono::steady_clock::now() < deadline)
    gleaner::testing::measurement_window(std::chrono::milliseconds(20));
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double be1 = letter == '0' ? 0 : files.usage_ns(kBestEffort);
  const double ls1 = files.usage_ns(kLsPod);
  if (rec->setup_errno != 0)
    throw std::system_error(rec->setup_errno, std::generic_category(), "sched_setattr LS slice");
  const uint32_t n = rec->count.load();
  run.latency_us.reserve(n);
  for (uint32_t i = 0; i < n; ++i)
    run.latency_us.push_back(rec->latency_ns[i] / 1000.0);
  run.ls_slice_ns = rec->slice_ns;
  run.be_cores = (be1 - be0) / 1e9 / wall;
  run.ls_cores = (ls1 - ls0) / 1e9 / wall;
  run.harvest = run.be_cores / std::max(1e-9, cpus - run.ls_cores);
  return run;
}

int measure(const Options& opt) {
  ScratchCgroups scratch;  // removed on return and on exceptions
  Files files{scratch};
  for (const char* dir : {kBestEffort, kBePod, kBurstable, kLsPod})
    scratch.mkdir(dir);
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  // kubelet's values: kubepods the node's capacity, besteffort 2, burstable the sum of its
  // pods' requests (one LS pod requesting a CPU).
  scratch.set_cpu_shares("kubepods", int64_t{1024} * cpus);
  scratch.set_cpu_shares(kBestEffort, 2);
  scratch.set_cpu_shares(kBurstable, 1024);
  scratch.set_cpu_shares(kLsPod, 1024);
  scratch.set_cpu_shares(kBePod, 2);
  std::error_code ec;
  const bool has_idle = std::filesystem::exists(files.cpu(kBestEffort, "cpu.idle"), ec);

  std::vector<Config> configs;
  for (char letter : opt.configs) {
    if (describe(letter, opt).empty())
      throw std::invalid_argument(std::string("unknown configuration '") + letter + "'");
    if (letter == 'c' && !has_idle) {
      std::printf("skipping (c): this kernel has no cpu.idle\n");
      continue;
    }
    configs.push_back({letter, describe(letter, opt), {}});
  }
  const uint64_t seed = opt.seed_given ? opt.seed : std::random_device{}();
  std::printf(
      "yield_bench: seed %llu (--seed %llu repeats this order), %d rounds of %.1f s, "
      "LS wakes every %d us (+ up to %d us jitter), runs %d us, pinned to CPU %d; %d BE "
      "spinners, one per CPU; cgroup %s\n",
      static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed), opt.rounds,
      opt.seconds, opt.period_us, opt.period_us / 2, opt.work_us, opt.ls_cpu, cpus,
      files.v2() ? "v2" : "v1");
  std::mt19937_64 rng(seed);
  for (int round = 0; round < opt.rounds && !g_stop.load(); ++round) {
    std::vector<size_t> order(configs.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::string said;
    for (size_t i : order)
      said += configs[i].letter;
    std::printf("round %d: %s\n", round + 1, said.c_str());
    std::fflush(stdout);
    for (size_t i : order) {
      if (g_stop.load()) break;
      configs[i].runs.push_back(run_once(configs[i].letter, scratch, files, has_idle, opt, rng()));
    }
  }
  if (g_stop.load()) {
    std::printf("interrupted: scratch cgroups removed, nothing reported\n");
    return 130;
  }

  print_report(configs, cpus);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"yield_bench: LS wake-up latency on a CPU a BE spinner holds, per mechanism"};
  gleaner::bench::positive_option(app, "--seconds", opt.seconds, "length of each run");
  gleaner::bench::positive_option(app, "--rounds", opt.rounds, "rounds (each runs every config)");
  app.add_option("--configs", opt.configs,
                 "letters: 0 alone, a kubelet, A kubelet again (the A/A twin), b SCHED_IDLE, "
                 "c cpu.idle, d LS slice, e BE slice")
      ->capture_default_str();
  app.add_option("--seed", opt.seed, "shuffle seed (default: random, printed)")
      ->each([&](const std::string&) { opt.seed_given = true; });
  gleaner::bench::positive_option(app, "--period-us", opt.period_us, "LS wake-up period");
  gleaner::bench::non_negative_option(app, "--work-us", opt.work_us, "LS work per wake-up");
  gleaner::bench::positive_option(app, "--slice-us", opt.slice_us,
                                  "EEVDF slice for (d) and (e) (the kernel clamps to 100-100000)");
  app.add_option("--ls-cpu", opt.ls_cpu, "CPU the LS process is pinned to (-1: not pinned)")
      ->capture_default_str();
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  if (std::string why = gleaner::testing::real_cgroup_skip_reason(); !why.empty()) {
    std::printf("yield_bench: skipped: %s\n", why.c_str());
    return 0;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  try {
    return measure(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "yield_bench: %s\n", e.what());
    return 1;
  }
}
