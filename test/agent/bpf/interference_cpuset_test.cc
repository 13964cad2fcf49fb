// The interference signal with the cpuset suppress policy: "tighten now" takes one step of
// CPUs off best-effort work (never below the policy's 2 CPUs), in the policy's CPU order.
#include <algorithm>

#include <gtest/gtest.h>

#include "agent/edge/cpu_topology_reader.h"
#include "agent/edge/knob_reader.h"
#include "agent/qos/cpu_suppress.h"
#include "agent/step/interference_cap.h"
#include "cgroup/executor.h"
#include "test/agent/qos/qos_test_util.h"

namespace gleaner::agent {
namespace {
using bpf::InterferenceAction;
using cgroup::Resource;
using namespace qos::test;

TEST(CappedCpuCount, CapsButNeverGrowsAndKeepsTwoCpus) {
  EXPECT_EQ(qos::capped_cpu_count(16, 12, 16), 12);
  EXPECT_EQ(qos::capped_cpu_count(8, 12, 16), 8);    // a ceiling never gives BE more
  EXPECT_EQ(qos::capped_cpu_count(16, 1, 16), 2);    // the policy keeps 2 CPUs
  EXPECT_EQ(qos::capped_cpu_count(2, 1, 2), 2);      // so a 2-CPU node cannot shrink
  EXPECT_EQ(qos::capped_cpu_count(20, 30, 16), 16);  // never more than BE may use
  EXPECT_EQ(qos::capped_cpu_count(2, 1, 2, 1), 1);   // unless cpuSuppressMinCPUs is 1
}

TEST(InterferenceCapCpus, TightensOneStepPerVerdictHoldsAndRelaxes) {
  InterferenceCap cap("kubepods/besteffort", 16);  // step ceil(10% of 16) = 2 CPUs
  EXPECT_FALSE(cap.cpu_ceiling().has_value());
  cap.update_cpus(InterferenceAction::kTightenNow, 16);
  EXPECT_EQ(cap.cpu_ceiling(), 14);
  cap.update_cpus(InterferenceAction::kTightenNow, 14);
  EXPECT_EQ(cap.cpu_ceiling(), 12);
  // Usage rules shrank BE further meanwhile: the next step starts from what it holds.
  cap.update_cpus(InterferenceAction::kTightenNow, 6);
  EXPECT_EQ(cap.cpu_ceiling(), 4);
  cap.update_cpus(InterferenceAction::kHold, 4);
  EXPECT_EQ(cap.cpu_ceiling(), 4);
  for (int i = 0; i < 5; ++i)
    cap.update_cpus(InterferenceAction::kTightenNow, *cap.cpu_ceiling());
  EXPECT_EQ(cap.cpu_ceiling(), 2);
  cap.update_cpus(InterferenceAction::kRelaxAllowed, 2);
  EXPECT_FALSE(cap.cpu_ceiling().has_value());
}

TEST(InterferenceCapCpus, TwoCpuNodeShrinksOnlyBelowTheDefaultMinimum) {
  InterferenceCap cap("kubepods/besteffort", 2);
  cap.update_cpus(InterferenceAction::kTightenNow, 2);
  EXPECT_EQ(cap.cpu_ceiling(), 2);
  cap.update_cpus(InterferenceAction::kTightenNow, 2, /*min_cpus=*/1);
  EXPECT_EQ(cap.cpu_ceiling(), 1);
  cap.update_cpus(InterferenceAction::kTightenNow, 1, /*min_cpus=*/1);
  EXPECT_EQ(cap.cpu_ceiling(), 1);
}

class InterferenceCpuset : public ::testing::TestWithParam<cgroup::CgroupVersion> {
 protected:
  void SetUp() override {
    make_sysfs16(sys_);
    FakePod ls{.name = "web", .uid = "ls-1", .kube_qos = "Burstable", .cpu_usage = "1"};
    ls.containers = Json::array({container("app", {{"cpu", "1"}})});
    FakePod be{.name = "spark", .uid = "be-1", .qos_label = "BE", .cpu_usage = "8"};
    be.containers = Json::array({container("exec")});
    pods_ = {ls, be};
    make_node_tree(tree_, GetParam(), layout_, pods_, "0-15");
    FakeNode n;
    n.cpu = n.allocatable_cpu = "16";
    auto snap = make_snapshot(n, pods_);
    ctx_ = qos::node_facts(snap, layout_, *edge::read_cpu_topology(sys_.path()));
    strategy_.enable = true;
    strategy_.cpu_suppress_policy = config::CpuSuppressPolicy::kCpuset;
    strategy_.cpu_suppress_threshold_percent = 100;  // an idle node leaves BE every CPU
  }
  std::string be_dir() const { return layout_.qos_dir(cgroup::KubeQos::kBestEffort); }
  std::string be_container() const {
    return *layout_.container_dir(cgroup::KubeQos::kBestEffort, "be-1", container_id("exec"));
  }

