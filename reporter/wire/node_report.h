#pragma once
// NodeReport: what the agent tells the scheduler about one node, once per sampling
// interval (docs/wire-format.md). The scheduler parses it with this same code, so the
// struct, its JSON form and its validation live together. Amounts are integers in base
// units (millicores, bytes) so nothing is lost in a round trip.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"

namespace gleaner::reporter {

inline constexpr int kNodeReportVersion = 1;

struct ResourceAmounts {
  int64_t cpu_millicores = 0;
  int64_t memory_bytes = 0;
  friend bool operator==(const ResourceAmounts&, const ResourceAmounts&) = default;
};

// Why a node offers no batch capacity right now.
enum class BatchUnavailableReason { kDisabled, kDegraded, kStale };
const char* to_string(BatchUnavailableReason reason);
Result<BatchUnavailableReason> parse_batch_unavailable_reason(std::string_view text);

struct UsageBreakdown {
  ResourceAmounts node;    // whole node
  ResourceAmounts system;  // outside any pod (kernel, kubelet, daemons)
  ResourceAmounts ls;      // latency-sensitive and other non-batch pods
  ResourceAmounts be;      // best-effort (batch) pods
  friend bool operator==(const UsageBreakdown&, const UsageBreakdown&) = default;
};

struct PodRef {
  std::string namespace_name;
  std::string name;
  std::string uid;
  friend bool operator==(const PodRef&, const PodRef&) = default;
};

struct BePodUsage {
  PodRef pod;
  ResourceAmounts usage;
  friend bool operator==(const BePodUsage&, const BePodUsage&) = default;
};

struct SuppressState {
  bool active = false;
  std::string policy;                   // "cpuset", "cfsQuota" or "none"
  int64_t be_cpu_limit_millicores = 0;  // CPU the BE tier may use now (0 when inactive)
  friend bool operator==(const SuppressState&, const SuppressState&) = default;
};

// Interference seen by one LS pod. Either signal may be unmeasured (no eBPF, no PSI).
struct LsPodInterference {
  PodRef pod;
  std::optional<int64_t> runqueue_latency_p99_us;
  std::optional<double> cpu_psi_some_avg10;  // percent, 0..100
  friend bool operator==(const LsPodInterference&, const LsPodInterference&) = default;
};

struct NodeReport {
  int version = kNodeReportVersion;
  std::string node;
  std::string cluster;
  uint64_t sequence = 0;  // strictly increasing within one agent process
  // The agent process (random, fixed for its life): a report of another epoch is a
  // restarted agent, whatever its sequence and clock say. Optional ("": an agent that
  // predates it; the scheduler then falls back to the sample time).
  std::string epoch;
  int64_t timestamp_unix_ms = 0;  // wall-clock time of the sample the report describes
  ResourceAmounts capacity;
  ResourceAmounts allocatable;
  // Exactly one of the two is set.
  std::optional<ResourceAmounts> batch_allocatable;
  std::optional<BatchUnavailableReason> batch_unavailable_reason;
  UsageBreakdown usage;
  std::vector<BePodUsage> be_pods;
  SuppressState suppress;
  std::vector<LsPodInterference> interference;
  friend bool operator==(const NodeReport&, const NodeReport&) = default;
};

Json to_json(const NodeReport& report);
std::string to_json_text(const NodeReport& report);
// Strict: unknown or missing fields, wrong types, negative amounts and an unsupported
// version are errors naming the field path ("usage.be.memoryBytes").
Result<NodeReport> node_report_from_json(const Json& json);
Result<NodeReport> parse_node_report(std::string_view text);

}  // namespace gleaner::reporter
