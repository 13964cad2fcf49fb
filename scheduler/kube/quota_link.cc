// ClusterLink's part in the quota tree and priorities: the ElasticQuotaTree watched live
// as the scheduler's quota tree, and PriorityClass values for SparkApplications.
#include <spdlog/spdlog.h>

#include "scheduler/admission/priority_class.h"
#include "scheduler/kube/cluster_link.h"
#include "scheduler/kube/elastic_quota_tree.h"

namespace gleaner::scheduler::kube_glue {

namespace {

std::string key_of(const Json& obj) {
  return string_at(obj, "metadata/namespace") + "/" + string_at(obj, "metadata/name");
}

}  // namespace

int32_t ClusterLink::priority_of_class(const std::string& name) const {
  if (name.empty()) return 0;
  auto obj = priority_classes_->get(name);
  if (!obj) return 0;
  auto parsed = admission::parse_priority_class(*obj);
  return parsed ? parsed->second.value : 0;
}

void ClusterLink::on_quota_trees() {
  const std::vector<Json> trees = quota_trees_->list();
  std::string version;
  for (const Json& t : trees)
    version += key_of(t) + "@" + string_at(t, "metadata/resourceVersion") + ";";
  if (version == quota_applied_version_ || version == quota_refused_version_) return;

  auto refuse = [&](const std::string& message) {
    quota_refused_version_ = version;
    metrics_.quota_tree_rejected();
    spdlog::warn("cluster {}: {}; the current quota tree stays", options_.name, message);
    for (const Json& t : trees) {
      kube::EventRecord e;
      e.namespace_ = string_at(t, "metadata/namespace");
      e.involved_object = Json{{"apiVersion", "scheduling.sigs.k8s.io/v1beta1"},
                               {"kind", "ElasticQuotaTree"},
                               {"namespace", e.namespace_},
                               {"name", string_at(t, "metadata/name")},
                               {"uid", string_at(t, "metadata/uid")}};
      e.type = "Warning";
      e.reason = "GleanerInvalidQuotaTree";
      e.message = message + "; the scheduler keeps the tree it had";
      e.component = options_.scheduler_name;
      if (Status s = client_.create_event(e); !s)
        spdlog::debug("cluster {}: event: {}", options_.name, s.error().message);
    }
  };
  if (trees.size() > 1) {
    std::string names;
    for (const Json& t : trees)
      names += (names.empty() ? "" : ", ") + key_of(t);
    return refuse("more than one ElasticQuotaTree (" + names + "); there must be one");
  }
  QuotaConfig config;
  if (!trees.empty()) {
    auto parsed = parse_elastic_quota_tree(trees.front());
    if (!parsed) return refuse(parsed.error().message);
    config = std::move(*parsed);
  }
  if (Status s = live_.set_quotas(config.queues, config.root_max, config.namespace_queue); !s)
    return refuse(s.error().message);
  quota_applied_version_ = version;
  quota_refused_version_.clear();
  for (const auto& w : config.warnings)
    spdlog::warn("{}", w);
  spdlog::info("cluster {}: quota tree {}: {} queue(s), {} namespace(s) mapped", options_.name,
               trees.empty() ? "removed" : key_of(trees.front()), config.queues.size(),
               config.namespace_queue.size());
}

}  // namespace gleaner::scheduler::kube_glue
