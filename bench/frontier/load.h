#pragma once
// The frontier benchmark's load generator: open loop and free of coordinated omission.
// Each of a few connections sends on its own fixed schedule (the rate split evenly, phases
// staggered); a response's latency counts from its request's scheduled send time, so a
// stalled service is not hidden by a client that waited for it. Connections are
// synchronous (one request in flight each): a late response delays the next send, whose
// latency then includes that delay. The generator's threads run SCHED_FIFO when allowed:
// on a node the clients of an LS service are elsewhere, and a generator at normal
// priority would measure its own wake-up delays as the service's.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/frontier/protocols.h"

namespace gleaner::bench::frontier {

struct LoadResult {
  std::vector<double> latencies_ms;
  int64_t sent = 0;
  int64_t scheduled = 0;  // requests the schedule asked for within the duration
  int64_t failed = 0;     // error replies, protocol violations, broken connections
  // Requests that went out more than a period after their scheduled time: the generator
  // (or the service) could not keep up with the rate.
  int64_t late = 0;
};

struct LoadOptions {
  double rate = 1000;  // requests per second, all connections together
  std::chrono::milliseconds duration{5000};
  int connections = 8;
  bool fifo = true;  // SCHED_FIFO threads (needs root or CAP_SYS_NICE)
  uint64_t seed = 1;
  // Load steps: the rate alternates every 2 s between a quarter of `rate` (first) and
  // `rate`, the steps in which an agent has to take CPU back from BE quickly.
  bool steps = false;
  // Set (by a signal handler) to end the run early.
  const std::atomic<bool>* stop = nullptr;
};

// Drives `protocol` on 127.0.0.1:`port`. Throws std::runtime_error when it cannot connect
// or SCHED_FIFO is refused.
LoadResult generate(const Protocol& protocol, uint16_t port, const LoadOptions& options);

// Fills the service's key space (memcached, Redis): the protocol's preload requests,
// pipelined in batches on one connection. Throws when a reply is an error.
void preload(const Protocol& protocol, uint16_t port);

}  // namespace gleaner::bench::frontier
