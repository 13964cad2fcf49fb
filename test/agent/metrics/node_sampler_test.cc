#include "agent/metrics/node_sampler.h"

#include <gtest/gtest.h>

#include "test/support/temp_tree.h"

namespace gleaner::agent {
namespace {
using gleaner::testing::TempDir;

void write_proc(const TempDir& t, uint64_t busy, uint64_t idle) {
  t.write("stat", "cpu  " + std::to_string(busy) + " 0 0 " + std::to_string(idle) +
                      " 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\ncpu1 1 0 0 1 0 0 0 0 0 0\n"
                      "cpu2 1 0 0 1 0 0 0 0 0 0\ncpu3 1 0 0 1 0 0 0 0 0 0\nintr 0\n");
  t.write("meminfo", "MemTotal:       16384000 kB\nMemFree: 1 kB\nMemAvailable:    4096000 kB\n");
}

TEST(NodeSampler, CpuFromStatDeltasAndMemoryFromMeminfo) {
  TempDir t;
  write_proc(t, 1000, 1000);
  NodeSampler sampler(t.path());
  EXPECT_EQ(sampler.cpus(), 4);
  auto first = sampler.sample();
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_FALSE(first->cpu_valid);  // primes the counters
  EXPECT_EQ(first->memory_total_bytes, 16384000LL * 1024);
  EXPECT_EQ(first->memory_bytes, (16384000LL - 4096000) * 1024);
  // 300 busy of 400 ticks across 4 CPUs: 3 cores.
  write_proc(t, 1300, 1100);
  auto second = sampler.sample();
  EXPECT_TRUE(second->cpu_valid);
  EXPECT_EQ(second->cpu_milli, 3000);
  EXPECT_FALSE(sampler.has_psi());
}

TEST(NodeSampler, MissingOrBrokenProcIsAnError) {
  TempDir t;
  NodeSampler missing(t.path(), 2);
  EXPECT_EQ(missing.sample().error().code, ErrorCode::kNotFound);
  t.write("stat", "garbage\n");
  t.write("meminfo", "MemTotal: 1 kB\nMemAvailable: 1 kB\n");
  NodeSampler broken(t.path(), 2);
  EXPECT_EQ(broken.sample().error().code, ErrorCode::kParse);
}

}  // namespace
}  // namespace gleaner::agent
