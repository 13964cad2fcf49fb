#include "common/json_util.h"

#include <limits>

#include <gtest/gtest.h>

namespace gleaner {
namespace {

TEST(JsonUtil, MalformedAndHugeNumbersAreErrorsNamingTheSource) {
  auto truncated = parse_json("{\"a\": ", "config/x");
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().message.find("config/x"), std::string::npos);
  auto huge = parse_json("{\"a\": 35E111111}", "report");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("report"), std::string::npos);
}

TEST(JsonUtil, QuantitiesFromStringsAndNumbers) {
  EXPECT_EQ(quantity_from_json(Json("500m"), "x")->milli_value(), 500);
  EXPECT_EQ(quantity_from_json(Json(4), "x")->milli_value(), 4000);
  EXPECT_EQ(quantity_from_json(Json(0.5), "x")->milli_value(), 500);
  // Whole units past int64 / 1000 would wrap as milli-units: refused, naming the source.
  EXPECT_FALSE(quantity_from_json(Json(int64_t{1} << 60), "x").ok());
  EXPECT_FALSE(quantity_from_json(Json(std::numeric_limits<int64_t>::min()), "x").ok());
  EXPECT_FALSE(quantity_from_json(Json(uint64_t{1} << 63), "x").ok());
  EXPECT_EQ(quantity_from_json(Json(int64_t{9000000000000000}), "x")->value(), 9000000000000000);
  auto bad = quantity_from_json(Json::array(), "nodes[0].batch.cpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("nodes[0].batch.cpu"), std::string::npos);
}

}  // namespace
}  // namespace gleaner
