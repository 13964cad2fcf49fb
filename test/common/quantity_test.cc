#include "common/quantity.h"

#include <gtest/gtest.h>

namespace gleaner {
namespace {

int64_t milli(const char* text) {
  auto q = Quantity::parse(text);
  EXPECT_TRUE(q.ok()) << text << ": " << (q.ok() ? "" : q.error().message);
  return q.ok() ? q->milli_value() : -1;
}

TEST(Quantity, ParsesDecimalSuffixes) {
  EXPECT_EQ(milli("500m"), 500);
  EXPECT_EQ(milli("2"), 2000);
  EXPECT_EQ(milli("1.5"), 1500);
  EXPECT_EQ(milli("2k"), 2000000);
  EXPECT_EQ(milli("1M"), 1000000000);
  EXPECT_EQ(Quantity::parse("3G")->value(), 3000000000);
  EXPECT_EQ(Quantity::parse("1T")->value(), 1000000000000);
  EXPECT_EQ(Quantity::parse("2P")->value(), 2000000000000000);
}

TEST(Quantity, ParsesBinarySuffixes) {
  EXPECT_EQ(Quantity::parse("1Ki")->value(), 1024);
  EXPECT_EQ(Quantity::parse("8Gi")->value(), 8589934592);
  EXPECT_EQ(Quantity::parse("70Gi")->value(), 75161927680);
  EXPECT_EQ(Quantity::parse("1Ti")->value(), 1099511627776);
  EXPECT_EQ(Quantity::parse("1.5Gi")->value(), 1610612736);
  EXPECT_EQ(Quantity::parse("128974848")->value(), 128974848);
}

TEST(Quantity, ParsesExponents) {
  EXPECT_EQ(Quantity::parse("1e3")->value(), 1000);
  EXPECT_EQ(Quantity::parse("1E3")->value(), 1000);
  EXPECT_EQ(Quantity::parse("12e-1")->milli_value(), 1200);
  EXPECT_EQ(Quantity::parse("0.001E")->value(), 1000000000000000);  // bare E is exa
}

TEST(Quantity, RoundsUpBelowOneMilli) {
  EXPECT_EQ(milli("100n"), 1);
  EXPECT_EQ(milli("1u"), 1);
  EXPECT_EQ(milli("0.0001"), 1);
  EXPECT_EQ(Quantity::parse("0.5")->value(), 1);
  EXPECT_EQ(Quantity::parse("100m")->value(), 1);
}

TEST(Quantity, SignsAndZeros) {
  EXPECT_EQ(milli("0"), 0);
  EXPECT_EQ(milli("-1"), -1000);
  EXPECT_EQ(milli("+250m"), 250);
  EXPECT_EQ(milli("0.050"), 50);
  EXPECT_EQ(milli(".5"), 500);
}

TEST(Quantity, RejectsMalformedText) {
  for (const char* text : {"", "abc", "1x", "1KiB", "m", "1e", "1e1000", "1..2", "--1", "1 ", " 1",
                           "1Mi1", "0x10", "99999999999999999999999999999999999"}) {
    auto q = Quantity::parse(text);
    EXPECT_FALSE(q.ok()) << "accepted \"" << text << "\"";
    if (!q.ok()) {
      EXPECT_NE(q.error().message.find("invalid quantity"), std::string::npos);
    }
  }
}

TEST(Quantity, TinyValuesRoundUpWithoutOverflow) {
  EXPECT_EQ(milli("9.5e-42"), 1);
  EXPECT_EQ(milli("1e-40"), 1);
}

TEST(Quantity, RejectsOverflow) {
  EXPECT_FALSE(Quantity::parse("10E").ok());
  EXPECT_FALSE(Quantity::parse("9Ei").ok());
  // Rounding the fraction up carries past the largest milli value (found by fuzz_quantity).
  EXPECT_FALSE(Quantity::parse("9223372036854775807.5m").ok());
  EXPECT_FALSE(Quantity::parse("-9223372036854775807.5m").ok());
  EXPECT_FALSE(Quantity::parse("9223372036854775808m").ok());
  EXPECT_FALSE(Quantity::parse("-9223372036854775808.m").ok());
  EXPECT_EQ(Quantity::parse("9223372036854775807m")->milli_value(), INT64_MAX);
}

TEST(Quantity, CanonicalText) {
  EXPECT_EQ(Quantity::parse("1500m")->to_string(), "1500m");
  EXPECT_EQ(Quantity::parse("2000m")->to_string(), "2");
  EXPECT_EQ(Quantity::parse("1Ki")->to_string(), "1024");
}

}  // namespace
}  // namespace gleaner
