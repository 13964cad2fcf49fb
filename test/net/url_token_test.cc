#include <cstdio>

#include <gtest/gtest.h>

#include "net/token_source.h"
#include "net/url.h"
#include "test/support/temp_tree.h"

namespace gleaner::net {
namespace {

TEST(HttpUrl, ParsesSchemesPortsAndPaths) {
  auto a = parse_http_url("http://sched.gleaner:8080/v1/reports");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_FALSE(a->tls());
  EXPECT_EQ(a->host, "sched.gleaner");
  EXPECT_EQ(a->port, 8080);
  EXPECT_EQ(a->target, "/v1/reports");
  EXPECT_EQ(a->host_header(), "sched.gleaner:8080");
  EXPECT_EQ(a->origin(), "http://sched.gleaner:8080");

  auto b = parse_http_url("https://sched");
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->tls());
  EXPECT_EQ(b->port, 443);
  EXPECT_EQ(b->target, "/");
  EXPECT_EQ(b->host_header(), "sched");

  auto c = parse_http_url("https://[::1]:6443");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->host_header(), "[::1]:6443");
  EXPECT_EQ(c->origin(), "https://[::1]:6443");

  auto d = parse_http_url("http://h?x=1");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->target, "/?x=1");
}

TEST(HttpUrl, RejectsBadUrlsNamingThemAndWhatTheyAre) {
  for (const char* bad : {"ftp://x", "http://", "http://h:0", "http://h:99999", "http://u@h/",
                          "sched:80", "http://h:8a/", "https://[::1"}) {
    auto r = parse_http_url(bad, "scheduler URL");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.rfind("scheduler URL '", 0), 0u) << r.error().message;
  }
}

TEST(TokenSource, ReadsTrimsAndReReadsWhenTheFileIsReplaced) {
  gleaner::testing::TempDir dir;
  dir.write("token", "  first-token\n");
  TokenSource source("", dir / "token");
  auto t1 = source.get();
  ASSERT_TRUE(t1) << t1.error().message;
  EXPECT_EQ(*t1, "first-token");
  dir.write("token.new", "second-token-rotated\n");
  ASSERT_EQ(::rename((dir / "token.new").c_str(), (dir / "token").c_str()), 0);  // like kubelet
  EXPECT_EQ(source.get().value_or(""), "second-token-rotated");
}

TEST(TokenSource, InvalidateReadsTheFileAgain) {
  gleaner::testing::TempDir dir;
  dir.write("token", "aaaa\n");
  TokenSource source("", dir / "token");
  ASSERT_EQ(source.get().value_or(""), "aaaa");
  // Same size, and possibly the same mtime tick: only invalidate() makes it read again.
  dir.write("token", "bbbb\n");
  source.invalidate();
  EXPECT_EQ(source.get().value_or(""), "bbbb");
}

TEST(TokenSource, MissingOrEmptyFileIsAnError) {
  gleaner::testing::TempDir dir;
  TokenSource missing("", dir / "nope");
  EXPECT_FALSE(missing.get());
  dir.write("empty", " \n");
  TokenSource empty("", dir / "empty");
  auto r = empty.get();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("empty"), std::string::npos);
}

TEST(TokenSource, AFixedTokenOrNone) {
  EXPECT_EQ(TokenSource("fixed", "").get().value_or("x"), "fixed");
  EXPECT_EQ(TokenSource("", "").get().value_or("x"), "");
}

}  // namespace
}  // namespace gleaner::net
