#pragma once
// A live scheduler managing one or more member clusters, each its own instance of the
// Python test API server (test/apiserver/) with a ClusterLink, wired like the composition
// root: actions and node values are routed to the link of the cluster they name. The
// test drives the scheduling timer itself (tick()).

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/kube/cluster_link.h"
#include "scheduler/kube/hub_role.h"
#include "test/kube/test_apiserver.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler::live_testing {

struct Member {
  std::unique_ptr<kube::testing::TestApiServer> api;
  std::unique_ptr<kube::KubeClient> client;
  std::unique_ptr<kube_glue::ClusterLink> link;

  Json get(const std::string& path) const {
    auto r = client->get(path);
    return r.ok() ? *r : Json();
  }
  bool create(const std::string& path, const Json& obj) const {
    return client->create(path, obj).ok();
  }
  bool add_node(const std::string& name, const Labels& labels = {}) const {
    Json meta{{"name", name}};
    if (!labels.empty()) meta["labels"] = labels;
    return create(kube::nodes_path(),
                  Json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", meta}});
  }
  std::string node_of(const std::string& pod) const {
    return get(kube::pod_path("default", pod))["spec"].value("nodeName", "");
  }
  // Whether an Event about `object` in namespace default has `reason` ("" = any) and a
  // message containing `text`.
  bool has_event(const std::string& object, const std::string& reason,
                 const std::string& text = "") const {
    for (const auto& [r, m] : events_about(object))
      if ((reason.empty() || r == reason) && m.find(text) != std::string::npos) return true;
    return false;
  }
  // The reasons and messages of Events about `object` in namespace default.
  std::vector<std::pair<std::string, std::string>> events_about(const std::string& object) const {
    std::vector<std::pair<std::string, std::string>> out;
    const Json events = get(kube::events_path("default"));
    if (!events.contains("items")) return out;
    for (const Json& e : events["items"])
      if (e["involvedObject"].value("name", "") == object)
        out.emplace_back(e.value("reason", ""), e.value("message", ""));
    return out;
  }
};

class MemberClusters : public ::testing::Test {
 protected:
  // Starts one test API server per name; false (and the test skips) without python3.
  bool start_servers(const std::vector<std::string>& names) {
    for (const auto& n : names) {
      Member m;
      m.api = kube::testing::TestApiServer::start();
      if (!m.api) return false;
      m.client = std::make_unique<kube::KubeClient>(m.api->config(), system_clock_);
      members_.emplace(n, std::move(m));
    }
    return true;
  }
  // The live scheduler and a link per member; call after creating the Nodes.
  void connect() {
    gang::GangOptions options;
    for (const auto& [n, m] : members_)
      options.clusters.push_back(n);
    options.staleness = StalenessPolicy{3600, 7200};
    options.policy.driver_start_timeout_seconds = driver_start_timeout_;
    options.app_retry_seconds = 0.2;
    auto live = gang::GangScheduler::create(options, {}, system_clock_, metrics_);
    ASSERT_TRUE(live.ok()) << live.error().message;
    live_ = std::move(*live);
    for (auto& [n, m] : members_) {
      kube_glue::ClusterLinkOptions lo;
      lo.name = n;
      lo.config = m.api->config();
      lo.resync = std::chrono::milliseconds(500);
      std::unique_ptr<kube_glue::ClusterRole> role = std::make_unique<kube_glue::MemberRole>();
      if (hubs_.contains(n)) {
        kube_glue::HubOptions hub;
        hub.policy_group = hub_policy_group_;
        for (const auto& [other, unused] : members_)
          if (!hubs_.contains(other)) hub.members.push_back(other);
        role = std::make_unique<kube_glue::HubRole>(std::move(hub));
      }
      m.link = std::make_unique<kube_glue::ClusterLink>(lo, std::move(role), system_clock_, *live_,
                                                        metrics_);
    }
    auto route = [this](gang::Action a) {
      auto it = members_.find(a.cluster);
      if (it == members_.end()) return;
      gang::Action seen = a;
      it->second.link->enqueue(std::move(a));
      std::lock_guard lock(routed_mu_);
      routed_.push_back(std::move(seen));
    };
    for (auto& [n, m] : members_)
      m.link->set_forward(route);
    live_->set_sinks(route, [this](gang::NodeBatch b) {
      if (auto it = members_.find(b.cluster); it != members_.end())
        it->second.link->publish(std::move(b));
    });
    for (auto& [n, m] : members_)
      m.link->start();
    for (auto& [n, m] : members_)
      ASSERT_TRUE(m.link->wait_for_sync(std::chrono::seconds(10)));
  }
  void TearDown() override {
    for (auto& [n, m] : members_)
      if (m.link) m.link->stop();
    if (live_) live_->set_sinks(nullptr, nullptr);
  }
  Member& member(const std::string& name) { return members_.at(name); }
  // Whether an action matching `match` has been queued on its cluster's link.
  bool routed(const std::function<bool(const gang::Action&)>& match) {
    std::lock_guard lock(routed_mu_);
    return std::any_of(routed_.begin(), routed_.end(), match);
  }
  // How many actions matching `match` have been queued on their cluster's link.
  size_t routed_count(const std::function<bool(const gang::Action&)>& match) {
    std::lock_guard lock(routed_mu_);
    return static_cast<size_t>(std::count_if(routed_.begin(), routed_.end(), match));
  }
  // Reports a node's batch room and waits (scheduling) until all of it is placeable.
  void report(const std::string& cluster, const std::string& node, int64_t milli) {
    const int64_t memory = int64_t{64} << 30;
    ASSERT_FALSE(live_->apply_report(node_report(node, ++sequence_, milli, memory, cluster)));
    ASSERT_TRUE(schedule_until([&] {
      return batch_room_placeable(*live_, cluster, node, milli, memory);
    })) << cluster
        << "/" << node << " never placeable in full: " << live_->nodes_json().dump();
  }
  // One scheduling pass per check, as the composition root's timer would run them.
  bool schedule_until(const std::function<bool()>& done) {
    return gleaner::testing::eventually([&] {
      live_->tick();
      return done();
    });
  }

  SystemClock system_clock_;
  server::LiveMetrics metrics_;
  std::map<std::string, Member> members_;
  std::set<std::string> hubs_;  // servers whose link is a fleet's hub (set before connect())
  std::string hub_policy_group_ = "policy.karmada.io";
  int64_t driver_start_timeout_ = 300;  // seconds (set before connect())
  std::unique_ptr<gang::GangScheduler> live_;
  uint64_t sequence_ = 0;
  std::mutex routed_mu_;
  std::vector<gang::Action> routed_;  // every action the router queued, in order
};

}  // namespace gleaner::scheduler::live_testing
