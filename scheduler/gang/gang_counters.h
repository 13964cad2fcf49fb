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
  // Gangs partly bound that the scheduler is still finishing (found so after a restart, or
  // a member's binding failing), and how long the oldest has been so.
  int64_t partial_gangs = 0;
  double oldest_partial_gang_seconds = 0;
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
  // A binding that failed, by cause: "server_error" (5xx), "throttled" (429), "timeout",
  // "conflict" (409), "not_found" (404), "other".
  virtual void bind_failed(const std::string& /*cause*/) {}
  // A job whose member's binding still failed after the retries: "requeued" (nothing of it
  // was bound: its room went back and it waits in its queue again).
  virtual void bind_given_up() {}
  // A gang found partly bound after a restart: "resumed" (finished around its bound pods)
  // or "released" (not finished within the reservation TTL: its bound pods deleted).
  virtual void gang_recovered(const std::string& /*outcome*/) {}
  virtual void event_emitted() {}
  // A pod whose reserved room is still held by pods deleted for it (preempted, still
  // terminating) waits to be bound: counted once per pod and reason.
  virtual void bind_waited_for_victims() {}
  // A report for a node no Node object names (with GangOptions::require_node_objects): the
  // node gets no batch room until its Node is seen.
  virtual void report_for_unknown_node() {}
  // A multi-cluster application not placed because its pods go to another scheduler.
  virtual void app_other_scheduler() {}
  // A pod placed elsewhere than the node the placement rules chose, because its job lost a
  // pod to an eviction there and that node's batch room has not come back and held.
  virtual void placement_steered_away() {}
};

}  // namespace gleaner::scheduler::gang
