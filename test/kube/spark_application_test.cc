#include "kube/spark_application.h"

#include <gtest/gtest.h>

#include "common/json_util.h"
#include "test/support/bad_input.h"

namespace gleaner::kube {
namespace {

Json app(const char* spec) {
  return Json::parse(std::string(R"({"apiVersion":"sparkoperator.k8s.io/v1beta2",
    "kind":"SparkApplication","metadata":{"name":"pi","namespace":"spark","uid":"u1",
    "resourceVersion":"9"},"spec":)") +
                     spec + "}");
}

TEST(SparkMemory, ParsesJvmSizes) {
  EXPECT_EQ(parse_spark_memory_mib("512m").value_or(-1), 512);
  EXPECT_EQ(parse_spark_memory_mib("2g").value_or(-1), 2048);
  EXPECT_EQ(parse_spark_memory_mib("2G").value_or(-1), 2048);
  EXPECT_EQ(parse_spark_memory_mib("1536").value_or(-1), 1536);  // unitless is MiB
  EXPECT_EQ(parse_spark_memory_mib("1048576k").value_or(-1), 1024);
  EXPECT_EQ(parse_spark_memory_mib("1t").value_or(-1), 1024 * 1024);
  for (const char* bad : {"", "g", "1.5g", "-1g", "2Gi", "12 m"}) {
    EXPECT_FALSE(parse_spark_memory_mib(bad).ok()) << bad;
  }
}

TEST(SparkApplication, JvmOverheadIsTenPercentWithA384MiBFloor) {
  auto a = parse_spark_application(app(R"({"type":"Scala","mode":"cluster",
      "driver":{"cores":1,"coreLimit":"1200m","memory":"512m"},
      "executor":{"cores":2,"instances":3,"memory":"8g"}})"));
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->driver.cpu_request_milli, 1000);
  EXPECT_EQ(a->driver.cpu_limit_milli, 1200);
  EXPECT_EQ(a->executor.instances, 3);
  EXPECT_EQ(a->memory_overhead_mib(a->driver), 384);    // 51 MiB < floor
  EXPECT_EQ(a->memory_overhead_mib(a->executor), 819);  // int(0.1 * 8192)
  EXPECT_EQ(a->pod_memory_bytes(a->executor), (8192 + 819) * kMi);
}

TEST(SparkApplication, GpusPerPodAreReadAndOtherDevicesRefused) {
  auto a = parse_spark_application(app(R"({"type":"Python",
      "driver":{"cores":1,"memory":"1g"},
      "executor":{"cores":4,"instances":2,"memory":"8g",
                  "gpu":{"name":"nvidia.com/gpu","quantity":1}}})"));
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->driver.gpus, 0);
  EXPECT_EQ(a->executor.gpus, 1);
  auto amd = parse_spark_application(app(R"({"type":"Python",
      "executor":{"gpu":{"name":"amd.com/gpu","quantity":1}}})"));
  ASSERT_FALSE(amd.ok());
  EXPECT_NE(amd.error().message.find("spec.executor: gpu.name"), std::string::npos)
      << amd.error().message;
  auto half = parse_spark_application(app(R"({"type":"Python",
      "driver":{"gpu":{"name":"nvidia.com/gpu","quantity":0.5}}})"));
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.error().message.find("gpu.quantity"), std::string::npos);
}

TEST(SparkApplication, NonJvmOverheadIsFortyPercent) {
  auto a = parse_spark_application(app(R"({"type":"Python","executor":{"memory":"4g"}})"));
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_FALSE(a->jvm());
  EXPECT_EQ(a->memory_overhead_mib(a->executor), 1638);  // int(0.4 * 4096)
  EXPECT_EQ(a->executor.instances, 1);
  EXPECT_EQ(a->memory_overhead_mib(a->driver), 409);  // default 1g driver: int(0.4 * 1024)
}

