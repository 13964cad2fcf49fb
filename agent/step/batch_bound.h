#pragma once
// The one bound BE's CPU decision puts on the batch CPU a node reports. Under
// cpuSuppressMode slo, with the run-queue probe steering, the batch CPU is never more than
// BE has been able to keep for most of the last minute (slo_sustained_allowance): jobs
// placed on it are not promised CPU the controller takes back at the next LS wait. The
// daemon, `gleaner-agent plan` and `gleaner-agent calc` all apply it through here, so the
// what-if tools print the figure the node reports. Pure.

#include <cstdint>
#include <optional>

#include "agent/batch/batch_calculator.h"
#include "agent/config/threshold_config.h"
#include "agent/step/slo_controller.h"

namespace gleaner::agent::step {

// The bound, or nullopt where none applies (another mode, or slo without the probe, where
// the threshold formula decides BE's CPU and the colocation formula alone the batch).
std::optional<int64_t> batch_cpu_bound(const config::ResourceThresholdStrategy& threshold,
                                       bool runqueue_probe, const SloMemory& slo);

// Lowers the batch CPU of `batch` to `bound` when it is above it; the bound is kept in
// batch.cpu_bound_milli either way, for `calc`'s explanation.
void bound_batch_cpu(batch::BatchResult& batch, std::optional<int64_t> bound);

}  // namespace gleaner::agent::step
