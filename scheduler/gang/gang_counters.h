#pragma once
// What the gang layer counts as it goes, and the gauges it computes from its state. The
// live loop's Prometheus metrics (scheduler/server/live_metrics.h) implement the counters;
// the simulator counts nothing and passes the default, which ignores every call.

#include <cstdint>
#include <map>
#include <string>

namespace gleaner::scheduler::gang {

// Gauges computed from the scheduler's state when /metrics is scraped.
struct StateGauges {
  int64_t pending_jobs = 0;
  int64_t admitted_jobs = 0;
  int64_t running_jobs = 0;
  std::map<std::string, int64_t> nodes_by_health;  // fresh / stale / degraded
};

class GangCounters {
 public:
  virtual ~GangCounters() = default;
  // A node report applied, `lag_seconds` after the agent sent it.
  virtual void report_accepted(double /*lag_seconds*/) {}
  // A job admitted, `latency_seconds` after its first pod (or its application) was seen.
  virtual void admitted(double /*latency_seconds*/) {}
  virtual void preempted() {}
  virtual void rescheduled() {}
  // The core took job `job` back (preempted or rescheduled) for `reason`, as the core said
  // it ("driver not running within 120s", ...).
  virtual void reclaimed(uint32_t /*job*/, const std::string& /*reason*/) {}
  // A bind the API server answered, successfully or not.
  virtual void bind_result(bool /*ok*/) {}
  virtual void event_emitted() {}
};

}  // namespace gleaner::scheduler::gang
