#pragma once
// The live loop wired to the test API server as the composition root wires it: a cluster
// link for cluster c1 (nodes n1, n2, n3, no reports yet), its actions and node status
// carried out through the link, and the scheduling pass driven by the test.
#include <functional>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "scheduler/kube/cluster_link.h"
#include "test/kube/test_apiserver.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler::live_testing {

class KubeLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_ = kube::testing::TestApiServer::start();
    if (!api_) GTEST_SKIP() << "cannot start test/apiserver/apiserver.py with /usr/bin/python3";
    client_ = std::make_unique<kube::KubeClient>(api_->config(), system_clock_);
    for (const char* n : {"n1", "n2", "n3"}) {
      ASSERT_TRUE(
          client_
              ->create(kube::nodes_path(),
                       Json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", n}}}})
              .ok());
    }
    gang::GangOptions options;
    options.clusters = {"c1"};
    options.staleness = StalenessPolicy{3600, 7200};  // timeouts, not staleness, here
    auto live = gang::GangScheduler::create(options, {}, clock_, metrics_);
    ASSERT_TRUE(live.ok()) << live.error().message;
    live_ = std::move(*live);
    start_link();
  }
  // A new link to the API server (as at a scheduler's start: its informers list what is
  // there), after stopping the one running; returns once its informers have synced.
  void start_link() {
    if (link_) link_->stop();
    kube_glue::ClusterLinkOptions lo;
    lo.name = "c1";
    lo.config = api_->config();
    lo.resync = std::chrono::milliseconds(500);
    lo.watch_quota_tree = true;
    link_ =
        std::make_unique<kube_glue::ClusterLink>(lo, make_role_(), system_clock_, *live_, metrics_);
    live_->set_sinks([this](gang::Action a) { link_->enqueue(std::move(a)); },
                     [this](gang::NodeBatch b) { link_->publish(std::move(b)); });
    link_->start();
    ASSERT_TRUE(link_->wait_for_sync(std::chrono::seconds(10)));
  }
  void TearDown() override {
    if (link_) link_->stop();
    if (live_) live_->set_sinks(nullptr, nullptr);
  }

  Json get(const std::string& path) {
    auto r = client_->get(path);
    return r.ok() ? *r : Json();
  }
  std::string node_of(const std::string& pod) {
    return get(kube::pod_path("default", pod))["spec"].value("nodeName", "");
  }
  // Reports a node's batch room and waits (scheduling) until all of it is placeable.
  ::testing::AssertionResult report_room(const std::string& node, int64_t cpu_milli,
                                         int64_t memory_bytes) {
    if (live_->apply_report(node_report(node, 1, cpu_milli, memory_bytes, "c1")))
      return ::testing::AssertionFailure() << node << "'s report was refused (unknown cluster)";
    if (schedule_until(
            [&] { return batch_room_placeable(*live_, "c1", node, cpu_milli, memory_bytes); }))
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << node << " never placeable in full: " << live_->nodes_json().dump();
  }
  // The composition root's timer, driven by the test: one pass per check.
  bool schedule_until(const std::function<bool()>& done) {
    return kube::testing::eventually([&] {
      live_->tick();
      return done();
    });
  }

  // The role the next start_link() gives the cluster (a member's, unless a test plugs in
  // another).
  std::function<std::unique_ptr<kube_glue::ClusterRole>()> make_role_ = [] {
    return std::make_unique<kube_glue::MemberRole>();
  };
  SystemClock system_clock_;
  live_testing::JumpClock clock_;
  server::LiveMetrics metrics_;
  std::unique_ptr<kube::testing::TestApiServer> api_;
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<gang::GangScheduler> live_;
  std::unique_ptr<kube_glue::ClusterLink> link_;
};

}  // namespace gleaner::scheduler::live_testing