TEST(SparkApplication, ExplicitOverheadAndFactorWin) {
  auto a = parse_spark_application(app(R"({"type":"Java",
      "sparkConf":{"spark.kubernetes.memoryOverheadFactor":"0.2"},
      "driver":{"memory":"4g","memoryOverhead":"1g","coreRequest":"500m"},
      "executor":{"memory":"10g"}})"));
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->memory_overhead_mib(a->driver), 1024);
  EXPECT_EQ(a->memory_overhead_mib(a->executor), 2048);
  EXPECT_EQ(a->driver.cpu_request_milli, 500);
}

TEST(SparkApplication, DynamicAllocationGangIsSparksInitialExecutors) {
  auto fixed = parse_spark_application(app(R"({"executor":{"instances":4}})"));
  ASSERT_TRUE(fixed.ok());
  EXPECT_FALSE(fixed->dynamic_allocation.enabled);
  EXPECT_EQ(fixed->gang_executors(), 4);

  auto spec = parse_spark_application(app(R"({"executor":{"instances":4},
      "dynamicAllocation":{"enabled":true,"initialExecutors":3,"minExecutors":1,"maxExecutors":10}})"));
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->dynamic_allocation.max_executors, 10);
  // Spark starts at max(minExecutors, initialExecutors, spark.executor.instances).
  EXPECT_EQ(spec->gang_executors(), 4);
  auto initial = parse_spark_application(app(R"({"executor":{"instances":1},
      "dynamicAllocation":{"enabled":true,"initialExecutors":3,"minExecutors":1}})"));
  ASSERT_TRUE(initial.ok());
  EXPECT_EQ(initial->gang_executors(), 3) << "initialExecutors, not instances";
  // No instances given: Spark sees none (not the operator-less default of 1); initial
  // defaults to min.
  auto min_only = parse_spark_application(
      app(R"({"dynamicAllocation":{"enabled":true,"minExecutors":2,"maxExecutors":10}})"));
  ASSERT_TRUE(min_only.ok());
  EXPECT_EQ(min_only->gang_executors(), 2);

  // Without minExecutors or instances Spark may start on the driver alone.
  auto conf = parse_spark_application(app(R"({
      "sparkConf":{"spark.dynamicAllocation.enabled":"true","spark.dynamicAllocation.maxExecutors":"8"}})"));
  ASSERT_TRUE(conf.ok()) << conf.error().message;
  EXPECT_EQ(conf->gang_executors(), 0);
  auto conf_instances = parse_spark_application(app(R"({
      "sparkConf":{"spark.dynamicAllocation.enabled":"true","spark.executor.instances":"5"}})"));
  ASSERT_TRUE(conf_instances.ok());
  EXPECT_EQ(conf_instances->gang_executors(), 5);
  // The spec wins over sparkConf, as the operator writes the spec's values last.
  auto both = parse_spark_application(app(R"({"dynamicAllocation":{"enabled":false},
      "sparkConf":{"spark.dynamicAllocation.enabled":"true"},"executor":{"instances":2}})"));
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->gang_executors(), 2);

  auto bad =
      parse_spark_application(app(R"({"dynamicAllocation":{"enabled":true,"minExecutors":-1}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("spec.dynamicAllocation.minExecutors"), std::string::npos);
  auto bad_conf = parse_spark_application(
      app(R"({"sparkConf":{"spark.dynamicAllocation.minExecutors":"two"}})"));
  ASSERT_FALSE(bad_conf.ok());
  EXPECT_NE(bad_conf.error().message.find("spark.dynamicAllocation.minExecutors"),
            std::string::npos);
}

TEST(SparkApplication, BadFieldsAreNamed) {
  gleaner::testing::expect_each_rejected(
      {
          {R"({"executor":{"memory":"lots"}})", "spec.executor"},
          {R"({"executor":{"memory":8}})", "memory must be a string"},
          {R"({"executor":{"instances":-1}})", "instances"},
          {R"({"driver":{"cores":"two"}})", "spec.driver.cores"},
          {R"({"sparkConf":{"spark.kubernetes.memoryOverheadFactor":"x"}})",
           "memoryOverheadFactor"},
      },
      [](const char* spec) { return parse_spark_application(app(spec)); });
  EXPECT_FALSE(parse_spark_application(Json::parse(R"({"metadata":{}})")).ok());
}

}  // namespace
}  // namespace gleaner::kube