  TempDir tree_;
  TempDir sys_;
  cgroup::KubeletLayout layout_{cgroup::CgroupDriver::kCgroupfs};
  std::vector<FakePod> pods_;
  qos::NodeFacts ctx_;
  config::ResourceThresholdStrategy strategy_;
};

TEST_P(InterferenceCpuset, TightenTakesTheNextStepOffBeInThePolicysOrder) {
  cgroup::CgroupFs fs(tree_.path(), GetParam());
  qos::test::TreeReader reader(fs, nullptr);
  cgroup::WriteExecutor exec(fs);
  InterferenceCap cap(be_dir(), 16);
  // A quiet node: usage rules leave BE every CPU, so the plan changes no cpuset.
  qos::Plan plan = qos::plan_cpu_suppress(ctx_, strategy_, 0, 0, reader, false);
  ASSERT_TRUE(exec.plan(plan.writes).empty());
  cap.filter_cpuset(plan, ctx_, reader);  // no ceiling: nothing added
  ASSERT_TRUE(exec.plan(plan.writes).empty());

  // LS waits: one step (2 CPUs) off BE at once. The policy hands out whole cores
  // alternating NUMA nodes (0,8 4,12 1,9 5,13 2,10 6,14 3,11 7,15), so the last core, 7/15,
  // is the one taken back.
  cap.update_cpus(InterferenceAction::kTightenNow, 16);
  cap.filter_cpuset(plan, ctx_, reader);
  exec.apply(plan.writes);
  EXPECT_EQ(*fs.read_logical(Resource::kCpusetCpus, be_dir()), "0-6,8-14");
  EXPECT_EQ(*fs.read_logical(Resource::kCpusetCpus, be_container()), "0-6,8-14");
  for (const auto& w : plan.writes) {
    if (w.resource == Resource::kCpusetCpus) {
      EXPECT_EQ(w.reason, "interference");
    }
  }

  // The usage rules would grow BE back by a step; the ceiling holds it instead.
  qos::Plan grow = qos::plan_cpu_suppress(ctx_, strategy_, 0, 0, reader, false);
  cap.filter_cpuset(grow, ctx_, reader);
  EXPECT_TRUE(exec.plan(grow.writes).empty());

  // Still waiting: the next step.
  cap.update_cpus(InterferenceAction::kTightenNow, 14);
  qos::Plan next = qos::plan_cpu_suppress(ctx_, strategy_, 0, 0, reader, false);
  cap.filter_cpuset(next, ctx_, reader);
  exec.apply(next.writes);
  EXPECT_EQ(fs.read_cpuset(be_dir())->size(), 12u);

  // Usage rules that want fewer CPUs than the ceiling are left as they are.
  qos::Plan busy = qos::plan_cpu_suppress(ctx_, strategy_, 14000, 500, reader, false);
  cap.filter_cpuset(busy, ctx_, reader);
  exec.apply(busy.writes);
  EXPECT_EQ(fs.read_cpuset(be_dir())->size(), 2u);
  for (const auto& w : busy.writes) {
    if (w.resource == Resource::kCpusetCpus) {
      EXPECT_EQ(w.reason, qos::kReasonCpuSuppress);
    }
  }

  // Relaxed: the usage rules decide again (and grow BE a step at a time).
  cap.update_cpus(InterferenceAction::kRelaxAllowed, 2);
  qos::Plan relaxed = qos::plan_cpu_suppress(ctx_, strategy_, 0, 0, reader, false);
  cap.filter_cpuset(relaxed, ctx_, reader);
  exec.apply(relaxed.writes);
  EXPECT_EQ(fs.read_cpuset(be_dir())->size(), 4u);
}

TEST_P(InterferenceCpuset, VerdictsAndCapsFollowTheActivePolicyOnly) {
  cgroup::CgroupFs fs(tree_.path(), GetParam());
  qos::test::TreeReader reader(fs, nullptr);
  InterferenceCap cap(be_dir(), 16);
  auto has_write = [](const qos::Plan& plan, Resource r) {
    return std::any_of(plan.writes.begin(), plan.writes.end(), [r](const cgroup::CgroupWrite& w) {
      return w.resource == r && w.reason == "interference";
    });
  };
  // cpuset: the verdict lowers the CPU count (BE holds all 16 now), and no quota appears.
  ASSERT_EQ(strategy_.cpu_suppress_policy, config::CpuSuppressPolicy::kCpuset);
  cap.follow(InterferenceAction::kTightenNow, strategy_, reader);
  EXPECT_EQ(cap.cpu_ceiling(), 14);
  EXPECT_FALSE(cap.ceiling().has_value());
  qos::Plan plan = qos::plan_cpu_suppress(ctx_, strategy_, 0, 0, reader, false);
  cap.cap(plan, strategy_, ctx_, reader);
  EXPECT_TRUE(has_write(plan, Resource::kCpusetCpus));
  EXPECT_FALSE(has_write(plan, Resource::kCpuQuota));

  // The operator switches to cfsQuota: the CPU ceiling goes, a quota ceiling one step under
  // the whole node (BE's quota is unlimited) takes its place, and no CPUs are taken.
  strategy_.cpu_suppress_policy = config::CpuSuppressPolicy::kCfsQuota;
  cap.follow(InterferenceAction::kTightenNow, strategy_, reader);
  EXPECT_FALSE(cap.cpu_ceiling().has_value());
  EXPECT_EQ(cap.ceiling(), 16 * 100000 - 160000);
  qos::Plan quota = qos::plan_cpu_suppress(ctx_, strategy_, 0, 0, reader, false);
  cap.cap(quota, strategy_, ctx_, reader);
  EXPECT_TRUE(has_write(quota, Resource::kCpuQuota));
  EXPECT_FALSE(has_write(quota, Resource::kCpusetCpus));
}

INSTANTIATE_TEST_SUITE_P(Versions, InterferenceCpuset,
                         ::testing::Values(cgroup::CgroupVersion::kV1, cgroup::CgroupVersion::kV2),
                         [](const auto& info) {
                           return info.param == cgroup::CgroupVersion::kV2 ? "v2" : "v1";
                         });

}  // namespace
}  // namespace gleaner::agent
