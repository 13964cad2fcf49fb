#include "agent/states/pod_classes.h"

#include <gtest/gtest.h>

#include "common/json_util.h"
#include "kube/well_known.h"

namespace gleaner::agent::states {
namespace {

kube::Pod make_pod(const char* json) {
  auto pod = kube::parse_pod(Json::parse(json));
  EXPECT_TRUE(pod.ok()) << (pod.ok() ? "" : pod.error().message);
  return pod.ok() ? *pod : kube::Pod{};
}

constexpr const char* kGuaranteed = R"({"metadata": {"name": "g", "namespace": "d"},
  "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}})";
constexpr const char* kBurstable = R"({"metadata": {"name": "b", "namespace": "d"},
  "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}})";
constexpr const char* kBestEffort = R"({"metadata": {"name": "e", "namespace": "d"},
  "spec": {"containers": [{"name": "c"}]}})";

TEST(PodClasses, ComputesKubeQoSWhenStatusIsAbsent) {
  EXPECT_EQ(kube_qos(make_pod(kGuaranteed)), cgroup::KubeQos::kGuaranteed);
  EXPECT_EQ(kube_qos(make_pod(kBurstable)), cgroup::KubeQos::kBurstable);
  EXPECT_EQ(kube_qos(make_pod(kBestEffort)), cgroup::KubeQos::kBestEffort);
  // Requests below limits: Burstable even though both resources are limited.
  auto pod = make_pod(R"({"metadata": {"name": "x", "namespace": "d"}, "spec": {"containers": [
      {"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                  "limits": {"cpu": "1", "memory": "1Gi"}}}]}})");
  EXPECT_EQ(compute_kube_qos(pod), cgroup::KubeQos::kBurstable);
}

TEST(PodClasses, StatusQoSClassWinsOverComputation) {
  auto pod = make_pod(kBestEffort);
  pod.qos_class = "Guaranteed";
  EXPECT_EQ(kube_qos(pod), cgroup::KubeQos::kGuaranteed);
}

TEST(PodClasses, KoordinatorQoSFromLabelElseKubeQoS) {
  EXPECT_EQ(qos_class(make_pod(kGuaranteed)), QoSClass::kLSR);
  EXPECT_EQ(qos_class(make_pod(kBurstable)), QoSClass::kLS);
  EXPECT_EQ(qos_class(make_pod(kBestEffort)), QoSClass::kBE);
  for (auto [label, want] : {std::pair{"LSE", QoSClass::kLSE},
                             {"LSR", QoSClass::kLSR},
                             {"LS", QoSClass::kLS},
                             {"BE", QoSClass::kBE},
                             {"SYSTEM", QoSClass::kSystem}}) {
    auto pod = make_pod(kBestEffort);
    pod.metadata.labels[kube::kQosClassLabel] = label;
    EXPECT_EQ(qos_class(pod), want) << label;
  }
  auto pod = make_pod(kGuaranteed);
  pod.metadata.labels[kube::kQosClassLabel] = "GOLD";  // unknown: falls back to kube QoS
  EXPECT_EQ(qos_class(pod), QoSClass::kLSR);
}

TEST(PodClasses, PriorityClassPrecedence) {
  auto pod = make_pod(kBurstable);
  EXPECT_EQ(priority_class(pod), PriorityClass::kProd);                     // from QoS LS
  EXPECT_EQ(priority_class(make_pod(kBestEffort)), PriorityClass::kBatch);  // from QoS BE

  for (auto [value, want] : {std::pair{9000, PriorityClass::kProd},
                             {9999, PriorityClass::kProd},
                             {7500, PriorityClass::kMid},
                             {5000, PriorityClass::kBatch},
                             {3999, PriorityClass::kFree}}) {
    pod.priority = value;
    EXPECT_EQ(priority_class(pod), want) << value;
  }
  pod.priority = 8500;  // outside every range: back to the QoS default
  EXPECT_EQ(priority_class(pod), PriorityClass::kProd);
  pod.priority = 5500;
  pod.metadata.labels[kube::kPriorityClassLabel] = "koord-free";
  EXPECT_EQ(priority_class(pod), PriorityClass::kFree);  // label beats spec.priority

  auto unresolved = make_pod(kBurstable);
  unresolved.priority_class_name = "koord-batch";  // no spec.priority at all
  EXPECT_EQ(priority_class(unresolved), PriorityClass::kBatch);
}

TEST(PodClasses, BatchResourcesAreMillicoresAndBytes) {
  auto pod = make_pod(R"({"metadata": {"name": "s", "namespace": "spark"}, "spec": {"containers": [
      {"name": "a", "resources": {"requests": {"kubernetes.io/batch-cpu": "1500",
                                               "kubernetes.io/batch-memory": "2Gi"},
                                  "limits": {"kubernetes.io/batch-cpu": "2k"}}},
      {"name": "b", "resources": {"requests": {"kubernetes.io/batch-cpu": 500},
                                  "limits": {"kubernetes.io/batch-cpu": "500"}}}]}})");
  BatchResources b = batch_resources(pod);
  EXPECT_EQ(b.cpu_request_milli, 2000);
  EXPECT_EQ(b.memory_request_bytes, 2147483648);
  ASSERT_TRUE(b.cpu_limit_milli.has_value());
  EXPECT_EQ(*b.cpu_limit_milli, 2500);
  EXPECT_FALSE(b.memory_limit_bytes.has_value());
}

}  // namespace
}  // namespace gleaner::agent::states
