// RFC 3339 as the Kubernetes API writes metav1.Time and metav1.MicroTime: UTC whatever the
// process's time zone, whole seconds or six fraction digits.
#include "common/time_format.h"

#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace gleaner {
namespace {

using std::chrono::microseconds;
using std::chrono::seconds;

WallTime at(microseconds since_epoch) {
  return WallTime(std::chrono::duration_cast<WallTime::duration>(since_epoch));
}

// Sets TZ for one test and puts the old value back.
class TimeZone {
 public:
  explicit TimeZone(const char* zone) {
    // Tests run on one thread; nothing reads the environment meanwhile.
    if (const char* old = std::getenv("TZ")) old_ = old;  // NOLINT(concurrency-mt-unsafe)
    ::setenv("TZ", zone, 1);                              // NOLINT(concurrency-mt-unsafe)
    ::tzset();
  }
  ~TimeZone() {
    if (old_) {
      ::setenv("TZ", old_->c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
    } else {
      ::unsetenv("TZ");  // NOLINT(concurrency-mt-unsafe)
    }
    ::tzset();
  }
  TimeZone(const TimeZone&) = delete;
  TimeZone& operator=(const TimeZone&) = delete;

 private:
  std::optional<std::string> old_;
};

TEST(Rfc3339, WholeSecondsInUtc) {
  EXPECT_EQ(rfc3339(at(seconds(0))), "1970-01-01T00:00:00Z");
  EXPECT_EQ(rfc3339(at(seconds(1700000000))), "2023-11-14T22:13:20Z");
  // The fraction is cut, not rounded: 59.999999 s is still in the same second.
  EXPECT_EQ(rfc3339(at(seconds(1700000039) + microseconds(999999))), "2023-11-14T22:13:59Z");
}

TEST(Rfc3339, MicrosecondsKeepSixDigits) {
  EXPECT_EQ(rfc3339_micro(at(seconds(1700000000))), "2023-11-14T22:13:20.000000Z");
  EXPECT_EQ(rfc3339_micro(at(seconds(1700000000) + microseconds(42))),
            "2023-11-14T22:13:20.000042Z");
  EXPECT_EQ(rfc3339_micro(at(seconds(1700000000) + microseconds(999999))),
            "2023-11-14T22:13:20.999999Z");
}

TEST(Rfc3339, UtcWhateverTheProcesssTimeZone) {
  TimeZone tokyo("Asia/Tokyo");
  EXPECT_EQ(rfc3339(at(seconds(1700000000))), "2023-11-14T22:13:20Z");
  EXPECT_EQ(rfc3339_micro(at(seconds(1700000000) + microseconds(5))),
            "2023-11-14T22:13:20.000005Z");
}

}  // namespace
}  // namespace gleaner
