// A cluster link's node status publishing: the batch resources the gang layer decides for
// each node, patched into the Node's status by the link's worker as a latest-wins job
// behind the actions (a pending pod waits on a bind; a node value may lag a little), each
// patch only when the ack-slo-config's thresholds say the value moved enough or aged
// (node_status.h), and the once-a-second tick that retries deferred actions and sweeps.
#include <spdlog/spdlog.h>

#include "scheduler/kube/cluster_link.h"

namespace gleaner::scheduler::kube_glue {

void ClusterLink::publish(const gang::NodeBatch& batch) {
  {
    std::lock_guard lock(mu_);
    desired_[batch.node] = batch.batch;  // latest wins
    changed_.insert(batch.node);
  }
  publish_soon();
}

void ClusterLink::publish_soon() {
  worker_.post_latest("publish", [this] {
    if (std::exchange(sweep_due_, false)) check_api();
    publish_due();
  });
}

void ClusterLink::tick() {
  requeue_due();  // busy or not
  sweep_due_ = true;
  publish_soon();  // binds first: a pending pod waits on them; node values may lag a little
}

void ClusterLink::on_slo_config(const Json* config_map) {
  auto parsed = config_map != nullptr
                    ? publish_policies(*config_map, options_.publish)
                    : Result<PublishPolicies>(PublishPolicies{options_.publish, {}});
  if (!parsed) {
    spdlog::warn("cluster {}: ConfigMap {}: {}; keeping the publish thresholds in force",
                 options_.name, options_.slo_config, parsed.error().message);
    return;
  }
  std::lock_guard lock(mu_);
  policies_ = std::move(*parsed);
}

PublishPolicy ClusterLink::publish_policy(const std::string& node) {
  Labels labels;
  if (auto raw = nodes_->get(node)) {
    if (const Json* l = find_path(*raw, "metadata/labels"); l != nullptr && l->is_object()) {
      for (auto it = l->begin(); it != l->end(); ++it) {
        if (it->is_string()) labels[it.key()] = it->get<std::string>();
      }
    }
  }
  std::lock_guard lock(mu_);
  return policies_.for_node(labels);
}

void ClusterLink::publish_due() {
  std::map<std::string, std::optional<Resources>> desired;
  {
    std::lock_guard lock(mu_);
    desired = desired_;
    changed_.clear();
  }
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(clock_.wall_now().time_since_epoch())
          .count();
  for (auto it = desired.begin(); it != desired.end(); ++it) {
    const auto& [node, value] = *it;
    if (!decider_.should_publish(node, value, now, publish_policy(node))) continue;
    {
      // Binds go first even in the middle of a sweep (a sweep of many nodes would
      // otherwise hold pending pods back by one API round trip per node): the rest of
      // the sweep is marked changed and resumes after the queued actions.
      std::lock_guard lock(mu_);
      if (worker_.ordered_waiting()) {
        for (auto rest = it; rest != desired.end(); ++rest)
          changed_.insert(rest->first);
        publish_soon();
        return;
      }
    }
    auto r = client_.patch(kube::node_status_path(node), batch_status_patch(value),
                           kube::PatchType::kMerge);
    metrics_.node_status_patch(r.ok());
    const bool answered = r.ok() || r.error().code != ErrorCode::kUnavailable;
    note_api(answered, answered ? "" : r.error().message);
    if (r.ok() || r.error().code == ErrorCode::kNotFound) {
      // A Node the API does not have (yet) is tried again on the next change or after
      // updateTimeThresholdSeconds, not on every sweep.
      decider_.published(node, value, now);
    }
    if (!r.ok() && answered) {
      spdlog::warn("cluster {}: patch node {} status: {}", options_.name, node, r.error().message);
    } else if (!r.ok()) {
      // Said once, as the member's unavailability, not at every sweep.
      spdlog::debug("cluster {}: patch node {} status: {}", options_.name, node, r.error().message);
      return;  // the rest would fail alike
    }
  }
}

}  // namespace gleaner::scheduler::kube_glue
