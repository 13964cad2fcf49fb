// schedstat_bench [--threads 8,64,512] [--passes N] [--rounds N]: what an agent pays to read
// the CPU time per run of an LS pod (#62 item 2): every thread's /proc/<tid>/schedstat (ns on
// CPU, ns waiting, timeslices run), the pod's threads listed from its cgroup. A child process
// with N threads, all blocked, sits in a scratch pod cgroup on the real cgroup filesystem; each
// pass reads what the signal needs, in three ways:
//   list + open/read/close: the cgroup's thread list (CgroupFs::read_ids, as the agent lists
//     a pod's tasks for resctrl), then each thread's schedstat opened, read and closed
//     (common/file_io read_file) and parsed;
//   open/read/close: the same without the listing (thread ids known from an earlier pass);
//   kept open: each thread's schedstat opened once and re-read with pread (OpenFile), parsed.
// The figure is the benchmark thread's CPU time (CLOCK_THREAD_CPUTIME_ID) per pass: the agent's
// cost, whatever else runs on the machine. Variants run once per round in a rotated order;
// the table gives medians over the rounds (min-max), and turns them into a share of a core at
// one pass a second (the agent's sampling interval) and at 20 (its 50 ms fast path).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_cli.h"
#include "bench/bench_stats.h"
#include "cgroup/cgroup_fs.h"
#include "common/file_io.h"
#include "test/support/scratch_cgroup.h"

namespace {
using gleaner::OpenFile;
using gleaner::read_file;
using gleaner::bench::median;

double thread_cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// A child process with `threads` threads, all blocked on a pipe that is never written.
pid_t spawn_threads(int threads) {
  int block[2];
  int ready[2];
  if (::pipe(block) != 0 || ::pipe(ready) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    auto wait_forever = [fd = block[0]] {
      char byte = 0;
      while (::read(fd, &byte, 1) != 0) {
      }
    };
    std::vector<std::thread> pool;
    for (int i = 1; i < threads; ++i)
      pool.emplace_back(wait_forever);
    const char byte = 1;
    if (::write(ready[1], &byte, 1) != 1) ::_exit(1);
    wait_forever();
    ::_exit(0);
  }
  ::close(block[0]);
  ::close(ready[1]);
  char byte = 0;
  if (::read(ready[0], &byte, 1) != 1) throw std::runtime_error("the child did not start");
  ::close(ready[0]);
  return pid;
}

// Fields 1 and 3 of a schedstat line (ns on CPU, timeslices run), added to the sums.
bool add_schedstat(const std::string& text, uint64_t& on_cpu_ns, uint64_t& runs) {
  unsigned long long cpu = 0, wait = 0, count = 0;
  if (std::sscanf(text.c_str(), "%llu %llu %llu", &cpu, &wait, &count) != 3) return false;
  on_cpu_ns += cpu;
  runs += count;
  return true;
}

std::string schedstat_path(int tid) {
  return "/proc/" + std::to_string(tid) + "/schedstat";
}

enum class Variant { kListAndOpen, kOpen, kKeptOpen };
const char* to_string(Variant v) {
  switch (v) {
    case Variant::kListAndOpen:
      return "list + open/read/close";
    case Variant::kOpen:
      return "open/read/close";
    case Variant::kKeptOpen:
      return "kept open (pread)";
  }
  return "?";
}

struct Reader {
  gleaner::cgroup::CgroupFs& fs;
  std::string pod;
  std::vector<int> tids;
  std::vector<OpenFile> kept;

