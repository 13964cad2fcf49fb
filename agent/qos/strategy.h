#pragma once
// One QoS strategy behind one interface: its name, whether the node's config enables it,
// the kernel values it reads, its plan from the pass's snapshot and its own memory, and that
// memory's record form. The engine (qos_engine.h) runs the table of them (strategy_table.h)
// in order on every full pass, and the ones that say so on the fast path too. A strategy
// reads nothing itself: the edge reads what the strategies declare into the pass's
// KnobSnapshot before any of them plans.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "agent/qos/cpu_suppress.h"
#include "agent/qos/qos_types.h"
#include "common/json_util.h"
#include "common/result.h"

namespace gleaner::agent::qos {

// What one pass hands every strategy.
struct Pass {
  const QosInputs& in;
  const KnobSnapshot& knobs;
  const NodeFacts& node;  // the node's slow-changing facts, from the last full snapshot
  bool full = true;       // false: the fast path, planned by fast-path strategies only
  // CPU figures: from the snapshot on a full pass, from the fast path's sample otherwise.
  int64_t non_be_cpu_milli = 0;
  int64_t system_usage_milli = 0;
  bool stale = false;
  bool suppress_armed = true;  // as QosInputs::suppress_armed
  // What the strategies before this one planned this pass (the CPU eviction counts the pods
  // the memory eviction chose as leaving).
  const Plan* so_far = nullptr;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Its name in logs and notes, unique in the table.
  [[nodiscard]] virtual std::string_view name() const = 0;
  // False: the node's config turns it off, and it neither reads nor plans this pass. A
  // strategy that must undo its earlier writes when turned off stays enabled and plans that.
  [[nodiscard]] virtual bool enabled(const QosInputs& /*in*/) const { return true; }
  // The knobs its full-pass plan reads beyond the cgroup knobs of kubepods, its QoS
  // directories and every pod and container (which every full pass reads).
  virtual void declare_reads(const Pass& /*pass*/, KnobReads& /*reads*/) const {}
  // The full pass: its writes, evictions, resctrl and system changes, and notes. It may
  // update its memory.
  virtual Plan plan(const Pass& pass) = 0;

  // The fast path (every ~50 ms between full passes): strategies that answer true plan
  // there from the fast snapshot, reading what declare_fast_reads adds; memory is not
  // touched there.
  [[nodiscard]] virtual bool on_fast_path() const { return false; }
  virtual void declare_fast_reads(const Pass& /*pass*/, KnobReads& /*reads*/) const {}
  [[nodiscard]] virtual Plan plan_fast(const Pass& /*pass*/) const { return {}; }

  // Its memory between passes in the record form (the `agent` object of a snapshot file):
  // save adds its own keys to `agent`, times as seconds before `now_s`; load reads them
  // back (absent keys: no memory), naming the field of `where` that is wrong.
  virtual void save(Json& /*agent*/, double /*now_s*/) const {}
  virtual Status load(const Json& /*agent*/, const std::string& /*where*/, double /*now_s*/) {
    return ok_status();
  }
  // The API server's answer to an eviction a plan asked for.
  virtual void eviction_answered(const std::string& /*pod*/, bool /*accepted*/, double /*now_s*/) {}
};

// A strategy that is its plan alone: no memory, no fast path, no eviction answers, reading
// what every full pass reads plus what `reads` declares (when given). Most strategies are.
class PlanOnlyStrategy final : public Strategy {
 public:
  using PlanFn = Plan (*)(const Pass&);
  using ReadsFn = void (*)(const Pass&, KnobReads&);
  PlanOnlyStrategy(std::string name, PlanFn plan, ReadsFn reads = nullptr)
      : name_(std::move(name)), plan_(plan), reads_(reads) {}
  [[nodiscard]] std::string_view name() const override { return name_; }
  void declare_reads(const Pass& pass, KnobReads& reads) const override {
    if (reads_ != nullptr) reads_(pass, reads);
  }
  Plan plan(const Pass& pass) override { return plan_(pass); }

 private:
  std::string name_;
  PlanFn plan_;
  ReadsFn reads_;
};

}  // namespace gleaner::agent::qos
