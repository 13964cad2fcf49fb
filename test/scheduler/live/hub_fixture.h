#pragma once
// A fleet's hub (test API server "hub", no nodes) and two members a and b, with the
// policies and hub objects the hub tests use; Karmada mode's stand-ins for Karmada's
// detector (the ResourceBinding) and execution controller (the copy in a member).

#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "test/scheduler/live/multi_cluster_fixture.h"

namespace gleaner::scheduler::live_testing {

// An application as a user submits it to the hub: no label, no spec.suspend.
inline Json hub_app(const std::string& name) {
  Json app = multi_cluster_app(name, /*suspend=*/false);
  app["metadata"].erase("labels");
  app["spec"].erase("suspend");
  return app;
}

// A PropagationPolicy (namespace default) or ClusterPropagationPolicy selecting every
// SparkApplication, with the seeds' placement: clusterNames when given.
inline Json policy(const std::string& group, bool cluster_scoped,
                   std::vector<std::string> clusters) {
  Json placement = Json::object();
  if (!clusters.empty()) placement["clusterAffinity"] = {{"clusterNames", clusters}};
  placement["replicaScheduling"] = {{"replicaSchedulingType", "Divided"}};
  Json meta{{"name", "sparkapp-policy"}};
  if (!cluster_scoped) meta["namespace"] = "default";
  return Json{{"apiVersion", group + "/v1alpha1"},
              {"kind", cluster_scoped ? "ClusterPropagationPolicy" : "PropagationPolicy"},
              {"metadata", meta},
              {"spec",
               {{"resourceSelectors",
                 {{{"apiVersion", "sparkoperator.k8s.io/v1beta2"}, {"kind", "SparkApplication"}}}},
                {"placement", placement}}}};
}

inline std::string policies_path(const std::string& group, bool cluster_scoped) {
  return "/apis/" + group + "/v1alpha1/" +
         (cluster_scoped ? std::string("clusterpropagationpolicies")
                         : std::string("namespaces/default/propagationpolicies"));
}

class HubLiveTest : public CopyLifecycleTest {
 protected:
  void SetUp() override {
    if (!start_servers({"hub", "a", "b"})) GTEST_SKIP() << "cannot start test/apiserver";
    ASSERT_TRUE(member("a").add_node("a1"));
    ASSERT_TRUE(member("b").add_node("b1"));
    hubs_ = {"hub"};
    hub_policy_group_ = group();
    driver_start_timeout_ = driver_start_timeout();
    connect();
    // a is the better fit (less left over): only a policy keeps the job out of it.
    report("a", "a1", 4000);
    report("b", "b1", 8000);
  }
  virtual std::string group() const { return "policy.karmada.io"; }
  virtual int64_t driver_start_timeout() const { return 300; }
  // A policy `policy_name` for application "other" alone, and "other" placed into a: once
  // it is, the hub link has seen every application created before it.
  void place_other_by_name(const std::string& policy_name) {
    Json by_name = policy(group(), false, {});
    by_name["metadata"]["name"] = policy_name;
    by_name["spec"]["resourceSelectors"][0]["name"] = "other";
    ASSERT_TRUE(member("hub").create(policies_path(group(), false), by_name));
    ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("other")));
    ASSERT_TRUE(schedule_until([&] { return app("a", "other").contains("spec"); }));
  }
  // Both members have room for cpu and memory (8 cores, 32 GiB allocatable); only b1 has
  // GPUs (`b_gpus`).
  void give_gpus(int b_gpus) {
    for (const auto& [m, node, gpus] : {std::tuple{"a", "a1", 0}, std::tuple{"b", "b1", b_gpus}}) {
      Json allocatable{{"cpu", "8"}, {"memory", "32Gi"}};
      if (gpus > 0) allocatable["nvidia.com/gpu"] = std::to_string(gpus);
      ASSERT_TRUE(member(m)
                      .client
                      ->patch(kube::node_status_path(node),
                              Json{{"status", {{"allocatable", allocatable}}}},
                              kube::PatchType::kMerge)
                      .ok());
    }
  }
  bool placement_sent(const std::string& name) {
    return routed([&](const gang::Action& a) {
      return a.kind == gang::ActionKind::kPlaceApp && a.name == name;
    });
  }
  std::string hub_state(const std::string& name) {
    const Json obj = app("hub", name);
    const Json* state = obj.is_object() ? find_path(obj, "status/applicationState/state") : nullptr;
    return state != nullptr && state->is_string() ? state->get<std::string>() : "";
  }
};

