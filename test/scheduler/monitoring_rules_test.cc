// Every gleaner_scheduler_ metric the shipped alert rules name is one the scheduler exports.
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "common/file_io.h"
#include "scheduler/server/live_metrics.h"

namespace gleaner::scheduler {
namespace {

TEST(MonitoringRules, EverySchedulerMetricTheAlertsNameIsExported) {
  const std::string path =
      std::string(GLEANER_SOURCE_DIR) + "/deploy/monitoring/gleaner-alerts.yaml";
  auto text = read_file(path);
  ASSERT_TRUE(text.ok()) << text.error().message;
  server::LiveMetrics metrics;
  const std::string exported = metrics.render({});
  std::regex name("gleaner_scheduler_[a-z0-9_]+");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(text->begin(), text->end(), name);
       it != std::sregex_iterator(); ++it)
    names.insert(it->str());
  EXPECT_GE(names.size(), 5u);
  for (const auto& n : names)
    EXPECT_NE(exported.find("# TYPE " + n + " "), std::string::npos)
        << "the alerts use " << n << ", which the scheduler does not export";
}

}  // namespace
}  // namespace gleaner::scheduler
