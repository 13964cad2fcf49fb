#include "reporter/wire/node_report.h"

#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "common/json_util.h"
#include "test/reporter/report_fixtures.h"

namespace gleaner::reporter {
namespace {

using testing::sample_report;

// Parses `report` after `mutate` changed its JSON form, expecting an error naming `needle`.
std::string error_after(const std::function<void(Json&)>& mutate) {
  Json j = to_json(sample_report());
  mutate(j);
  auto parsed = node_report_from_json(j);
  if (parsed) return "(parsed fine)";
  return parsed.error().message;
}

TEST(NodeReportWire, RoundTripsEveryField) {
  NodeReport r = sample_report();
  auto back = parse_node_report(to_json_text(r));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, r);
}

TEST(NodeReportWire, RoundTripsBatchUnavailableWithReason) {
  for (auto reason : {BatchUnavailableReason::kDisabled, BatchUnavailableReason::kDegraded,
                      BatchUnavailableReason::kStale}) {
    NodeReport r = sample_report();
    r.batch_allocatable.reset();
    r.batch_unavailable_reason = reason;
    Json j = to_json(r);
    EXPECT_TRUE(j["batchAllocatable"].is_null());
    EXPECT_EQ(j["batchUnavailableReason"], to_string(reason));
    auto back = node_report_from_json(j);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, r);
  }
}

TEST(NodeReportWire, AmountsAreIntegersInBaseUnits) {
  Json j = to_json(sample_report());
  EXPECT_EQ(j["version"], 1);
  EXPECT_TRUE(j["batchAllocatable"]["cpuMillicores"].is_number_integer());
  EXPECT_EQ(j["batchAllocatable"]["cpuMillicores"], 12200);
  EXPECT_EQ(j["batchAllocatable"]["memoryBytes"], 42090679501);
  EXPECT_EQ(j["interference"]["lsPods"][0]["runqueueLatencyP99Micros"], 180);
  EXPECT_TRUE(j["interference"]["lsPods"][1]["cpuPsiSomeAvg10"].is_null());
}

TEST(NodeReportWire, RejectsUnsupportedVersion) {
  EXPECT_NE(error_after([](Json& j) { j["version"] = 2; }).find("version: unsupported version 2"),
            std::string::npos);
}

TEST(NodeReportWire, RejectsMissingFieldNamingIt) {
  EXPECT_NE(error_after([](Json& j) {
              j["usage"]["be"].erase("memoryBytes");
            }).find("usage.be.memoryBytes: missing"),
            std::string::npos);
}

TEST(NodeReportWire, RejectsUnknownFieldNamingIt) {
  EXPECT_NE(error_after([](Json& j) { j["capacity"]["cpu"] = 1; }).find("capacity.cpu: unknown"),
            std::string::npos);
  EXPECT_NE(error_after([](Json& j) { j["extra"] = true; }).find("extra: unknown field"),
            std::string::npos);
}

TEST(NodeReportWire, RejectsNegativeAndFractionalAmounts) {
  EXPECT_NE(error_after([](Json& j) {
              j["capacity"]["cpuMillicores"] = -1;
            }).find("capacity.cpuMillicores: must not be negative"),
            std::string::npos);
  EXPECT_NE(error_after([](Json& j) {
              j["allocatable"]["memoryBytes"] = 1.5;
            }).find("allocatable.memoryBytes: expected a non-negative integer"),
            std::string::npos);
  EXPECT_NE(error_after([](Json& j) {
              j["capacity"]["memoryBytes"] = "8Gi";
            }).find("capacity.memoryBytes: expected a non-negative integer, got string"),
            std::string::npos);
}

TEST(NodeReportWire, RequiresExactlyOneOfBatchAndReason) {
  EXPECT_NE(
      error_after([](Json& j) { j["batchUnavailableReason"] = "stale"; }).find("exactly one of"),
      std::string::npos);
  EXPECT_NE(error_after([](Json& j) { j["batchAllocatable"] = nullptr; }).find("exactly one of"),
            std::string::npos);
  EXPECT_NE(error_after([](Json& j) {
              j["batchAllocatable"] = nullptr;
              j["batchUnavailableReason"] = "sleepy";
            }).find("unknown batch unavailable reason 'sleepy'"),
            std::string::npos);
}

TEST(NodeReportWire, NamesArrayElementsInErrors) {
  EXPECT_NE(error_after([](Json& j) {
              j["bePods"][0]["name"] = "";
            }).find("bePods[0].name: must not be empty"),
            std::string::npos);
  EXPECT_NE(error_after([](Json& j) {
              j["interference"]["lsPods"][1]["cpuPsiSomeAvg10"] = 120;
            }).find("interference.lsPods[1].cpuPsiSomeAvg10: must be a percentage"),
            std::string::npos);
}

TEST(NodeReportWire, RejectsBadSuppressPolicy) {
  EXPECT_NE(error_after([](Json& j) {
              j["suppress"]["policy"] = "magic";
            }).find("suppress.policy: unknown policy 'magic'"),
            std::string::npos);
}

TEST(NodeReportWire, MalformedTextIsAParseErrorNotACrash) {
  for (const char* text : {"", "{", "[]", "null", "{\"version\": 1", "42"}) {
    auto r = parse_node_report(text);
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().code, ErrorCode::kParse);
    EXPECT_NE(r.error().message.find("node report"), std::string::npos) << r.error().message;
  }
}

TEST(NodeReportWire, RejectsSequenceBeyondInt64) {
  EXPECT_NE(error_after([](Json& j) {
              j["sequence"] = 18446744073709551615ULL;
            }).find("sequence: out of range"),
            std::string::npos);
}

}  // namespace
}  // namespace gleaner::reporter
