// The pod sampler over a cgroup v1 tree of plain files: memory.stat is read once every
// kMemoryStatEvery passes per pod, and the usage counter carries the figure in between.
#include "agent/metrics/pod_sampler.h"

#include <set>

#include <gtest/gtest.h>

#include "common/quantity.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent {
namespace {
using gleaner::testing::TempDir;

using gleaner::kMi;
const std::string kPod = "kubepods/burstable/pod1";

std::string memory_stat(int64_t anon) {
  return "cache 0\ntotal_inactive_anon 0\ntotal_active_anon " + std::to_string(anon) +
         "\ntotal_unevictable 0\ntotal_inactive_file 0\n";
}

void write_pod(const TempDir& t, int64_t usage, int64_t anon) {
  t.write("cpuacct/" + kPod + "/cpuacct.usage", "1000\n");
  t.write("cpu/" + kPod + "/cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n");
  t.write("memory/" + kPod + "/memory.usage_in_bytes", std::to_string(usage) + "\n");
  t.write("memory/" + kPod + "/memory.stat", memory_stat(anon));
}

int64_t sample_memory(PodSampler& sampler, std::chrono::steady_clock::time_point& now) {
  now += std::chrono::seconds(1);
  auto pass = sampler.sample({{"web/api-0", kPod}}, now);
  EXPECT_EQ(pass.pods.size(), 1u);
  return pass.pods.empty() ? -1 : pass.pods[0].memory_bytes;
}

// One pod at 300 MiB of usage, 100 MiB of it anonymous, sampled once.
class OnePod : public ::testing::Test {
 protected:
  void SetUp() override {
    write_pod(t, 300 * kMi, 100 * kMi);
    EXPECT_EQ(sample_memory(sampler, now), 100 * kMi);  // a new pod: memory.stat at once
  }
  TempDir t;
  cgroup::CgroupFs fs{t.path(), cgroup::CgroupVersion::kV1};
  PodSampler sampler{fs};
  std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now();
};

TEST_F(OnePod, MemoryStatIsReadEveryFewPassesAndUsageCarriesTheFigureBetween) {
  // memory.stat now says 400 MiB of anonymous memory, but its next read is not due: the
  // usage counter grew by 50 MiB, and that is what the figure grows by.
  write_pod(t, 350 * kMi, 400 * kMi);
  int passes_until_stat = 0;
  int64_t seen = sample_memory(sampler, now);
  while (seen != 400 * kMi && passes_until_stat < PodSampler::kMemoryStatEvery) {
    EXPECT_EQ(seen, 150 * kMi) << "pass " << passes_until_stat;
    seen = sample_memory(sampler, now);
    ++passes_until_stat;
  }
  EXPECT_EQ(seen, 400 * kMi) << "memory.stat was not read again within "
                             << PodSampler::kMemoryStatEvery << " passes";
  EXPECT_LT(passes_until_stat, PodSampler::kMemoryStatEvery);

  // Then it waits a whole cycle: usage shrinking below the estimate bounds it.
  write_pod(t, 250 * kMi, 10 * kMi);
  for (int pass = 1; pass < PodSampler::kMemoryStatEvery; ++pass)
    EXPECT_EQ(sample_memory(sampler, now), 250 * kMi) << "pass " << pass;
  EXPECT_EQ(sample_memory(sampler, now), 10 * kMi);
}

TEST_F(OnePod, ThrottlingCountersFollowTheMemoryStatCycle) {
  t.write("cpu/" + kPod + "/cpu.stat", "nr_periods 9\nnr_throttled 7\nthrottled_time 5000\n");
  t.write("memory/" + kPod + "/memory.stat", memory_stat(200 * kMi));
  for (int pass = 0; pass < PodSampler::kMemoryStatEvery; ++pass) {
    now += std::chrono::seconds(1);
    auto sampled = sampler.sample({{"web/api-0", kPod}}, now);
    ASSERT_EQ(sampled.pods.size(), 1u);
    const bool refreshed = sampled.pods[0].memory_bytes == 200 * kMi;
    EXPECT_EQ(sampled.pods[0].throttle.nr_throttled, refreshed ? 7 : 0) << "pass " << pass;
    if (refreshed) return;
  }
  ADD_FAILURE() << "memory.stat was not read again within a cycle";
}

TEST_F(OnePod, APodNoLongerListedHasItsDescriptorsClosed) {
  ASSERT_GT(fs.cached_descriptors(), 0u);
  now += std::chrono::seconds(1);
  // Deleted from the pod list while kubelet has not removed its cgroup yet.
  EXPECT_TRUE(sampler.sample({}, now).pods.empty());
  EXPECT_EQ(fs.cached_descriptors(), 0u);
}

TEST(PodSampler, PodsCreatedTogetherReadMemoryStatOnDifferentPasses) {
  TempDir t;
  std::vector<PodCgroup> pods;
  for (int i = 0; i < 40; ++i) {
    const std::string cg = "kubepods/besteffort/pod" + std::to_string(i);
    t.write("cpuacct/" + cg + "/cpuacct.usage", "1000\n");
    t.write("cpu/" + cg + "/cpu.stat", "nr_periods 0\n");
    t.write("memory/" + cg + "/memory.usage_in_bytes", "5000\n");
    t.write("memory/" + cg + "/memory.stat", memory_stat(1000));
    pods.push_back({"default/p" + std::to_string(i), cg});
  }
  cgroup::CgroupFs fs(t.path(), cgroup::CgroupVersion::kV1);
  PodSampler sampler(fs);
  auto now = std::chrono::steady_clock::now();
  (void)sampler.sample(pods, now);
  // Every memory.stat now reports 2000; count how many pods see it on each later pass.
  for (int i = 0; i < 40; ++i)
    t.write("memory/" + pods[i].cgroup + "/memory.stat", memory_stat(2000));
  std::vector<int> refreshed_on_pass;
  std::set<std::string> refreshed;
  for (int pass = 0; pass < PodSampler::kMemoryStatEvery; ++pass) {
    now += std::chrono::seconds(1);
    int n = 0;
    for (const auto& s : sampler.sample(pods, now).pods) {
      if (s.memory_bytes == 2000 && refreshed.insert(s.key).second) ++n;
    }
    refreshed_on_pass.push_back(n);
  }
  EXPECT_EQ(refreshed.size(), pods.size());  // all within one cycle
  for (int n : refreshed_on_pass)
    EXPECT_LT(n, 30) << "most pods read memory.stat on the same pass";
}

}  // namespace
}  // namespace gleaner::agent
