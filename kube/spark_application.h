#pragma once
// The fields of a SparkApplication (sparkoperator.k8s.io/v1beta2) the scheduler needs to
// size its driver and executor pods, with Spark's own memory rules: memory strings are
// JVM sizes ("512m", "2g": binary units, MiB when unitless), and each pod asks for
// memory + overhead, overhead = memoryOverhead if given, else
// max(memory * factor, 384 MiB) with factor 0.1 for JVM jobs and 0.4 for Python/R, unless
// spark.kubernetes.memoryOverheadFactor (or spec.memoryOverheadFactor) says otherwise.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/json_fwd.h"
#include "common/quantity.h"
#include "common/result.h"

namespace gleaner::kube {

inline constexpr int64_t kMinMemoryOverheadMiB = 384;

struct SparkRole {
  int64_t cpu_request_milli = 1000;        // coreRequest, else cores (default 1)
  std::optional<int64_t> cpu_limit_milli;  // coreLimit
  int64_t memory_mib = 1024;               // memory (Spark's default 1g)
  std::optional<int64_t> memory_overhead_mib;
  int32_t instances = 1;
  // gpu: {name, quantity}: whole nvidia.com/gpu devices per pod (the operator sets them as
  // the container's limit; kubelet admits them against the node's allocatable).
  int64_t gpus = 0;
};

// spec.dynamicAllocation (the operator passes it to Spark as spark.dynamicAllocation.*;
// sparkConf keys count when the spec does not say).
struct DynamicAllocation {
  bool enabled = false;
  int32_t min_executors = 0;  // Spark's default
  std::optional<int32_t> initial_executors;
  std::optional<int32_t> max_executors;
  // spark.executor.instances as Spark sees it (spec.executor.instances, else sparkConf's);
  // nullopt: unset (SparkRole::instances then holds the default of 1, which Spark does not).
  std::optional<int32_t> executor_instances;
};

struct SparkApplication {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::map<std::string, std::string> labels;
  std::string type;  // Java | Scala | Python | R
  SparkRole driver;
  SparkRole executor;
  std::map<std::string, std::string> spark_conf;
  std::optional<double> overhead_factor;  // spec.memoryOverheadFactor / sparkConf
  DynamicAllocation dynamic_allocation;
  std::string state;                // status.applicationState.state ("" = new)
  std::shared_ptr<const Json> raw;  // the object as read (shared); null for one built in code

  [[nodiscard]] bool jvm() const { return type != "Python" && type != "R"; }
  // The executors the gang is admitted with: spec.executor.instances, or under dynamic
  // allocation the executors Spark asks for at its start, max(minExecutors,
  // initialExecutors, spark.executor.instances); executors above it (Spark scaling up)
  // take free batch room as they come, and give it back when Spark lets them go.
  [[nodiscard]] int32_t gang_executors() const;
  [[nodiscard]] double memory_overhead_factor() const;
  [[nodiscard]] int64_t memory_overhead_mib(const SparkRole& role) const;
  // What one pod of the role requests: memory + overhead, in bytes.
  [[nodiscard]] int64_t pod_memory_bytes(const SparkRole& role) const;
};

// A JVM memory string ("512m", "2g", "1024k", "3t", "1536"): MiB, truncated like Spark's
// byteStringAsMb. Anything else is a kParse error.
Result<int64_t> parse_spark_memory_mib(std::string_view text);

Result<SparkApplication> parse_spark_application(const Json& json);

}  // namespace gleaner::kube
