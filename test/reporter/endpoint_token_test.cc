#include <gtest/gtest.h>

#include "reporter/client/endpoint.h"
#include "reporter/client/token_source.h"
#include "test/support/temp_tree.h"

namespace gleaner::reporter {
namespace {

TEST(HttpEndpoint, ParsesSchemesPortsAndPaths) {
  auto a = parse_http_url("http://sched.gleaner:8080/v1/reports");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_FALSE(a->tls);
  EXPECT_EQ(a->host, "sched.gleaner");
  EXPECT_EQ(a->port, "8080");
  EXPECT_EQ(a->target, "/v1/reports");
  EXPECT_EQ(a->host_header(), "sched.gleaner:8080");

  auto b = parse_http_url("https://sched");
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->tls);
  EXPECT_EQ(b->port, "443");
  EXPECT_EQ(b->target, "/");
  EXPECT_EQ(b->host_header(), "sched");

  auto c = parse_http_url("http://[::1]:9000/r");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->host_header(), "[::1]:9000");
}

TEST(HttpEndpoint, RejectsBadUrlsNamingThem) {
  for (const char* bad : {"ftp://x", "http://", "http://h:0", "http://h:99999", "http://u@h/",
                          "sched:80", "http://h:8a/"}) {
    auto r = parse_http_url(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
}

TEST(TokenSource, ReadsTrimsAndReReadsWhenTheFileChanges) {
  gleaner::testing::TempDir dir;
  dir.write("token", "  first-token\n");
  TokenSource source(dir / "token");
  auto t1 = source.current();
  ASSERT_TRUE(t1) << t1.error().message;
  EXPECT_EQ(*t1, "first-token");
  // A longer token changes the size, so the change is seen even within one mtime tick.
  dir.write("token", "second-token-rotated\n");
  auto t2 = source.current();
  ASSERT_TRUE(t2);
  EXPECT_EQ(*t2, "second-token-rotated");
}

TEST(TokenSource, MissingOrEmptyFileIsAnError) {
  gleaner::testing::TempDir dir;
  TokenSource missing(dir / "nope");
  EXPECT_FALSE(missing.current());
  dir.write("empty", " \n");
  TokenSource empty(dir / "empty");
  auto r = empty.current();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("empty"), std::string::npos);
}

TEST(TokenSource, NoPathMeansNoToken) {
  TokenSource none("");
  auto r = none.current();
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "");
}

}  // namespace
}  // namespace gleaner::reporter
