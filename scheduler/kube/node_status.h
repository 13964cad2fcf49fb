#pragma once
// When to write a node's batch resources onto its Node status, and the patch that does it.
// Publishing every report would turn thousands of agents into thousands of API writes per
// interval; like Koordinator's NodeResource controller, a new value is written only when
// it moved by more than resourceDiffThreshold (relative, either resource) or when the
// last write is older than updateTimeThresholdSeconds. Removal (disabled, degraded or
// stale node) is written at once: the keys are deleted, not zeroed, so nothing keeps
// scheduling against a stale figure and the node looks like one without colocation.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"
#include "kube/selectors.h"
#include "scheduler/core/resources.h"

namespace gleaner::scheduler::kube_glue {

struct PublishPolicy {
  double resource_diff_threshold = 0.1;
  int64_t update_time_threshold_seconds = 300;
};

// The policy per node from the ack-slo-config's colocation-config, as slo-controller reads
// it: the top-level updateTimeThresholdSeconds / resourceDiffThreshold over the scheduler's
// flags, and the first nodeConfigs[] entry whose nodeSelector matches a node's labels over
// that. Other fields are the agent's.
struct PublishPolicies {
  PublishPolicy cluster;
  std::vector<std::pair<kube::LabelSelector, PublishPolicy>> nodes;
  [[nodiscard]] PublishPolicy for_node(const Labels& labels) const;
};
// From the ConfigMap object (its data["colocation-config"]); a missing key gives `flags`.
// An error names the field; the caller keeps the policies it had.
Result<PublishPolicies> publish_policies(const Json& config_map, const PublishPolicy& flags);

// JSON merge patch for nodes/{name}/status: batch-cpu in millicores and batch-memory in
// bytes (integers) into capacity and allocatable, or null for both keys (removal).
Json batch_status_patch(const std::optional<Resources>& batch);

class NodeStatusDecider {
 public:
  explicit NodeStatusDecider(PublishPolicy policy) : policy_(policy) {}

  // Whether `desired` should be written now (under `policy`; the constructor's by default).
  [[nodiscard]] bool should_publish(const std::string& node,
                                    const std::optional<Resources>& desired, int64_t now_s) const;
  [[nodiscard]] bool should_publish(const std::string& node,
                                    const std::optional<Resources>& desired, int64_t now_s,
                                    const PublishPolicy& policy) const;
  // The write succeeded.
  void published(const std::string& node, const std::optional<Resources>& value, int64_t now_s);

 private:
  struct Last {
    std::optional<Resources> value;
    int64_t at = 0;
  };
  PublishPolicy policy_;
  std::map<std::string, Last> last_;
};

}  // namespace gleaner::scheduler::kube_glue
