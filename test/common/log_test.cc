// --log-format json: every line one JSON object, whatever the message holds.
#include "common/log.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "common/json_util.h"

namespace gleaner {
namespace {

TEST(Logging, JsonFormatWritesOneValidObjectPerLine) {
  ASSERT_TRUE(init_logging("info", "json").ok());
  ::testing::internal::CaptureStderr();
  spdlog::warn("pod \"a\\b\" on {} \x01 caf\xc3\xa9 \xff", "n1");
  spdlog::default_logger()->flush();
  const std::string line = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(init_logging("info", "text").ok());
  ASSERT_FALSE(line.empty());
  auto doc = parse_json(line, "log line");
  ASSERT_TRUE(doc.ok()) << line;
  EXPECT_EQ((*doc)["level"], "warning");
  const std::string msg = (*doc)["msg"];
  EXPECT_EQ(msg.rfind("pod \"a\\b\" on n1 \x01 caf", 0), 0u) << msg;
  EXPECT_TRUE(doc->contains("time"));
}

TEST(Logging, UnknownFormatIsAnError) {
  auto r = init_logging("info", "xml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("expected text or json"), std::string::npos);
}

}  // namespace
}  // namespace gleaner
