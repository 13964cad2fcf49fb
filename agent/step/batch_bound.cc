#include "agent/step/batch_bound.h"

#include "agent/step/agent_step.h"

namespace gleaner::agent::step {

std::optional<int64_t> batch_cpu_bound(const config::ResourceThresholdStrategy& threshold,
                                       bool runqueue_probe, const SloMemory& slo) {
  if (!slo_mode(threshold) || !runqueue_probe) return std::nullopt;
  return slo_sustained_allowance(slo);
}

void bound_batch_cpu(batch::BatchResult& batch, std::optional<int64_t> bound) {
  if (!bound) return;
  batch.cpu_bound_milli = *bound;
  if (batch.batch_cpu_milli && *bound < *batch.batch_cpu_milli) batch.batch_cpu_milli = *bound;
}

}  // namespace gleaner::agent::step
