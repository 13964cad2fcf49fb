// The passes as `gleaner-agent plan` replays them (DaemonOptions::on_step and on_fast_pass):
// a full tick's inputs as a snapshot file, and each fast pass after it as that file with
// the pass as its one `fastPasses` entry, each with what the executor is about to write.
// Only built when a caller asked for them (tests comparing the daemon with `plan`).
#include "agent/daemon/daemon_impl.h"

namespace gleaner::agent {

void Daemon::Impl::observe_tick(const step::TickInputs& in, const step::AgentMemory& before,
                                const qos::Plan& plan) {
  ObservedTick tick{snapshot::to_snapshot_json(*in.snapshot),
                    {in.probe, before, in.fast_path_live, node_sampler->cpus()},
                    in.now_s};
  tick.record.held_clamps = knobs->cgroups().held_clamps();
  if (opt.on_step) {
    StepObservation seen;
    seen.snapshot_file = tick.snapshot;
    step::add_step_record(seen.snapshot_file, tick.record, tick.now_s);
    seen.writes = knobs->plan(plan.writes, plan.resctrl, &plan.system).written;
    for (const auto& e : plan.evictions)
      seen.evictions.push_back(e.pod);
    seen.cpu_measured = in.cpu_measured;
    opt.on_step(seen);
  }
  // The priming pass leaves the fast path nothing to plan with: no pass is recorded after it.
  if (in.cpu_measured) {
    observed_tick = std::move(tick);
  } else {
    observed_tick.reset();
  }
}

void Daemon::Impl::observe_fast_pass(const char* trigger, const step::FastInputs& in,
                                     SteadyTime now, const qos::Plan& plan) {
  if (!observed_tick) return;
  const double now_s = std::chrono::duration<double>(now.time_since_epoch()).count();
  step::StepRecord record = observed_tick->record;
  record.fast_passes = {{.seconds_after = std::max(0.0, now_s - observed_tick->now_s),
                         .trigger = trigger,
                         .node_cpu_milli = in.node_cpu_milli,
                         .non_be_cpu_milli = in.non_be_cpu_milli,
                         .stale = in.stale,
                         .memory = step->memory(now_s),
                         .held_clamps = knobs->cgroups().held_clamps()}};
  StepObservation seen;
  seen.snapshot_file = observed_tick->snapshot;
  step::add_step_record(seen.snapshot_file, record, observed_tick->now_s);
  seen.writes = knobs->plan(plan.writes, plan.resctrl).written;
  opt.on_fast_pass(seen);
}

}  // namespace gleaner::agent
