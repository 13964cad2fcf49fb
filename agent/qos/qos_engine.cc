#include "agent/qos/qos_engine.h"

#include <algorithm>

#include "agent/qos/knob_reads.h"
#include "agent/qos/strategy_table.h"

namespace gleaner::agent::qos {

QosEngine::QosEngine() : strategies_(make_strategies()) {}
QosEngine::~QosEngine() = default;
QosEngine::QosEngine(QosEngine&&) noexcept = default;
QosEngine& QosEngine::operator=(QosEngine&&) noexcept = default;

KnobReads QosEngine::full_reads(const QosInputs& in) const {
  const NodeFacts node = node_facts(*in.snapshot, in.layout, in.topology);
  KnobReads reads = full_pass_reads(in, node);
  const KnobSnapshot none;
  const Pass pass{.in = in, .knobs = none, .node = node};
  for (const auto& s : strategies_) {
    if (s->enabled(in)) s->declare_reads(pass, reads);
  }
  return reads;
}

Plan QosEngine::run(const QosInputs& in) {
  return run(in, in.reader->read(full_reads(in)));
}

Plan QosEngine::run(const QosInputs& in, const KnobSnapshot& knobs) {
  const auto& snap = *in.snapshot;
  node_facts_ = node_facts(snap, in.layout, in.topology);
  last_inputs_ = in;
  last_inputs_.snapshot = nullptr;
  last_inputs_.reader = nullptr;

  Plan plan;
  const Pass pass{.in = in,
                  .knobs = knobs,
                  .node = *node_facts_,
                  .full = true,
                  .non_be_cpu_milli = non_be_cpu_usage(snap),
                  .system_usage_milli = node_facts_->system_usage_milli,
                  .stale = in.stale,
                  .suppress_armed = in.suppress_armed,
                  .so_far = &plan};
  for (const auto& s : strategies_) {
    if (s->enabled(in)) append_plan(plan, s->plan(pass));
  }
  return plan;
}

Pass QosEngine::fast_pass(const SuppressSample& sample, const KnobSnapshot& knobs) const {
  return Pass{.in = last_inputs_,
              .knobs = knobs,
              .node = *node_facts_,
              .full = false,
              .non_be_cpu_milli = sample.non_be_cpu_milli,
              .system_usage_milli = fast_system_usage(sample),
              .stale = sample.stale,
              .suppress_armed = sample.suppress_armed};
}

Plan QosEngine::suppress_only(const SuppressSample& sample, const KnobSnapshot& knobs) const {
  if (!node_facts_ || !last_inputs_.cpu_measured) return {};
  const Pass pass = fast_pass(sample, knobs);
  Plan plan;
  for (const auto& s : strategies_) {
    if (s->on_fast_path() && s->enabled(last_inputs_)) append_plan(plan, s->plan_fast(pass));
  }
  return plan;
}

Plan QosEngine::suppress_only(const SuppressSample& sample, QosReader& reader) const {
  if (!node_facts_ || !last_inputs_.cpu_measured) return {};
  return suppress_only(sample, reader.read(fast_reads()));
}

KnobReads QosEngine::fast_reads() const {
  KnobReads reads;
  if (!node_facts_) return reads;
  const KnobSnapshot none;
  const Pass pass = fast_pass({}, none);
  for (const auto& s : strategies_) {
    if (s->on_fast_path() && s->enabled(last_inputs_)) s->declare_fast_reads(pass, reads);
  }
  return reads;
}

int64_t QosEngine::fast_system_usage(const SuppressSample& sample) const {
  // System usage moves slowly; it cannot exceed what the node uses beyond non-BE pods.
  return std::clamp<int64_t>(sample.node_cpu_milli - sample.non_be_cpu_milli, 0,
                             node_facts_ ? node_facts_->system_usage_milli : 0);
}

Json QosEngine::save_memory(double now_s) const {
  Json agent = Json::object();
  for (const auto& s : strategies_)
    s->save(agent, now_s);
  return agent;
}

Status QosEngine::load_memory(const Json& agent, const std::string& where, double now_s) {
  // Into fresh strategies first, so a rejected part leaves every strategy as it was.
  auto loaded = make_strategies();
  for (const auto& s : loaded) {
    if (auto ok = s->load(agent, where, now_s); !ok) return ok;
  }
  strategies_ = std::move(loaded);
  return ok_status();
}

void QosEngine::eviction_answered(const std::string& pod, bool accepted, double now_s) {
  for (const auto& s : strategies_)
    s->eviction_answered(pod, accepted, now_s);
}

}  // namespace gleaner::agent::qos
