#include "common/json_util.h"

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
  auto bad = quantity_from_json(Json::array(), "nodes[0].batch.cpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("nodes[0].batch.cpu"), std::string::npos);
}

}  // namespace
}  // namespace gleaner
