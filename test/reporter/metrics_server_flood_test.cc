// The agent's metrics port under a flood of idle connections (any pod can reach it): more
// idle connections than the cap must not keep kubelet's probes or a scrape out.
#include <chrono>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "net/http_listener.h"
#include "reporter/metrics/metrics_server.h"
#include "test/reporter/http_get.h"
#include "test/support/eventually.h"
#include "test/support/io_thread.h"
#include "test/support/net.h"

namespace gleaner::reporter {
namespace {
using namespace std::chrono_literals;
using testing::http_get;

TEST(MetricsServerFlood, ProbesAndScrapesAnswerPastTheCapOfIdleConnections) {
  gleaner::testing::IoThread io;
  auto server = MetricsServer::create(io.io(), "127.0.0.1:0", [](std::string_view, auto target) {
    return net::HttpReply{200, "text/plain", std::string(target) + "\n"};
  });
  ASSERT_TRUE(server) << server.error().message;
  const size_t cap = (*server)->listener_stats().max_connections;
  std::vector<int> idle;
  for (size_t i = 0; i < cap + 10; ++i) {
    const int fd = gleaner::testing::connect_loopback((*server)->port());
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  // Every slot is held by a silent connection (the kernel's backlog holds the rest).
  ASSERT_TRUE(gleaner::testing::eventually(
      [&] { return (*server)->listener_stats().open_connections >= cap; }, 10s));
  // A probe still gets in well within its timeout (the silent ones held slots for 30 s).
  const auto started = std::chrono::steady_clock::now();
  auto health = http_get((*server)->port(), "/healthz");
  ASSERT_TRUE(health) << "no answer to /healthz with " << idle.size() << " idle connections";
  EXPECT_EQ(health->status, 200);
  auto scrape = http_get((*server)->port(), "/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_EQ(scrape->body, "/metrics\n");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 8s);
  const auto stats = (*server)->listener_stats();
  EXPECT_GE(stats.capacity_reached, 1u);
  EXPECT_GE(stats.idle_closed, 2u);
  EXPECT_LE(stats.open_connections, cap);
  for (int fd : idle)
    ::close(fd);
  (*server)->stop();
  io.drain();
}

}  // namespace
}  // namespace gleaner::reporter
