#include "agent/daemon/api_link.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

namespace gleaner::agent {

ApiLink::ApiLink(kube::KubeConfig config, std::string node_name)
    : config_(config),
      node_name_(std::move(node_name)),
      client_(std::make_unique<kube::KubeClient>(std::move(config), clock_)) {
  kube::InformerOptions options;
  options.path = kube::nodes_path();
  options.field_selector = "metadata.name=" + node_name_;
  informer_ = std::make_unique<kube::Informer>(*client_, options, kube::InformerHandlers{});
  informer_->start();
  worker_ = std::jthread([this](const std::stop_token& stop) { worker(stop); });
}

Result<std::optional<Json>> ApiLink::fetch(const std::string& path) const {
  kube::KubeClient client(config_, clock_);
  return client.find(path);
}

ApiLink::~ApiLink() {
  worker_.request_stop();
  cv_.notify_all();
  informer_->stop();
}

std::optional<kube::Node> ApiLink::node() const {
  auto raw = informer_->get(node_name_);
  if (!raw) return std::nullopt;
  auto node = kube::parse_node(*raw);
  if (!node) {
    spdlog::warn("Node {} from the API server: {}", node_name_, node.error().message);
    return std::nullopt;
  }
  return std::move(*node);
}

bool ApiLink::wait_for_node(std::chrono::milliseconds timeout) {
  return informer_->wait_for_sync(timeout) && node().has_value();
}

void ApiLink::evict(const std::string& pod_key, const std::string& reason, bool dry_run) {
  if (dry_run) {
    spdlog::warn("dry-run: would evict {} ({})", pod_key, reason);
    return;
  }
  std::lock_guard lock(mu_);
  bool queued = std::any_of(queue_.begin(), queue_.end(),
                            [&](const auto& item) { return item.first == pod_key; });
  if (!queued) queue_.emplace_back(pod_key, reason);
  cv_.notify_one();
}

EvictionOutcome ApiLink::outcome() const {
  std::lock_guard lock(mu_);
  return outcome_;
}

std::vector<EvictionAnswer> ApiLink::take_answers() {
  std::lock_guard lock(mu_);
  return std::exchange(answers_, {});
}

void ApiLink::worker(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    std::pair<std::string, std::string> item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, stop, [&] { return !queue_.empty(); });
      if (stop.stop_requested()) return;
      item = queue_.front();
      queue_.pop_front();
    }
    const auto slash = item.first.find('/');
    const std::string ns = item.first.substr(0, slash);
    const std::string name = item.first.substr(slash + 1);
    auto status = client_->evict_pod(ns, name);
    std::lock_guard lock(mu_);
    // Already gone (404) meets the goal as well as an accepted eviction.
    answers_.push_back({item.first, status.ok() || status.error().code == ErrorCode::kNotFound});
    if (status.ok()) {
      ++outcome_.evicted;
      spdlog::warn("evicted {} ({})", item.first, item.second);
      kube::EventRecord event;
      event.namespace_ = ns;
      event.type = "Warning";
      event.reason = "GleanerEvicted";
      event.message = "evicted by gleaner-agent on " + node_name_ + ": " + item.second;
      event.host = node_name_;
      event.involved_object = {
          {"kind", "Pod"}, {"apiVersion", "v1"}, {"namespace", ns}, {"name", name}};
      if (auto e = client_->create_event(event); !e) {
        spdlog::debug("event for {}: {}", item.first, e.error().message);
      }
    } else if (status.error().code == ErrorCode::kRetryLater) {
      ++outcome_.refused;  // a decision after the back-off asks again
      spdlog::info("eviction of {} refused for now: {}", item.first, status.error().message);
    } else if (status.error().code == ErrorCode::kNotFound) {
      ++outcome_.evicted;  // already gone: the goal is met
    } else {
      ++outcome_.failed;
      spdlog::warn("eviction of {} failed: {}", item.first, status.error().describe());
    }
  }
}

}  // namespace gleaner::agent
