#include "agent/daemon/warn_book.h"

#include <chrono>
#include <functional>
#include <string>

#include <gtest/gtest.h>

namespace gleaner::agent {
namespace {

using namespace std::chrono_literals;

uint64_t hash_of(const std::string& value) {
  return std::hash<std::string>{}(value);
}

// Issue #61: every distinct bad annotation value was kept whole for warn-once (+286 KB per
// 256 KiB value, the agent OOM-killed after 336). The book keeps two hashes and a time per
// pod, at most `capacity` pods, and logs a pod at most once per interval.
TEST(WarnBook, ManyDistinctLargeValuesKeepTheBookBoundedAndLogEachPodOnce) {
  WarnBook book(64, 10min);
  const SteadyTime t0{};
  const std::string big(256 * 1024, 'x');
  int logged = 0;
  for (int pod = 0; pod < 100; ++pod) {
    for (int value = 0; value < 5; ++value) {
      const std::string v = big + std::to_string(value);
      if (book.should_log("ns/pod-" + std::to_string(pod), hash_of(v), t0 + 1s * value)) ++logged;
    }
  }
  EXPECT_EQ(logged, 100);  // one line per pod, its first value
  EXPECT_EQ(book.size(), 64u);
  EXPECT_LE(WarnBook::kEntryBytes, 32u);  // nothing of the value or the name is kept
}

TEST(WarnBook, APodLogsAgainForANewValueOnlyAfterTheInterval) {
  WarnBook book(8, 10min);
  const SteadyTime t0{};
  EXPECT_TRUE(book.should_log("ns/a", hash_of("soon"), t0));
  EXPECT_FALSE(book.should_log("ns/a", hash_of("soon"), t0 + 1h));     // same value: once
  EXPECT_FALSE(book.should_log("ns/a", hash_of("later"), t0 + 5min));  // once per interval...
  EXPECT_TRUE(book.should_log("ns/a", hash_of("later"), t0 + 1h));
  EXPECT_TRUE(book.should_log("ns/b", hash_of("soon"), t0 + 1h));  // ...per pod
  EXPECT_FALSE(book.should_log("ns/b", hash_of("never"), t0 + 1h + 9min));
  EXPECT_TRUE(book.should_log("ns/b", hash_of("never"), t0 + 1h + 10min));
  EXPECT_FALSE(book.should_log("ns/b", hash_of("never"), t0 + 3h));
}

TEST(WarnBook, TheOldestPodMakesRoom) {
  WarnBook book(2, 10min);
  const SteadyTime t0{};
  EXPECT_TRUE(book.should_log("ns/a", 1, t0));
  EXPECT_TRUE(book.should_log("ns/b", 1, t0));
  EXPECT_TRUE(book.should_log("ns/c", 1, t0));  // a leaves the book
  EXPECT_EQ(book.size(), 2u);
  EXPECT_FALSE(book.should_log("ns/c", 1, t0));
  EXPECT_TRUE(book.should_log("ns/a", 1, t0));  // forgotten, so logged again
}

}  // namespace
}  // namespace gleaner::agent
