// The frontier benchmark's real services and stressors on real cgroups: each service starts
// inside its LS pod cgroup and answers the load generator without errors; stress-ng's
// workers run inside the BE pod cgroup; and nothing they started outlives the benchmark,
// whether it ends normally or is killed with SIGKILL.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/frontier/load.h"
#include "bench/frontier/services.h"
#include "cgroup/cgroup_fs.h"
#include "test/support/eventually.h"
#include "test/support/scratch_cgroup.h"
#include "test/support/temp_tree.h"

namespace gleaner {
namespace {
using namespace std::chrono_literals;
using namespace bench::frontier;
using testing::eventually;
using testing::ScratchCgroups;

// Pids in a cgroup (v1: the cpu controller's directory; v2: the unified one).
std::set<pid_t> pids_in(const ScratchCgroups& scratch, const std::string& relative) {
  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  std::ifstream in(fs.dir_of(cgroup::Resource::kCpuShares, relative) + "/cgroup.procs");
  std::set<pid_t> out;
  for (pid_t pid = 0; in >> pid;)
    out.insert(pid);
  return out;
}

// Gone: no such process, or a zombie waiting for a parent that never reaps (a container's
// PID 1 may not): it runs nothing and holds nothing.
bool all_gone(const std::set<pid_t>& pids) {
  for (pid_t pid : pids) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    // "pid (comm) state ...": the name may hold spaces and parentheses.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) continue;
    const char state = stat[close + 2];
    if (state != 'Z' && state != 'X') return false;
  }
  return true;
}

class FrontierServicesReal : public ::testing::TestWithParam<ServiceKind> {
 protected:
  void SetUp() override {
    auto reason = testing::real_cgroup_skip_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    if (auto missing = missing_binary(GetParam()); !missing.empty()) GTEST_SKIP() << missing;
  }
};

TEST_P(FrontierServicesReal, AnswersTheLoadFromInsideItsPodCgroup) {
  ScratchCgroups scratch;
  const std::string pod = "kubepods/burstable/podls";
  scratch.mkdir(pod);
  testing::TempDir work;
  std::set<pid_t> started;
  {
    LsService service(GetParam(), scratch, pod, work.path());
    EXPECT_TRUE(pids_in(scratch, pod).count(service.pid())) << "not in its pod cgroup";
    // A small key space is enough here (the benchmark's is 200,000 keys).
    preload(service.protocol(), service.port());
    auto load = generate(service.protocol(), service.port(),
                         {.rate = 500, .duration = 1000ms, .connections = 4, .fifo = false});
    EXPECT_EQ(load.failed, 0);
    EXPECT_GT(load.sent, 300);
    EXPECT_EQ(static_cast<size_t>(load.sent), load.latencies_ms.size());
    started = pids_in(scratch, pod);
  }
  // The service went with its object.
  EXPECT_TRUE(eventually([&] { return all_gone(started); }, 5s));
}

INSTANTIATE_TEST_SUITE_P(Services, FrontierServicesReal,
                         ::testing::Values(ServiceKind::kMemcached, ServiceKind::kRedis,
                                           ServiceKind::kNginx),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(FrontierStressorsReal, NothingOutlivesABenchmarkKilledWithSigkill) {
  auto reason = testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  if (::access("/usr/bin/stress-ng", X_OK) != 0) GTEST_SKIP() << "stress-ng not installed";
  if (!missing_binary(ServiceKind::kMemcached).empty()) GTEST_SKIP() << "memcached not installed";
  // A stand-in for the benchmark: it starts memcached and stress-ng in its scratch cgroups,
  // reports every pid they run as, then waits to be killed.
  // Its work directory is this process's: the benchmark, killed, removes nothing.
  testing::TempDir work;
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  pid_t bench = ::fork();
  ASSERT_GE(bench, 0);
  if (bench == 0) {
    ::close(report[0]);
    ScratchCgroups scratch;
    scratch.mkdir("kubepods/burstable/podls");
    scratch.mkdir("kubepods/besteffort/podbe");
    LsService service(ServiceKind::kMemcached, scratch, "kubepods/burstable/podls", work.path());
    const pid_t stress =
        scratch.spawn_exec("kubepods/besteffort/podbe", stress_ng_argv(BeMix::kMemory, 2));
    // stress-ng forks its workers after it starts: wait for them (one of each kind).
    std::set<pid_t> be;
    eventually([&] { return (be = pids_in(scratch, "kubepods/besteffort/podbe")).size() >= 4; },
               10s, 20ms);
    // The benchmark's own children first, then stress-ng's workers.
    std::string line = std::to_string(service.pid());
    line.append(" ").append(std::to_string(stress)).append(" |");
    for (pid_t pid : be) {
      if (pid != stress) line.append(" ").append(std::to_string(pid));
    }
    line.append("\n");
    if (::write(report[1], line.data(), line.size()) < 0) ::_exit(1);
    for (;;)
      ::pause();
  }
  ::close(report[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(report[0], buf, sizeof buf)) > 0;) {
    text.append(buf, static_cast<size_t>(n));
    if (text.find('\n') != std::string::npos) break;
  }
  ::close(report[0]);
  std::istringstream in(text);
  std::set<pid_t> children;  // memcached and stress-ng
  std::set<pid_t> pids;      // and stress-ng's workers
  for (std::string word; in >> word;) {
    if (word == "|") continue;
    const pid_t pid = std::stoi(word);
    if (children.size() < 2) children.insert(pid);
    pids.insert(pid);
  }
  ASSERT_EQ(children.size(), 2u) << text;
  ASSERT_GE(pids.size(), 5u) << "stress-ng's workers and memcached: " << text;
  ASSERT_FALSE(all_gone(pids));
  ::kill(bench, SIGKILL);
  ::waitpid(bench, nullptr, 0);
  // The benchmark's own children die with it (PR_SET_PDEATHSIG).
  EXPECT_TRUE(eventually([&] { return all_gone(children); }, 10s)) << text;
  // stress-ng's workers are told by stress-ng's own PDEATHSIG and stop after their current
  // pass, which under emulation may take long; the next scratch hierarchy, which sweeps
  // the dead benchmark's cgroups, kills whatever is still in them.
  ScratchCgroups next;
  EXPECT_TRUE(eventually([&] { return all_gone(pids); }, 10s)) << text;
  // And the symlink directory the dead benchmark's hierarchy was reached by (named by its
  // owner's pid) goes with its cgroups.
  const std::string links = "gleaner-cgroot-" + std::to_string(bench) + "-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/tmp", ec))
    EXPECT_NE(entry.path().filename().string().rfind(links, 0), 0u) << entry.path() << " left";
}

}  // namespace
}  // namespace gleaner
