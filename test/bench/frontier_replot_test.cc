// A saved frontier run read back from the markdown frontier_bench printed: the points its
// charts need, each configuration and setting recognised, and a row that is not a point
// refused with its line.
#include <sstream>

#include <gtest/gtest.h>

#include "bench/frontier/frontier_points.h"

namespace gleaner::bench::frontier {
namespace {

constexpr const char* kSaved = R"(### nginx

| BE | configuration | threshold | LS p50 (ms) | LS p99 (ms, min-max) | p99 / alone | BE share of idle CPU | BE CPU-s | LS CPU-s | other CPU-s | requests (late, failed) |
|---|---|---|---|---|---|---|---|---|---|---|
| cpu | LS alone | - | 0.18 | 29.40 (25.18-30.44) | 1.00 | 0.00 | 0.0 | 1.1 | 0.0 | 2063 (104, 0) |
| cpu | Gleaner onInterference | 65% | 0.11 | 24.02 (23.46-25.14) | 0.82 | 0.98 | 4.9 | 1.0 | 0.1 | 2063 (36, 0) |
| memory | Gleaner slo (shipped) | wait 4000us | 0.26 | 25.41 (24.03-53.73) | 0.85 | 0.97 | 1.8 | 1.1 | 3.2 | 2063 (70, 0) |

- nginx, BE cpu (LS alone p99 29.40 ms), best harvest at p99 <= 1.1x alone: ...
)";

TEST(FrontierReplot, ASavedRunsTablesGiveBackItsPoints) {
  std::istringstream in(kSaved);
  auto saved = parse_saved_run(in);
  ASSERT_TRUE(saved) << saved.error().message;
  ASSERT_EQ(saved->size(), 1u);
  EXPECT_EQ((*saved)[0].kind, ServiceKind::kNginx);
  const auto& points = (*saved)[0].points;
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0].family, Family::kAlone);
  EXPECT_EQ(points[0].setting, 0);
  EXPECT_DOUBLE_EQ(points[0].p99_ms, 29.40);
  EXPECT_EQ(points[1].family, Family::kGleanerOnInterference);
  EXPECT_EQ(points[1].setting, 65);
  EXPECT_DOUBLE_EQ(points[1].be_share_of_idle, 0.98);
  EXPECT_EQ(points[2].mix, BeMix::kMemory);
  EXPECT_EQ(points[2].family, Family::kGleanerSlo);
  EXPECT_EQ(points[2].setting, 4000);
  EXPECT_EQ(setting_label(points[2]), "wait 4000us");
}

TEST(FrontierReplot, ARowThatIsNoPointIsRefusedWithItsLine) {
  std::istringstream in(
      "### redis\n\n| cpu | Gleaner, maybe | 65% | 0.1 | 1.0 (1-1) | 1.0 | 0.5 | 0 | 0 | 0 | 1 "
      "|\n");
  auto saved = parse_saved_run(in);
  ASSERT_FALSE(saved);
  EXPECT_NE(saved.error().message.find("line 3"), std::string::npos) << saved.error().message;
  EXPECT_NE(saved.error().message.find("Gleaner, maybe"), std::string::npos);
}

}  // namespace
}  // namespace gleaner::bench::frontier
