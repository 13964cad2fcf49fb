#include "kube/watch_event.h"

#include <gtest/gtest.h>

#include "test/support/bad_input.h"

namespace gleaner::kube {
namespace {

TEST(WatchEvent, DecodesEachType) {
  auto added = decode_watch_event(
      R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"7"}}})");
  ASSERT_TRUE(added.ok()) << added.error().message;
  EXPECT_EQ(added->type, WatchEventType::kAdded);
  EXPECT_EQ(added->resource_version, "7");
  EXPECT_EQ(added->object["metadata"]["name"], "a");

  auto bookmark = decode_watch_event(
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12"}}})");
  ASSERT_TRUE(bookmark.ok());
  EXPECT_EQ(bookmark->type, WatchEventType::kBookmark);
  EXPECT_EQ(bookmark->resource_version, "12");

  auto gone = decode_watch_event(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})");
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->type, WatchEventType::kError);
  EXPECT_EQ(gone->status_code(), 410);
}

TEST(WatchEvent, RejectsMalformedEventsWithClearErrors) {
  gleaner::testing::expect_each_rejected(
      {
          {R"({"type":"ADDED","object":)", "watch event"},
          {R"([1,2])", "expected an object"},
          {R"({"object":{}})", "\"type\""},
          {R"({"type":"RENAMED","object":{}})", "unknown event type"},
          {R"({"type":"ADDED"})", "without an object"},
          {R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})", "resourceVersion"},
          {R"({"type":"MODIFIED","object":{"metadata":{"resourceVersion":"3"}}})", "metadata.name"},
          {R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":5}}})",
           "resourceVersion"},
          // A number beyond double range: nlohmann throws out_of_range, not parse_error.
          {R"({"type":"ADDED","object":{"spec":{"x":35E1111111}}})", "number overflow"},
      },
      [](const char* line) { return decode_watch_event(line); }, ErrorCode::kParse);
}

TEST(LineBuffer, SplitsLinesAcrossArbitraryChunks) {
  LineBuffer buf(1024);
  ASSERT_TRUE(buf.append("{\"a\":1}\n{\"b\"").ok());
  EXPECT_EQ(buf.next_line(), "{\"a\":1}");
  EXPECT_EQ(buf.next_line(), std::nullopt);
  EXPECT_EQ(buf.pending(), 4u);
  ASSERT_TRUE(buf.append(":2}\r\n\n{\"c\":3}\n").ok());
  EXPECT_EQ(buf.next_line(), "{\"b\":2}");
  EXPECT_EQ(buf.next_line(), "{\"c\":3}");
  EXPECT_EQ(buf.next_line(), std::nullopt);
  EXPECT_EQ(buf.pending(), 0u);
}

TEST(LineBuffer, CapsOneEventInsteadOfGrowingForever) {
  LineBuffer buf(16);
  ASSERT_TRUE(buf.append("0123456789").ok());
  auto st = buf.append("0123456789");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("larger than 16 bytes"), std::string::npos);
  LineBuffer ok(16);
  EXPECT_TRUE(ok.append("short\nline\n0123456789").ok());
}

}  // namespace
}  // namespace gleaner::kube
