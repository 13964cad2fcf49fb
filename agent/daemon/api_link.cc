#include "agent/daemon/api_link.h"

#include <utility>

#include <spdlog/spdlog.h>

namespace gleaner::agent {

ApiLink::ApiLink(kube::KubeConfig config, std::string node_name, const Clock* clock)
    : clock_(clock != nullptr ? *clock : system_clock_),
      config_(config),
      node_name_(std::move(node_name)),
      client_(std::make_unique<kube::KubeClient>(std::move(config), clock_)),
      worker_("api-link", &clock_) {
  kube::InformerOptions options;
  options.path = kube::nodes_path();
  options.field_selector = "metadata.name=" + node_name_;
  informer_ = std::make_unique<kube::Informer>(*client_, options, kube::InformerHandlers{});
  informer_->start();
  worker_.start();
}

Result<std::optional<Json>> ApiLink::fetch(const std::string& path) const {
  kube::KubeClient client(config_, clock_);
  return client.find(path);
}

ApiLink::~ApiLink() {
  worker_.stop(Worker::Pending::kDrop);  // the eviction under way ends first
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
  // A pod already waiting keeps its place and its first reason.
  worker_.post(
      pod_key, [this, pod_key, reason] { evict_now(pod_key, reason); }, Worker::IfWaiting::kDrop);
}

EvictionOutcome ApiLink::outcome() const {
  std::lock_guard lock(mu_);
  return outcome_;
}

std::vector<EvictionAnswer> ApiLink::take_answers() {
  std::lock_guard lock(mu_);
  return std::exchange(answers_, {});
}

void ApiLink::evict_now(const std::string& pod_key, const std::string& reason) {
  const auto slash = pod_key.find('/');
  const std::string ns = pod_key.substr(0, slash);
  const std::string name = pod_key.substr(slash + 1);
  auto status = client_->evict_pod(ns, name);
  std::lock_guard lock(mu_);
  // Already gone (404) meets the goal as well as an accepted eviction.
  answers_.push_back({pod_key, status.ok() || status.error().code == ErrorCode::kNotFound});
  if (status.ok()) {
    ++outcome_.evicted;
    spdlog::warn("evicted {} ({})", pod_key, reason);
    kube::EventRecord event;
    event.namespace_ = ns;
    event.type = "Warning";
    event.reason = "GleanerEvicted";
    event.message = "evicted by gleaner-agent on " + node_name_ + ": " + reason;
    event.host = node_name_;
    event.involved_object = {
        {"kind", "Pod"}, {"apiVersion", "v1"}, {"namespace", ns}, {"name", name}};
    if (auto e = client_->create_event(event); !e) {
      spdlog::debug("event for {}: {}", pod_key, e.error().message);
    }
  } else if (status.error().code == ErrorCode::kRetryLater) {
    ++outcome_.refused;  // a decision after the back-off asks again
    spdlog::info("eviction of {} refused for now: {}", pod_key, status.error().message);
  } else if (status.error().code == ErrorCode::kNotFound) {
    ++outcome_.evicted;  // already gone: the goal is met
  } else {
    ++outcome_.failed;
    spdlog::warn("eviction of {} failed: {}", pod_key, status.error().describe());
  }
}

}  // namespace gleaner::agent
