#include "kube/objects.h"

#include <gtest/gtest.h>

#include "common/json_util.h"

namespace gleaner::kube {
namespace {

Json pod_json() {
  return Json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "api-0", "namespace": "web", "uid": "u-1",
                 "labels": {"app": "api"}, "annotations": {"a": "b"}},
    "spec": {"nodeName": "node-1", "priority": 9000, "priorityClassName": "koord-prod",
             "schedulerName": "koord-scheduler",
             "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "3"}}}],
             "containers": [
               {"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "1Gi",
                                                          "kubernetes.io/batch-cpu": "1000"},
                                             "limits": {"cpu": "1", "memory": "2Gi"}}},
               {"name": "side", "resources": {"limits": {"cpu": "250m", "memory": "64Mi"}}}],
             "overhead": {"cpu": "100m"}},
    "status": {"phase": "Running", "qosClass": "Burstable",
               "containerStatuses": [{"name": "app", "containerID": "containerd://abc"}]}
  })");
}

TEST(KubeObjects, ParsesPodFields) {
  auto pod = parse_pod(pod_json());
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->key(), "web/api-0");
  EXPECT_EQ(pod->metadata.uid, "u-1");
  EXPECT_EQ(pod->metadata.labels.at("app"), "api");
  EXPECT_EQ(pod->metadata.annotations.at("a"), "b");
  EXPECT_EQ(pod->node_name, "node-1");
  ASSERT_TRUE(pod->priority.has_value());
  EXPECT_EQ(*pod->priority, 9000);
  EXPECT_EQ(pod->priority_class_name, "koord-prod");
  EXPECT_EQ(pod->scheduler_name, "koord-scheduler");
  ASSERT_EQ(pod->containers.size(), 2u);
  EXPECT_EQ(pod->containers[0].resources.requests.at("kubernetes.io/batch-cpu").value(), 1000);
  EXPECT_EQ(pod->containers[0].resources.limits.at("memory").value(), 2147483648);
  EXPECT_EQ(pod->phase, "Running");
  EXPECT_EQ(pod->qos_class, "Burstable");
  ASSERT_EQ(pod->container_statuses.size(), 1u);
  EXPECT_EQ(pod->container_statuses[0].container_id, "containerd://abc");
  ASSERT_NE(pod->raw, nullptr);
  EXPECT_EQ((*pod->raw)["kind"], "Pod");
}

TEST(KubeObjects, PodRequestUsesInitMaxDefaultsToLimitAndAddsOverhead) {
  auto pod = parse_pod(pod_json());
  ASSERT_TRUE(pod.ok());
  // containers 500m + 250m (limit as request) = 750m < init 3000m; + 100m overhead.
  EXPECT_EQ(pod_request(*pod, "cpu").milli_value(), 3100);
  EXPECT_EQ(pod_request(*pod, "memory").value(), 1073741824 + 67108864);
  auto limit = pod_limit(*pod, "cpu");
  ASSERT_TRUE(limit.has_value());
  EXPECT_EQ(limit->milli_value(), 1250);
  EXPECT_FALSE(pod_limit(*pod, "kubernetes.io/batch-cpu").has_value());
}

TEST(KubeObjects, WrongTypeNamesObjectAndField) {
  Json j = pod_json();
  j["spec"]["priority"] = "high";
  auto pod = parse_pod(j);
  ASSERT_FALSE(pod.ok());
  EXPECT_NE(pod.error().message.find("pod web/api-0"), std::string::npos) << pod.error().message;
  EXPECT_NE(pod.error().message.find("spec.priority"), std::string::npos);

  j = pod_json();
  j["spec"]["containers"][1]["resources"]["limits"]["memory"] = "lots";
  pod = parse_pod(j);
  ASSERT_FALSE(pod.ok());
  EXPECT_NE(pod.error().message.find("spec.containers[1].resources.limits.memory"),
            std::string::npos)
      << pod.error().message;

  j = pod_json();
  j["metadata"]["labels"]["app"] = 3;
  pod = parse_pod(j);
  ASSERT_FALSE(pod.ok());
  EXPECT_NE(pod.error().message.find("metadata.labels.app"), std::string::npos);
}

TEST(KubeObjects, ParsesNode) {
  auto node = parse_node(Json::parse(R"({"metadata": {"name": "n1", "labels": {"k": "v"}},
      "status": {"capacity": {"cpu": "32", "memory": "128Gi"},
                 "allocatable": {"cpu": "31", "memory": "124Gi"}}})"));
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ(node->metadata.name, "n1");
  EXPECT_EQ(node->capacity.at("cpu").milli_value(), 32000);
  EXPECT_EQ(node->allocatable.at("memory").value(), 124LL << 30);

  auto bad = parse_node(Json::parse(R"({"metadata": {"name": "n1"},
      "status": {"capacity": {"cpu": true}}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("node n1"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("status.capacity.cpu"), std::string::npos);
}

TEST(KubeObjects, ParsesPodListAndArray) {
  Json list = {{"kind", "PodList"}, {"items", Json::array({pod_json(), pod_json()})}};
  auto pods = parse_pod_list(list);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  EXPECT_EQ(pods->size(), 2u);
  auto arr = parse_pod_list(Json::array({pod_json()}));
  ASSERT_TRUE(arr.ok());
  EXPECT_EQ(arr->size(), 1u);

  Json bad_item = Json::array({pod_json(), 7});
  auto bad = parse_pod_list(bad_item);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("item 1"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(parse_pod_list(Json("pods")).ok());
  EXPECT_FALSE(parse_pod_list(Json::object({{"kind", "PodList"}})).ok());
}

}  // namespace
}  // namespace gleaner::kube
