#pragma once
// The entry point the daemon calls: the table of strategies (strategy_table.h) in order on
// every full pass (run), and the fast-path ones on the fast path (fast). The engine holds
// the strategies, and with them their memory, and the slow-changing node facts the fast
// path needs; each strategy's decision is a pure function of the pass and its memory. The
// caller applies the plan through the executors and the Eviction API.

#include <memory>
#include <optional>
#include <vector>

#include "agent/qos/cpu_suppress.h"
#include "agent/qos/qos_types.h"
#include "agent/qos/strategy.h"

namespace gleaner::agent::qos {

// The few figures the fast path samples.
struct SuppressSample {
  int64_t node_cpu_milli = 0;
  int64_t non_be_cpu_milli = 0;
  bool stale = false;
  bool suppress_armed = true;  // as QosInputs::suppress_armed
};

class QosEngine {
 public:
  QosEngine();
  ~QosEngine();
  QosEngine(QosEngine&&) noexcept;
  QosEngine& operator=(QosEngine&&) noexcept;

  // What a full pass over `in` reads: the cgroup knobs of kubepods, its QoS directories and
  // every pod and container, and what each enabled strategy declares.
  [[nodiscard]] KnobReads full_reads(const QosInputs& in) const;
  // Every enabled strategy on `knobs` (read for full_reads), in the table's order.
  Plan run(const QosInputs& in, const KnobSnapshot& knobs);
  // As above, reading the pass's knobs through in.reader first.
  Plan run(const QosInputs& in);
  // The fast-path strategies, from a fresh sample, the node facts and inputs of the last
  // run() and `knobs` (read for fast_reads()). Empty until run() has been called with CPU
  // measured.
  [[nodiscard]] Plan suppress_only(const SuppressSample& sample, const KnobSnapshot& knobs) const;
  // As above, reading fast_reads() through `reader` first.
  Plan suppress_only(const SuppressSample& sample, QosReader& reader) const;
  // What the fast path reads (nothing before the first run()).
  [[nodiscard]] KnobReads fast_reads() const;
  // The system usage the fast path counts for `sample`: what the node uses beyond non-BE
  // pods, at most the last run()'s figure.
  [[nodiscard]] int64_t fast_system_usage(const SuppressSample& sample) const;

  // The strategies' memory in the record form (see Strategy::save), and back. load_memory
  // changes nothing when any strategy rejects its part.
  [[nodiscard]] Json save_memory(double now_s) const;
  Status load_memory(const Json& agent, const std::string& where, double now_s);
  // The API server's answer to an eviction a run() planned.
  void eviction_answered(const std::string& pod, bool accepted, double now_s);
  // The node facts of the last run() (nullopt before it), for filters applied after it.
  [[nodiscard]] const std::optional<NodeFacts>& last_node_facts() const { return node_facts_; }
  [[nodiscard]] const config::ResourceThresholdStrategy& threshold() const {
    return last_inputs_.threshold;
  }

 private:
  [[nodiscard]] Pass fast_pass(const SuppressSample& sample, const KnobSnapshot& knobs) const;

  std::vector<std::unique_ptr<Strategy>> strategies_;
  std::optional<NodeFacts> node_facts_;
  // The last run()'s inputs without the pointers into the caller's pass (for the fast path).
  QosInputs last_inputs_;
};

}  // namespace gleaner::agent::qos
