// deploy/monitoring: the alert rules pass promtool, the dashboard is valid JSON, and
// every gleaner_ metric either of them names is one the agent actually exports.

#include <regex>
#include <set>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/file_io.h"
#include "common/json_util.h"
#include "reporter/metrics/metrics_registry.h"
#include "test/reporter/report_fixtures.h"
#include "test/support/temp_tree.h"

namespace gleaner::reporter {
namespace {

const std::string kDir = std::string(GLEANER_SOURCE_DIR) + "/deploy/monitoring/";
const std::string kRules = kDir + "gleaner-alerts.yaml";
const std::string kDashboard = kDir + "gleaner-dashboard.json";

std::set<std::string> metric_names_in(const std::string& text) {
  std::set<std::string> out;
  std::regex name("gleaner_[a-z0-9_]+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator();
       ++it) {
    std::string n = it->str();
    for (const char* suffix : {"_bucket", "_count", "_sum"}) {
      std::string s(suffix);
      if (n.size() > s.size() && n.ends_with(s)) n.resize(n.size() - s.size());
    }
    out.insert(n);
  }
  return out;
}

TEST(MonitoringAssets, PromtoolAcceptsTheAlertRules) {
  if (::access("/usr/bin/promtool", X_OK) != 0) {
    GTEST_SKIP()
        << "promtool missing: install Debian package 'prometheus' (scripts/install-deps.sh)";
  }
  gleaner::testing::TempDir dir;
  std::string cmd = "/usr/bin/promtool check rules " + kRules + " > " + (dir / "out") + " 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << dir.read("out");
  EXPECT_NE(dir.read("out").find("SUCCESS"), std::string::npos) << dir.read("out");
}

TEST(MonitoringAssets, DashboardIsValidGrafanaJson) {
  auto text = read_file(kDashboard);
  ASSERT_TRUE(text) << text.error().message;
  auto json = parse_json(*text, kDashboard);
  ASSERT_TRUE(json) << json.error().message;
  ASSERT_TRUE((*json)["panels"].is_array());
  EXPECT_FALSE((*json)["uid"].get<std::string>().empty());
  int with_targets = 0;
  std::set<int> ids;
  for (const auto& p : (*json)["panels"]) {
    EXPECT_TRUE(ids.insert(p["id"].get<int>()).second) << "duplicate panel id " << p["id"];
    if (p["type"] == "row") continue;
    ASSERT_TRUE(p.contains("targets")) << p["title"];
    for (const auto& t : p["targets"])
      EXPECT_FALSE(t["expr"].get<std::string>().empty());
    ++with_targets;
  }
  EXPECT_GE(with_targets, 10);
}

TEST(MonitoringAssets, EveryMetricTheyNameIsExported) {
  MetricsRegistry registry;
  registry.update(testing::sample_state(2));
  std::string exported = registry.serialize();
  for (const auto& path : {kRules, kDashboard}) {
    auto text = read_file(path);
    ASSERT_TRUE(text) << text.error().message;
    auto names = metric_names_in(*text);
    EXPECT_GE(names.size(), 5u) << path;
    for (const auto& n : names) {
      // The scheduler's own metrics are checked against it in the scheduler's tests.
      if (n.starts_with("gleaner_scheduler_")) continue;
      EXPECT_NE(exported.find("# TYPE " + n + " "), std::string::npos)
          << path << " uses " << n << ", which the agent does not export";
    }
  }
}

}  // namespace
}  // namespace gleaner::reporter