// ACK One Fleet's API group for the same objects (the seeds' policy).
class AckHubLiveTest : public HubLiveTest {
 protected:
  std::string group() const override { return "policy.one.alibabacloud.com"; }
};

// A driver that cannot start in its member within the timeout (an LS surge there leaves it
// pending): the application is reclaimed from that member and runs in another.
class HubReclaimLiveTest : public HubLiveTest {
 protected:
  int64_t driver_start_timeout() const override { return 1; }
};

// Karmada mode: a policy naming gleaner-scheduler. The test plays Karmada's controllers:
// the detector's ResourceBinding, the execution controller's copy in the member the binding
// names.
class KarmadaHubLiveTest : public HubReclaimLiveTest {
 protected:
  static inline const std::string kBindings =
      "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings";
  // What Karmada's detector creates for a template the policy governs.
  void detect(const std::string& name) {
    const Json hub_obj = app("hub", name);
    Json binding{{"apiVersion", "work.karmada.io/v1alpha2"},
                 {"kind", "ResourceBinding"},
                 {"metadata", {{"name", name + "-sparkapplication"}, {"namespace", "default"}}},
                 {"spec",
                  {{"resource",
                    {{"apiVersion", "sparkoperator.k8s.io/v1beta2"},
                     {"kind", "SparkApplication"},
                     {"namespace", "default"},
                     {"name", name},
                     {"uid", hub_obj["metadata"]["uid"]},
                     {"resourceVersion", hub_obj["metadata"]["resourceVersion"]}}},
                   {"schedulerName", "gleaner-scheduler"},
                   {"placement", {{"clusterAffinity", {{"clusterNames", {"a", "b"}}}}}}}}};
    ASSERT_TRUE(member("hub").create(kBindings, binding));
  }
  std::vector<std::string> bound_clusters(const std::string& name) {
    std::vector<std::string> out;
    const Json b = member("hub").get(kBindings + "/" + name + "-sparkapplication");
    if (const Json* c = b.is_object() ? find_path(b, "spec/clusters") : nullptr;
        c != nullptr && c->is_array())
      for (const Json& t : *c)
        out.push_back(t.value("name", ""));
    return out;
  }
  // The status `kubectl get resourcebinding` shows once the schedule is written: condition
  // Scheduled=True for the binding's generation.
  bool scheduled_status(const std::string& name) {
    const Json binding = member("hub").get(kBindings + "/" + name + "-sparkapplication");
    const Json* conditions = find_path(binding, "status/conditions");
    const Json* observed = find_path(binding, "status/schedulerObservedGeneration");
    return conditions != nullptr && conditions->is_array() && conditions->size() == 1 &&
           (*conditions)[0].value("type", "") == "Scheduled" &&
           (*conditions)[0].value("status", "") == "True" && observed != nullptr &&
           *observed == binding["metadata"]["generation"];
  }
  // What Karmada's execution controller creates in a member the binding names: the hub
  // object's metadata (labels, annotations) and spec.
  void propagate(const std::string& member_name, const std::string& name) {
    const Json hub_obj = app("hub", name);
    Json copy{{"apiVersion", "sparkoperator.k8s.io/v1beta2"},
              {"kind", "SparkApplication"},
              {"metadata",
               {{"name", name},
                {"namespace", "default"},
                {"labels", hub_obj["metadata"].value("labels", Json::object())},
                {"annotations", hub_obj["metadata"]["annotations"]}}},
              {"spec", hub_obj["spec"]}};
    copy["metadata"]["labels"]["karmada.io/managed"] = "true";
    ASSERT_TRUE(member(member_name).create(kube::spark_applications_path("default"), copy));
  }
};

// Karmada mode where no driver start is waited for: the placement stays in its member
// however long the test takes.
class KarmadaPatientHubLiveTest : public KarmadaHubLiveTest {
 protected:
  int64_t driver_start_timeout() const override { return 300; }
};

}  // namespace gleaner::scheduler::live_testing
