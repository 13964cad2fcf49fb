// A node going stale and coming back: one log line per transition naming the node and how
// old its report is, and GET /api/v1/nodes?health=stale naming the nodes behind
// gleaner_scheduler_nodes{health="stale"}.
#include <sstream>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "scheduler/server/api_routes.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler::server {
namespace {

using live_testing::node_report;

// The default logger's lines, for the life of the capture; the previous logger after.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines_);
    sink->set_pattern("%l %v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Lines holding `text`.
  [[nodiscard]] int count(const std::string& text) const {
    std::istringstream in(lines_.str());
    int n = 0;
    for (std::string line; std::getline(in, line);)
      n += line.find(text) != std::string::npos ? 1 : 0;
    return n;
  }
  [[nodiscard]] std::string all() const { return lines_.str(); }

 private:
  std::ostringstream lines_;
  std::shared_ptr<spdlog::logger> previous_;
};

Json nodes_named(ApiRoutes& routes, const std::string& query) {
  const net::HttpReply reply = routes.get("GET", "/api/v1/nodes" + query);
  EXPECT_EQ(reply.status, 200u) << reply.body;
  return Json::parse(reply.body)["nodes"];
}

TEST(NodeHealthLog, EachTransitionIsLoggedOnceNamingTheNodeAndItsReportAge) {
  FakeClock clock;  // whole seconds only: the ages below are exact
  LiveMetrics metrics;
  gang::GangOptions options;
  options.staleness = StalenessPolicy{60, 900};
  auto live = gang::GangScheduler::create(options, {}, clock, metrics);
  ASSERT_TRUE(live.ok()) << live.error().message;
  ReportValidator validator("", 4096);
  ApiRoutes routes(validator, **live, metrics);

  LogCapture log;
  ASSERT_FALSE((*live)->apply_report(node_report("quiet", 1, 4000, int64_t{8} << 30)));
  ASSERT_FALSE((*live)->apply_report(node_report("busy", 1, 4000, int64_t{8} << 30)));
  clock.advance(std::chrono::seconds(75));
  ASSERT_FALSE((*live)->apply_report(node_report("busy", 2, 4000, int64_t{8} << 30)));
  (*live)->tick();
  (*live)->tick();  // nothing changed since: nothing said again
  EXPECT_EQ(log.count("is stale"), 1) << log.all();
  EXPECT_EQ(log.count("warning node default/quiet is stale: its last report is 75 s old "
                      "(stale after 60 s)"),
            1)
      << log.all();

  // Which node is stale, without a label per node on the metric.
  const Json stale = nodes_named(routes, "?health=stale");
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0]["name"], "quiet");
  EXPECT_EQ(stale[0]["reportAgeSeconds"], 75);
  EXPECT_EQ(nodes_named(routes, "?health=fresh").size(), 1u);
  EXPECT_EQ(nodes_named(routes, "").size(), 2u);
  const net::HttpReply bad = routes.get("GET", "/api/v1/nodes?health=old");
  EXPECT_EQ(bad.status, 400u);
  EXPECT_NE(bad.body.find("health=old: expected fresh, stale or degraded"), std::string::npos);

  // Back: one line saying how long it was silent.
  clock.advance(std::chrono::seconds(20));
  ASSERT_FALSE((*live)->apply_report(node_report("quiet", 2, 4000, int64_t{8} << 30)));
  ASSERT_FALSE((*live)->apply_report(node_report("quiet", 3, 4000, int64_t{8} << 30)));
  (*live)->tick();
  EXPECT_EQ(log.count("node default/quiet reports again, 95 s after its previous report (it "
                      "was stale)"),
            1)
      << log.all();
  EXPECT_TRUE(nodes_named(routes, "?health=stale").empty());

  // Silent long enough to be degraded: said once more, naming the threshold.
  clock.advance(std::chrono::seconds(1000));
  (*live)->tick();
  EXPECT_EQ(log.count("node default/quiet is degraded: its last report is 1000 s old"), 1)
      << log.all();
}

}  // namespace
}  // namespace gleaner::scheduler::server
