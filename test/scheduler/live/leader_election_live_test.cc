// Leader election against the test API server when the API server holds the leader's Lease
// renewal: the leader must stop leading at its renew deadline, before the standby may take
// the Lease, however long the request is held.
#include <atomic>
#include <chrono>
#include <cstdio>

#include <gtest/gtest.h>

#include "common/clock.h"
#include "scheduler/kube/leader_election.h"
#include "test/kube/test_apiserver.h"

namespace gleaner::scheduler::kube_glue {
namespace {

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

LeaderElectionOptions options(const std::string& identity) {
  LeaderElectionOptions o;
  o.identity = identity;
  o.lease_duration = milliseconds(2000);
  o.renew_deadline = milliseconds(1500);
  o.retry_period = milliseconds(200);
  return o;
}

// One replica's elector and when its callbacks ran (steady nanoseconds; 0: not yet).
struct Replica {
  Replica(kube::KubeClient& client, const std::string& identity, const Clock& clock)
      : elector(client, options(identity), clock) {
    elector.start([this] { started_ns = Steady::now().time_since_epoch().count(); },
                  [this] { lost_ns = Steady::now().time_since_epoch().count(); });
  }
  LeaderElector elector;
  std::atomic<int64_t> started_ns{0};
  std::atomic<int64_t> lost_ns{0};
};

TEST(LeaderElectionLive, AHeldRenewalStopsTheLeaderBeforeTheStandbyTakesOver) {
  auto server = kube::testing::TestApiServer::start();
  if (!server) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py with /usr/bin/python3";
  SystemClock clock;
  kube::KubeClient client_a(server->config(), clock);
  kube::KubeClient client_b(server->config(), clock);
  Replica a(client_a, "a", clock);
  ASSERT_TRUE(kube::testing::eventually([&] { return a.elector.leading(); }));
  Replica b(client_b, "b", clock);
  // The standby has looked at the Lease (it is waiting out the lease duration).
  const std::string lease =
      "/apis/coordination.k8s.io/v1/namespaces/gleaner-system/leases/gleaner-scheduler";
  ASSERT_TRUE(
      kube::testing::eventually([&] { return server->count_requests("GET", lease, false) >= 4; },
                                milliseconds(5000), milliseconds(20)));
  EXPECT_FALSE(b.elector.leading());

  // The next Lease write (the leader's renewal) is held 3 s: longer than the lease.
  server->admin("stall", "count=1&seconds=3&method=PUT&prefix=" + lease);
  bool both = false;
  const bool taken_over = kube::testing::eventually(
      [&] {
        both = both || (a.elector.leading() && b.elector.leading());
        return b.started_ns.load() != 0;
      },
      milliseconds(15000));
  server->admin("release");
  ASSERT_TRUE(taken_over) << "the standby never led";
  ASSERT_NE(a.lost_ns.load(), 0) << "the old leader never stopped";
  EXPECT_FALSE(both) << "both replicas led at once";
  const double margin_s = static_cast<double>(b.started_ns.load() - a.lost_ns.load()) / 1e9;
  EXPECT_GT(margin_s, 0) << "the old leader stopped " << -margin_s
                         << " s after the standby took over";
  std::printf(
      "old leader stopped %.2f s before the standby led (lease 2 s, renew deadline 1.5 s)\n",
      margin_s);
  b.elector.stop();
}

}  // namespace
}  // namespace gleaner::scheduler::kube_glue
