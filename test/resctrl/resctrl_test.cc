#include <gtest/gtest.h>

#include "resctrl/resctrl_fs.h"
#include "resctrl/schemata.h"
#include "test/support/temp_tree.h"

namespace gleaner::resctrl {
namespace {
using gleaner::testing::TempDir;

// The files of a real resctrl mount on a two-socket machine whose L3 cache ids are 0 and 2.
void make_resctrl(const TempDir& t, bool with_mba = true) {
  t.write("schemata", with_mba ? "    L3:0=7ff;2=7ff\n    MB:0=100;2=100\n" : "L3:0=7ff;2=7ff\n");
  t.write("tasks", "1\n2\n");
  t.write("info/L3/cbm_mask", "7ff\n");
  t.write("info/L3/min_cbm_bits", "1\n");
  t.write("info/L3/num_closids", "16\n");
  if (with_mba) {
    t.write("info/MB/min_bandwidth", "10\n");
    t.write("info/MB/bandwidth_gran", "10\n");
  }
  t.mkdir("info/L3_MON");
}

// A resctrl mount as make_resctrl leaves it, and the file system over it.
class ResctrlMount : public ::testing::Test {
 protected:
  void SetUp() override { make_resctrl(t); }
  TempDir t;
  ResctrlFs fs{t.path()};
};

TEST(Schemata, CatMaskFromPercentRanges) {
  EXPECT_EQ(*cat_mask(0x7ff, 0, 30), 0xfu);
  EXPECT_EQ(*cat_mask(0x7ff, 10, 50), 0x3cu);
  EXPECT_EQ(*cat_mask(0x7ff, 0, 100), 0x7ffu);
  EXPECT_EQ(*cat_mask(0xfffff, 0, 100), 0xfffffu);
  EXPECT_FALSE(cat_mask(0x7ff, 50, 50).ok());
  EXPECT_FALSE(cat_mask(0x7ff, -1, 50).ok());
  EXPECT_FALSE(cat_mask(0x7ff, 0, 101).ok());
}

TEST(Schemata, CatMaskHonoursMinimumWays) {
  // 0-5% of 11 ways is one way; a CPU that needs two gets two.
  EXPECT_EQ(*cat_mask(0x7ff, 0, 5, 1), 0x1u);
  EXPECT_EQ(*cat_mask(0x7ff, 0, 5, 2), 0x3u);
  EXPECT_EQ(*cat_mask(0x7ff, 99, 100, 2), 0x600u);
}

TEST(Schemata, MbaRoundsUpToGranularity) {
  EXPECT_EQ(*mba_value(55, 10, 10), 60);
  EXPECT_EQ(*mba_value(5, 10, 10), 10);
  EXPECT_EQ(*mba_value(100, 10, 10), 100);
  EXPECT_EQ(*mba_value(33, 10, 1), 33);
  EXPECT_FALSE(mba_value(0, 10, 10).ok());
}

TEST(Schemata, ParsesNonContiguousIdsAndIndentation) {
  auto s = parse_schemata("    L3:0=7ff;2=7ff\n    MB:0=100;2=100\n");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->at("L3").size(), 2u);
  EXPECT_EQ(s->at("L3").at(2), "7ff");
  EXPECT_EQ(format_schemata_line("L3", s->at("L3")), "L3:0=7ff;2=7ff");
  EXPECT_FALSE(parse_schemata("L3 0=7ff\n").ok());
  EXPECT_FALSE(parse_schemata("L3:x=7ff\n").ok());
  EXPECT_TRUE(same_value("L3", "f", "0000f"));
  EXPECT_FALSE(same_value("L3", "f", "1f"));
}

TEST_F(ResctrlMount, DetectsCatAndMba) {
  auto cap = fs.detect();
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  ASSERT_TRUE(cap->l3.has_value());
  EXPECT_EQ(cap->l3->ways, 11);
  EXPECT_EQ(cap->l3->cache_ids, (std::vector<int>{0, 2}));
  ASSERT_TRUE(cap->mba.has_value());
  EXPECT_EQ(cap->mba->bandwidth_granularity, 10);
  EXPECT_TRUE(cap->monitoring);
}

TEST(ResctrlFs, CatOnlyAndMissing) {
  TempDir t;
  make_resctrl(t, /*with_mba=*/false);
  auto cap = ResctrlFs(t.path()).detect();
  ASSERT_TRUE(cap.ok());
  EXPECT_FALSE(cap->mba.has_value());
  TempDir empty;
  EXPECT_EQ(ResctrlFs(empty.path()).detect().error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(ResctrlFs(empty / "nope").detect().error().code, ErrorCode::kUnsupported);
}

TEST_F(ResctrlMount, WritesSchemataOnlyWhenDifferent) {
  ASSERT_TRUE(fs.create_group("BE").ok());
  t.write("BE/schemata", "L3:0=7ff;2=7ff\nMB:0=100;2=100\n");
  Schemata be{{"L3", {{0, "f"}, {2, "f"}}}, {"MB", {{0, "100"}, {2, "100"}}}};
  auto written = fs.apply_schemata("BE", be);
  ASSERT_TRUE(written.ok()) << written.error().message;
  // MB already holds 100 everywhere: only the L3 line is written.
  ASSERT_EQ(written->size(), 1u);
  EXPECT_EQ((*written)[0], "L3:0=f;2=f");
  EXPECT_EQ(t.read("BE/schemata"), "L3:0=f;2=f\n");
  // The kernel shows the group's full schemata again; equal content means no write.
  t.write("BE/schemata", "L3:0=0000f;2=f\nMB:0=100;2=100\n");
  EXPECT_TRUE(fs.apply_schemata("BE", be)->empty());
}

TEST_F(ResctrlMount, TasksAreAppendedOnePerWrite) {
  ASSERT_TRUE(fs.create_group("LS").ok());
  t.write("LS/tasks", "");
  ASSERT_TRUE(fs.add_task("LS", 41).ok());
  ASSERT_TRUE(fs.add_task("LS", 42).ok());
  EXPECT_EQ(*fs.read_tasks("LS"), (std::vector<int>{41, 42}));
  EXPECT_FALSE(fs.create_group("../x").ok());
  EXPECT_FALSE(fs.remove_group("").ok());
}

TEST_F(ResctrlMount, ReadsMonitoringData) {
  t.write("BE/mon_data/mon_L3_00/llc_occupancy", "1048576\n");
  t.write("BE/mon_data/mon_L3_00/mbm_total_bytes", "99\n");
  t.write("BE/mon_data/mon_L3_02/llc_occupancy", "2048\n");
  auto mon = fs.read_mon_data("BE");
  ASSERT_TRUE(mon.ok());
  EXPECT_EQ(mon->llc_occupancy_bytes.at(0), 1048576u);
  EXPECT_EQ(mon->llc_occupancy_bytes.at(2), 2048u);
  EXPECT_EQ(mon->mbm_total_bytes.at(0), 99u);
  EXPECT_FALSE(mon->mbm_local_bytes.count(0));
  EXPECT_EQ(fs.read_mon_data("LS").error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace gleaner::resctrl
