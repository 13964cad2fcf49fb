#include "cgroup/hierarchy.h"

#include <gtest/gtest.h>

#include "cgroup/executor.h"
#include "test/cgroup/kubelet_paths.h"
#include "test/support/temp_tree.h"

namespace gleaner::cgroup {
namespace {
using gleaner::testing::TempDir;

using test::kBe;
using test::kPod;
const std::string kContainer = "kubepods/besteffort/podabc/c1";
const std::string kSandbox = "kubepods/besteffort/podabc/sandbox";

std::map<std::string, LimitNode> quota_tree(const std::string& be, const std::string& container,
                                            int64_t container_period = 100000) {
  return {{"kubepods", {"-1", 100000}},
          {kBe, {be, 100000}},
          {kPod, {"-1", 100000}},
          {kContainer, {container, container_period}}};
}

TEST(Hierarchy, RulesExistOnlyWhereTheKernelRefuses) {
  EXPECT_EQ(hierarchy_rule(Resource::kCpuQuota, CgroupVersion::kV1),
            HierarchyRule::kQuotaWithinParent);
  EXPECT_EQ(hierarchy_rule(Resource::kCpuQuota, CgroupVersion::kHybrid),
            HierarchyRule::kQuotaWithinParent);
  EXPECT_EQ(hierarchy_rule(Resource::kCpusetCpus, CgroupVersion::kV1),
            HierarchyRule::kCpusWithinParent);
  // v2 takes the minimum of cpu.max and intersects cpusets: nothing is refused.
  EXPECT_EQ(hierarchy_rule(Resource::kCpuQuota, CgroupVersion::kV2), HierarchyRule::kNone);
  EXPECT_EQ(hierarchy_rule(Resource::kCpusetCpus, CgroupVersion::kV2), HierarchyRule::kNone);
  EXPECT_EQ(hierarchy_rule(Resource::kMemoryLimit, CgroupVersion::kV1), HierarchyRule::kNone);
}

TEST(Hierarchy, NarrowingAParentClampsALimitedGrandchildAndHoldsItsWish) {
  std::map<std::string, std::string> held;
  auto fit = fit_to_ancestors(HierarchyRule::kQuotaWithinParent, quota_tree("-1", "200000"),
                              {{kBe, "29100"}}, held);
  ASSERT_EQ(fit.size(), 2u);
  EXPECT_EQ(fit.at(kBe).value, "29100");
  EXPECT_EQ(fit.at(kBe).kind, FittedValue::Kind::kRequested);
  EXPECT_EQ(fit.at(kContainer).value, "29100");
  EXPECT_EQ(fit.at(kContainer).kind, FittedValue::Kind::kClamped);
  EXPECT_EQ(held.at(kContainer), "200000");
  // The unlimited pod inherits the limit: the kernel takes it, nothing to write.
  EXPECT_EQ(fit.count(kPod), 0u);
}

TEST(Hierarchy, WideningTheParentGivesTheWishBack) {
  std::map<std::string, std::string> held{{kContainer, "200000"}};
  auto partly = fit_to_ancestors(HierarchyRule::kQuotaWithinParent, quota_tree("29100", "29100"),
                                 {{kBe, "120000"}}, held);
  EXPECT_EQ(partly.at(kContainer).value, "120000");
  EXPECT_EQ(held.at(kContainer), "200000");  // still short of its wish
  auto whole = fit_to_ancestors(HierarchyRule::kQuotaWithinParent, quota_tree("120000", "120000"),
                                {{kBe, "-1"}}, held);
  EXPECT_EQ(whole.at(kContainer).value, "200000");
  EXPECT_EQ(whole.at(kContainer).kind, FittedValue::Kind::kReleased);
  EXPECT_TRUE(held.empty());
}

TEST(Hierarchy, QuotasCompareAsShareOfTheirOwnPeriod) {
  std::map<std::string, std::string> held;
  // 20000 us per 50 ms is 0.4 CPU: above a 0.3 CPU parent, clamped to 15000 per 50 ms.
  auto fit = fit_to_ancestors(HierarchyRule::kQuotaWithinParent, quota_tree("-1", "20000", 50000),
                              {{kBe, "30000"}}, held);
  EXPECT_EQ(fit.at(kContainer).value, "15000");
  held.clear();
  // 14000 per 50 ms (0.28 CPU) fits.
  auto fits = fit_to_ancestors(HierarchyRule::kQuotaWithinParent, quota_tree("-1", "14000", 50000),
                               {{kBe, "30000"}}, held);
  EXPECT_EQ(fits.count(kContainer), 0u);
}

TEST(Hierarchy, ARequestUnderANarrowerParentIsClamped) {
  std::map<std::string, std::string> held;
  auto fit = fit_to_ancestors(HierarchyRule::kQuotaWithinParent, quota_tree("29100", "-1"),
                              {{kContainer, "200000"}}, held);
  EXPECT_EQ(fit.at(kContainer).value, "29100");
  EXPECT_EQ(fit.at(kContainer).kind, FittedValue::Kind::kClamped);
  // Asked again while still clamped: the file already holds the fitted value.
  auto again = fit_to_ancestors(HierarchyRule::kQuotaWithinParent, quota_tree("29100", "29100"),
                                {{kContainer, "200000"}}, held);
  EXPECT_TRUE(again.empty());
}

TEST(Hierarchy, CpusetChildrenStayInsideTheirParent) {
  std::map<std::string, LimitNode> tree{{"kubepods", {"0-3", 0}},
                                        {kBe, {"0-3", 0}},
                                        {kPod, {"0-3", 0}},
                                        {kContainer, {"2-3", 0}},
                                        {kSandbox, {"0-3", 0}}};
  std::map<std::string, std::string> held;
  auto fit = fit_to_ancestors(HierarchyRule::kCpusWithinParent, tree, {{kBe, "0-1"}}, held);
  EXPECT_EQ(fit.at(kPod).value, "0-1");
  EXPECT_EQ(fit.at(kSandbox).value, "0-1");
  // Nothing of its own left: the parent's CPUs rather than none.
  EXPECT_EQ(fit.at(kContainer).value, "0-1");
  EXPECT_EQ(held.at(kContainer), "2-3");
}

// A v1 tree: a batch-limited BE container (CFS quota 2 CPUs) under unlimited parents.
void make_batch_limited_v1(const TempDir& t) {
  for (const std::string& cg : {std::string("kubepods"), kBe, kPod, kContainer}) {
    t.write("cpu/" + cg + "/cpu.cfs_quota_us", "-1\n");
    t.write("cpu/" + cg + "/cpu.cfs_period_us", "100000\n");
    t.write("cpu/" + cg + "/cpu.shares", "2\n");
  }
  t.write("cpu/" + kContainer + "/cpu.cfs_quota_us", "200000\n");
}

// That tree, its file system and a clock the test moves.
struct BatchLimitedV1 {
  BatchLimitedV1() { make_batch_limited_v1(t); }
  TempDir t;
  CgroupFs fs{t.path(), CgroupVersion::kV1};
  FakeClock clock;
};

TEST(ExecutorHierarchy, SuppressingBeClampsContainersFirstAndReleasesThemAfter) {
  TempDir t;
  make_batch_limited_v1(t);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  auto narrow = exec.apply({{Resource::kCpuQuota, kBe, "29100", "cpu-suppress"}});
  ASSERT_EQ(narrow.written.size(), 2u);
  EXPECT_EQ(narrow.written[0].cgroup, kContainer);  // the child first, or the kernel refuses
  EXPECT_EQ(narrow.written[0].reason, "parent-limit");
  EXPECT_EQ(narrow.written[1].cgroup, kBe);
  EXPECT_EQ(t.read("cpu/" + kContainer + "/cpu.cfs_quota_us"), "29100");
  EXPECT_EQ(exec.counters().at("cpu_quota").clamped, 1);

  // The BE cgroup strategy asks for the batch limit again: held, nothing written.
  auto steady = exec.apply({{Resource::kCpuQuota, kContainer, "200000", "be-cgroup"}});
  EXPECT_TRUE(steady.written.empty());

  auto widen = exec.apply({{Resource::kCpuQuota, kBe, "-1", "cpu-suppress"}});
  ASSERT_EQ(widen.written.size(), 2u);
  EXPECT_EQ(widen.written[0].cgroup, kBe);  // the parent first
  EXPECT_EQ(widen.written[1].cgroup, kContainer);
  EXPECT_EQ(widen.written[1].reason, "parent-limit-released");
  EXPECT_EQ(t.read("cpu/" + kContainer + "/cpu.cfs_quota_us"), "200000");
}

TEST(ExecutorHierarchy, AWishIsDroppedOnceSomeoneElseChangesTheCgroup) {
  TempDir t;
  make_batch_limited_v1(t);
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  exec.apply({{Resource::kCpuQuota, kBe, "29100", "cpu-suppress"}});
  ASSERT_EQ(t.read("cpu/" + kContainer + "/cpu.cfs_quota_us"), "29100");
  // kubelet resizes the container in place (within the parent, as it must).
  t.write("cpu/" + kContainer + "/cpu.cfs_quota_us", "20000\n");
  exec.apply({{Resource::kCpuQuota, kBe, "-1", "cpu-suppress"}});
  // Its value stands; the old wish (200000) is not written over it.
  EXPECT_EQ(t.read("cpu/" + kContainer + "/cpu.cfs_quota_us"), "20000\n");
}

std::vector<std::string> lines_of(const std::vector<FileWrite>& writes) {
  std::vector<std::string> out;
  for (const auto& w : writes)
    out.push_back(w.cgroup + " = " + w.content + " (" + w.reason + ")");
  return out;
}

// A plan shown before apply() (the daemon's record of a pass, `plan --apply`) moves no
// clamp on: apply() then makes the writes shown, and the container's wish survives.
TEST(ExecutorHierarchy, APlanChangesNoHeldClamp) {
  BatchLimitedV1 node;
  WriteExecutor exec(node.fs);
  exec.apply({{Resource::kCpuQuota, kBe, "29100", "cpu-suppress"}});
  const std::vector<HeldClamp> held = {{Resource::kCpuQuota, kContainer, "200000", "29100"}};
  ASSERT_EQ(exec.held_clamps(), held);
  const std::vector<CgroupWrite> lower = {{Resource::kCpuQuota, kBe, "20000", "cpu-suppress"}};
  const auto shown = exec.plan(lower);
  EXPECT_EQ(exec.held_clamps(), held);
  EXPECT_EQ(lines_of(exec.apply(lower).written), lines_of(shown));
  EXPECT_EQ(node.t.read("cpu/" + kContainer + "/cpu.cfs_quota_us"), "20000");
  exec.apply({{Resource::kCpuQuota, kBe, "-1", "cpu-suppress"}});
  EXPECT_EQ(node.t.read("cpu/" + kContainer + "/cpu.cfs_quota_us"), "200000");
}

// Another executor on the same tree (`gleaner-agent plan` replaying a recorded pass) makes
// the daemon's writes only from the daemon's clamps.
TEST(ExecutorHierarchy, AnExecutorAdoptingTheClampsPlansTheSameRelease) {
  BatchLimitedV1 node;
  WriteExecutor daemon(node.fs);
  daemon.apply({{Resource::kCpuQuota, kBe, "29100", "cpu-suppress"}});
  const std::vector<CgroupWrite> widen = {{Resource::kCpuQuota, kBe, "-1", "cpu-suppress"}};
  const std::vector<std::string> released = {kBe + " = -1 (cpu-suppress)",
                                             kContainer + " = 200000 (parent-limit-released)"};
  ASSERT_EQ(lines_of(daemon.plan(widen)), released);

  WriteExecutor replay(node.fs);
  EXPECT_EQ(lines_of(replay.plan(widen)), std::vector<std::string>{released[0]});
  replay.adopt_held_clamps(daemon.held_clamps());
  EXPECT_EQ(replay.held_clamps(), daemon.held_clamps());
  EXPECT_EQ(lines_of(replay.plan(widen)), released);
  replay.adopt_held_clamps({});  // replaces: none held
  EXPECT_EQ(lines_of(replay.plan(widen)), std::vector<std::string>{released[0]});
}

TEST(ExecutorHierarchy, AParentIsNotNarrowedOverAChildThatCouldNotBeClamped) {
  BatchLimitedV1 node;
  auto& [t, fs, clock] = node;
  WriteExecutor exec(fs, false, &clock);
  const std::string child = t / ("cpu/" + kContainer + "/cpu.cfs_quota_us");
  std::vector<std::string> tried;
  exec.set_writer([&](const std::string& path, std::string_view content) -> Status {
    tried.push_back(path);
    if (path == child) return make_error(ErrorCode::kIo, "Device or resource busy");
    return write_file(path, content);
  });
  auto first = exec.apply({{Resource::kCpuQuota, kBe, "29100", "cpu-suppress"}});
  // The parent's write would be refused (EINVAL) and backed off: it is not even tried.
  EXPECT_EQ(tried, std::vector<std::string>{child});
  EXPECT_EQ(exec.counters().at("cpu_quota").failures, 1);
  // Within the child's retry time the parent is held back too; a narrowing write is
  // tried again after one second.
  clock.advance(std::chrono::milliseconds(500));
  exec.apply({{Resource::kCpuQuota, kBe, "29100", "cpu-suppress"}});
  EXPECT_EQ(tried.size(), 1u);
  clock.advance(std::chrono::milliseconds(600));
  exec.apply({{Resource::kCpuQuota, kBe, "29100", "cpu-suppress"}});
  EXPECT_EQ(tried.size(), 2u);
}

TEST(ExecutorHierarchy, RestoreWidensV1CpusetsCopiedFromANarrowedParent) {
  TempDir t;
  for (const std::string& cg : {std::string("kubepods"), kBe, kPod})
    t.write("cpuset/" + cg + "/cpuset.cpus", "0-3\n");
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  exec.apply({{Resource::kCpusetCpus, kBe, "0", "cpu-suppress"}});
  ASSERT_EQ(t.read("cpuset/" + kPod + "/cpuset.cpus"), "0");  // clamped with it
  // A pod created meanwhile: v1 copied the narrowed list into it; one someone set apart.
  t.write("cpuset/kubepods/besteffort/podnew/cpuset.cpus", "0\n");
  t.write("cpuset/kubepods/besteffort/podnew/c1/cpuset.cpus", "0\n");
  t.write("cpuset/kubepods/besteffort/podother/cpuset.cpus", "1\n");
  exec.restore_all();
  EXPECT_EQ(t.read("cpuset/" + kBe + "/cpuset.cpus"), "0-3");
  EXPECT_EQ(t.read("cpuset/" + kPod + "/cpuset.cpus"), "0-3");
  EXPECT_EQ(t.read("cpuset/kubepods/besteffort/podnew/cpuset.cpus"), "0-3");
  EXPECT_EQ(t.read("cpuset/kubepods/besteffort/podnew/c1/cpuset.cpus"), "0-3");
  EXPECT_EQ(t.read("cpuset/kubepods/besteffort/podother/cpuset.cpus"), "1\n");
}

TEST(ExecutorHierarchy, V2LeavesChildrenAlone) {
  TempDir t;
  t.write("cgroup.controllers", "cpuset cpu io memory pids\n");
  for (const std::string& cg : {std::string("kubepods"), kBe, kPod, kContainer})
    t.write(cg + "/cpu.max", "max 100000\n");
  t.write(kContainer + "/cpu.max", "200000 100000\n");
  CgroupFs fs(t.path(), CgroupVersion::kV2);
  WriteExecutor exec(fs);
  auto report = exec.apply({{Resource::kCpuQuota, kBe, "29100", "cpu-suppress"}});
  ASSERT_EQ(report.written.size(), 1u);
  EXPECT_EQ(t.read(kContainer + "/cpu.max"), "200000 100000\n");
}

TEST(ExecutorRefusals, ARefusedWriteWaitsWithBackoffAndIsCounted) {
  BatchLimitedV1 node;
  auto& [t, fs, clock] = node;
  WriteExecutor exec(fs, false, &clock);
  int attempts = 0;
  exec.set_writer([&](const std::string&, std::string_view) -> Status {
    ++attempts;
    return make_error(ErrorCode::kInvalidArgument, "Invalid argument");
  });
  const std::vector<CgroupWrite> ask{{Resource::kCpuShares, kPod, "64", "be-cgroup"}};
  EXPECT_EQ(exec.apply(ask).failed.size(), 1u);
  EXPECT_EQ(exec.counters().at("cpu_shares").failures, 1);
  // Within the first second the same write is not tried again.
  clock.advance(std::chrono::milliseconds(500));
  EXPECT_TRUE(exec.apply(ask).failed.empty());
  EXPECT_EQ(attempts, 1);
  EXPECT_EQ(exec.counters().at("cpu_shares").deferred, 1);
  clock.advance(std::chrono::milliseconds(600));
  EXPECT_EQ(exec.apply(ask).failed.size(), 1u);
  // The second refusal waits two seconds.
  clock.advance(std::chrono::milliseconds(1500));
  EXPECT_TRUE(exec.apply(ask).failed.empty());
  EXPECT_EQ(attempts, 2);
  // Another value waits too (a suppress value moves every tick).
  EXPECT_TRUE(exec.apply({{Resource::kCpuShares, kPod, "128", "be-cgroup"}}).failed.empty());
  EXPECT_EQ(attempts, 2);
  clock.advance(std::chrono::milliseconds(600));
  EXPECT_EQ(exec.apply({{Resource::kCpuShares, kPod, "128", "be-cgroup"}}).failed.size(), 1u);
  EXPECT_EQ(attempts, 3);
}

TEST(ExecutorOriginals, PersistedBeforeTheWriteThatChangesTheFile) {
  TempDir t;
  make_batch_limited_v1(t);
  t.write("cpu/" + kContainer + "/cpu.cfs_quota_us", "-1\n");  // nothing to clamp here
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  const std::string quota_path = t / ("cpu/" + kBe + "/cpu.cfs_quota_us");
  std::vector<std::string> seen_on_disk;
  exec.set_persist([&](const Originals& originals) {
    seen_on_disk.push_back(t.read("cpu/" + kBe + "/cpu.cfs_quota_us"));
    EXPECT_EQ(originals.at(quota_path).content, "-1");
    return ok_status();
  });
  exec.apply({{Resource::kCpuQuota, kBe, "150000", "cpu-suppress"}});
  exec.apply({{Resource::kCpuQuota, kBe, "90000", "cpu-suppress"}});
  // Once, for the first change, while the file still held kubelet's value.
  ASSERT_EQ(seen_on_disk.size(), 1u);
  EXPECT_EQ(seen_on_disk[0], "-1\n");
}

TEST(ExecutorOriginals, AFileWhoseOriginalCannotBeRecordedIsLeftAsItIs) {
  TempDir t;
  make_batch_limited_v1(t);
  t.write("cpu/" + kContainer + "/cpu.cfs_quota_us", "-1\n");  // nothing to clamp here
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  bool disk_full = true;
  int saves = 0;
  exec.set_persist([&](const Originals&) -> Status {
    ++saves;
    if (disk_full) return make_error(ErrorCode::kIo, "write originals.json.tmp: No space left");
    return ok_status();
  });
  const std::vector<CgroupWrite> suppress = {{Resource::kCpuQuota, kBe, "150000", "cpu-suppress"}};
  auto held = exec.apply(suppress);
  EXPECT_TRUE(held.written.empty());
  EXPECT_EQ(t.read("cpu/" + kBe + "/cpu.cfs_quota_us"), "-1\n") << "changed without a record";
  EXPECT_TRUE(exec.originals().empty());
  EXPECT_TRUE(exec.recording_failed());
  EXPECT_EQ(exec.counters().at("cpu_quota").unrecorded, 1);
  // Every pass asks again; once the record can be written, the write lands.
  exec.apply(suppress);
  EXPECT_EQ(saves, 2);
  disk_full = false;
  EXPECT_EQ(exec.apply(suppress).written.size(), 1u);
  EXPECT_EQ(t.read("cpu/" + kBe + "/cpu.cfs_quota_us"), "150000");
  EXPECT_FALSE(exec.recording_failed());
  // A file already on record is written whatever the state file does later.
  disk_full = true;
  EXPECT_EQ(exec.apply({{Resource::kCpuQuota, kBe, "90000", "cpu-suppress"}}).written.size(), 1u);
  EXPECT_EQ(saves, 3);
  exec.restore_all();
  EXPECT_EQ(t.read("cpu/" + kBe + "/cpu.cfs_quota_us"), "-1");
}

TEST(ExecutorOriginals, AdoptedOriginalsWinOverValuesFoundNow) {
  TempDir t;
  make_batch_limited_v1(t);
  t.write("cpu/" + kBe + "/cpu.cfs_quota_us", "29100\n");  // a crashed agent's suppression
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  WriteExecutor exec(fs);
  // Recorded by an agent that had the tree mounted elsewhere: found again by cgroup.
  const std::string path = "/host/sys/fs/cgroup/cpu/" + kBe + "/cpu.cfs_quota_us";
  exec.adopt_originals({{path, FileWrite{Resource::kCpuQuota, kBe, path, "", "-1", "restore"}}});
  EXPECT_EQ(exec.originals().begin()->first, t / ("cpu/" + kBe + "/cpu.cfs_quota_us"));
  exec.apply({{Resource::kCpuQuota, kBe, "50000", "cpu-suppress"}});
  exec.restore_all();
  EXPECT_EQ(t.read("cpu/" + kBe + "/cpu.cfs_quota_us"), "-1");
}

}  // namespace
}  // namespace gleaner::cgroup