  // One pass: the pod's CPU time per run as the agent would compute it. Throws when a read
  // fails (a benchmark that read nothing would look cheap).
  double pass(Variant v) {
    uint64_t on_cpu_ns = 0, runs = 0;
    bool ok = true;
    if (v == Variant::kKeptOpen) {
      for (const auto& f : kept) {
        auto text = f.read();
        ok = ok && text.ok() && add_schedstat(*text, on_cpu_ns, runs);
      }
    } else {
      std::vector<int> listed;
      if (v == Variant::kListAndOpen) {
        auto ids = fs.read_ids(gleaner::cgroup::Resource::kThreads, pod);
        ok = ids.ok() && ids->size() == tids.size();
        if (ids.ok()) listed = std::move(*ids);
      }
      for (int tid : v == Variant::kListAndOpen ? listed : tids) {
        auto text = read_file(schedstat_path(tid));
        ok = ok && text.ok() && add_schedstat(*text, on_cpu_ns, runs);
      }
    }
    if (!ok) throw std::runtime_error("a schedstat read failed");
    return runs > 0 ? static_cast<double>(on_cpu_ns) / static_cast<double>(runs) : 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string thread_counts = "8,64,512";
  int passes = 2000;
  int rounds = 5;
  CLI::App app{"schedstat_bench: the agent's cost of reading an LS pod's threads' schedstat"};
  app.add_option("--threads", thread_counts, "threads in the pod, comma-separated")
      ->capture_default_str();
  gleaner::bench::positive_option(app, "--passes", passes, "passes per variant and round");
  gleaner::bench::positive_option(app, "--rounds", rounds, "rounds (each runs every variant)");
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  auto skip = gleaner::testing::real_cgroup_skip_reason();
  if (!skip.empty()) {
    std::printf("schedstat_bench: skipped: %s\n", skip.c_str());
    return 0;
  }
  std::vector<int> counts;
  for (size_t from = 0; from <= thread_counts.size();) {
    const size_t comma = std::min(thread_counts.find(',', from), thread_counts.size());
    counts.push_back(std::max(1, std::atoi(thread_counts.substr(from, comma - from).c_str())));
    from = comma + 1;
  }

  std::printf(
      "%d passes per variant and round, %d rounds; CPU of the reading thread per pass, medians "
      "over the rounds (min-max)\n\n",
      passes, rounds);
  std::printf(
      "| threads | variant | ns per pass | ns per thread | %% of a core at 1 pass/s | %% of a "
      "core at 20 passes/s |\n|---|---|---|---|---|---|\n");
  const Variant variants[] = {Variant::kListAndOpen, Variant::kOpen, Variant::kKeptOpen};
  for (int n : counts) {
    gleaner::testing::ScratchCgroups scratch;
    const std::string pod = "kubepods/burstable/podls";
    scratch.mkdir(pod);
    const pid_t child = spawn_threads(n);
    scratch.move(child, pod);
    gleaner::cgroup::CgroupFs fs(scratch.root(), scratch.version());
    Reader reader{fs, pod, {}, {}};
    auto ids = fs.read_ids(gleaner::cgroup::Resource::kThreads, pod);
    if (!ids.ok() || static_cast<int>(ids->size()) != n) {
      std::fprintf(stderr, "schedstat_bench: the pod holds %zu threads, not %d\n",
                   ids.ok() ? ids->size() : 0, n);
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
      return 1;
    }
    reader.tids = *ids;
    for (int tid : reader.tids) {
      auto f = OpenFile::open(schedstat_path(tid));
      if (!f.ok()) {
        std::fprintf(stderr, "schedstat_bench: %s\n", f.error().message.c_str());
        return 1;
      }
      reader.kept.push_back(std::move(*f));
    }
    std::vector<std::vector<double>> per_pass(std::size(variants));
    double sink = 0;
    for (int r = 0; r < rounds; ++r) {
      for (size_t k = 0; k < std::size(variants); ++k) {
        const size_t v = (k + static_cast<size_t>(r)) % std::size(variants);
        const double t0 = thread_cpu_ns();
        for (int i = 0; i < passes; ++i)
          sink += reader.pass(variants[v]);
        per_pass[v].push_back((thread_cpu_ns() - t0) / passes);
      }
    }
    for (size_t v = 0; v < std::size(variants); ++v) {
      const double ns = median(per_pass[v]);
      const auto [lo, hi] = std::minmax_element(per_pass[v].begin(), per_pass[v].end());
      std::printf("| %d | %s | %.0f (%.0f-%.0f) | %.0f | %.4f | %.3f |\n", n,
                  to_string(variants[v]), ns, *lo, *hi, ns / n, 100 * ns / 1e9,
                  100 * 20 * ns / 1e9);
    }
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    if (sink < 0) std::printf("(unreachable: %f)\n", sink);  // keeps the passes' parse alive
  }
  std::printf(
      "\nA pass a second is the agent's sampling interval; 20 passes a second its 50 ms fast "
      "path. The cost is per thread and pass, whatever the pod's request rate.\n");
  return 0;
}
