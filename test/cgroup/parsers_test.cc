#include "cgroup/parsers.h"

#include <gtest/gtest.h>

#include "test/support/temp_tree.h"

namespace gleaner::cgroup {
namespace {
using gleaner::testing::read_fixture;

TEST(Parsers, IntValuesAndUnlimited) {
  EXPECT_EQ(*parse_int_value("100000\n"), 100000);
  EXPECT_EQ(*parse_int_value("max\n"), kUnlimited);
  EXPECT_EQ(*parse_int_value("-1\n"), kUnlimited);
  EXPECT_FALSE(parse_int_value("12ab").ok());
  EXPECT_FALSE(parse_int_value("").ok());
  EXPECT_EQ(format_v2_value(kUnlimited), "max");
}

TEST(Parsers, CpuStatV1Captured) {
  auto stat = parse_flat_keyed(read_fixture("cgroup/v1/cpu.stat"));
  ASSERT_TRUE(stat.ok()) << stat.error().message;
  EXPECT_TRUE(stat->count("nr_periods"));
  EXPECT_TRUE(stat->count("throttled_time"));
}

TEST(Parsers, CpuStatV2) {
  auto stat = parse_flat_keyed(read_fixture("cgroup/v2/cpu.stat.pod"));
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->at("usage_usec"), 8276412);
  EXPECT_EQ(stat->at("nr_throttled"), 37);
  EXPECT_EQ(stat->at("throttled_usec"), 912345);
}

TEST(Parsers, FlatKeyedRejectsGarbage) {
  EXPECT_FALSE(parse_flat_keyed("nr_periods 1\nbroken\n").ok());
  EXPECT_FALSE(parse_flat_keyed("a b c\n").ok());
  EXPECT_FALSE(parse_flat_keyed("a 1x\n").ok());
}

TEST(Parsers, MemoryWorkingSetV1UsesHierarchicalTotals) {
  auto stat = parse_flat_keyed(read_fixture("cgroup/v1/memory.stat"));
  ASSERT_TRUE(stat.ok()) << stat.error().message;
  auto ws = memory_working_set(*stat, /*v1=*/true);
  ASSERT_TRUE(ws.ok());
  EXPECT_EQ(*ws, stat->at("total_inactive_anon") + stat->at("total_active_anon") +
                     stat->at("total_unevictable"));
  EXPECT_EQ(*memory_working_set_from_text(read_fixture("cgroup/v1/memory.stat"), true), *ws);
}

TEST(Parsers, MemoryWorkingSetV2ExcludesPageCache) {
  auto stat = parse_flat_keyed(read_fixture("cgroup/v2/memory.stat"));
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(*memory_working_set(*stat, false), 94371840 + 10485760 + 4096);
  EXPECT_FALSE(memory_working_set({{"anon", 1}}, false).ok());
  EXPECT_EQ(*memory_working_set_from_text(read_fixture("cgroup/v2/memory.stat"), false),
            94371840 + 10485760 + 4096);
  EXPECT_FALSE(memory_working_set_from_text("anon 1\ninactive_anon 2\n", false).ok());
  EXPECT_FALSE(
      memory_working_set_from_text("inactive_anon x\nactive_anon 1\nunevictable 1\n", false).ok());
}

TEST(Parsers, CpuMax) {
  auto unlimited = parse_cpu_max(read_fixture("cgroup/v2/cpu.max"));
  ASSERT_TRUE(unlimited.ok());
  EXPECT_EQ(unlimited->quota_us, kUnlimited);
  EXPECT_EQ(unlimited->period_us, 100000);
  auto limited = parse_cpu_max(read_fixture("cgroup/v2/cpu.max.limited"));
  EXPECT_EQ(limited->quota_us, 20000);
  EXPECT_EQ(format_cpu_max(*limited), "20000 100000");
  EXPECT_FALSE(parse_cpu_max("20000 x").ok());
}

TEST(Parsers, PsiCapturedFiles) {
  auto node = parse_psi(read_fixture("proc/pressure-cpu"));
  ASSERT_TRUE(node.ok()) << node.error().message;
  auto pod = parse_psi(read_fixture("cgroup/v2/cpu.pressure.pod"));
  ASSERT_TRUE(pod.ok());
  EXPECT_DOUBLE_EQ(pod->some.avg10, 1.52);
  EXPECT_EQ(pod->some.total_us, 4410823u);
  ASSERT_TRUE(pod->full.has_value());
  EXPECT_DOUBLE_EQ(pod->full->avg60, 0.12);
  EXPECT_FALSE(parse_psi("full avg10=1 total=2\n").ok());
  EXPECT_FALSE(parse_psi("some avg10=x total=2\n").ok());
}

TEST(Parsers, CpuLists) {
  EXPECT_EQ(*parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(parse_cpu_list("\n")->empty());
  EXPECT_EQ(format_cpu_list({5, 0, 1, 2, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_FALSE(parse_cpu_list("3-1").ok());
  EXPECT_FALSE(parse_cpu_list("a").ok());
  EXPECT_EQ(*parse_cpu_list(read_fixture("cgroup/v1/cpuset.cpus")), (std::vector<int>{0, 1}));
}

TEST(Parsers, ProcStatCaptured) {
  auto cpu = parse_proc_stat_cpu(read_fixture("proc/stat"));
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  EXPECT_GT(cpu->total_ticks, cpu->busy_ticks);
  auto synthetic = parse_proc_stat_cpu("cpu  10 1 5 100 4 2 3 1 7 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n");
  EXPECT_EQ(synthetic->busy_ticks, 10u + 1 + 5 + 2 + 3 + 1);
  EXPECT_EQ(synthetic->total_ticks, synthetic->busy_ticks + 100 + 4);
  EXPECT_FALSE(parse_proc_stat_cpu("intr 1 2 3\n").ok());
}

TEST(Parsers, MeminfoCaptured) {
  auto mem = parse_meminfo(read_fixture("proc/meminfo"));
  ASSERT_TRUE(mem.ok());
  EXPECT_GT(mem->total_bytes, mem->available_bytes);
  EXPECT_EQ(mem->used_bytes(), mem->total_bytes - mem->available_bytes);
  EXPECT_FALSE(parse_meminfo("MemTotal: 10 kB\n").ok());
}

TEST(Parsers, IdLists) {
  EXPECT_EQ(*parse_id_list("12\n345\n"), (std::vector<int>{12, 345}));
  EXPECT_TRUE(parse_id_list("")->empty());
  EXPECT_FALSE(parse_id_list("12\nx\n").ok());
}

}  // namespace
}  // namespace gleaner::cgroup
