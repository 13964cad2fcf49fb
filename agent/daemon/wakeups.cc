// The eBPF probe's wake-ups: between samples, an LS task that waited beyond the
// interference bound, or LS demand above what the last plan left room for, runs the fast
// path at once instead of at its next 50 ms tick (docs/agent.md, "Reacting in
// milliseconds").
#include "agent/daemon/daemon_impl.h"

namespace gleaner::agent {
namespace {

double seconds_of(SteadyTime t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace

void Daemon::Impl::start_wakeups() {
  if (!probe || !opt.enforce || !opt.ebpf_wakeups || opt.fast_interval.count() <= 0) return;
  const int fd = probe->wake_fd();
  if (fd < 0) return;
  wake_descriptor = std::make_unique<boost::asio::posix::stream_descriptor>(io, ::dup(fd));
  wait_for_wakeup();
}

void Daemon::Impl::wait_for_wakeup() {
  wake_descriptor->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                              [this](const boost::system::error_code& ec) {
                                if (ec || stopped) return;
                                on_wakeups();
                                wait_for_wakeup();
                              });
}

void Daemon::Impl::on_wakeups() {
  auto wakes = probe->drain_wakeups();
  if (wakes.empty()) return;
  const SteadyTime now = clock.now();
  const bpf::Wakeup* longest_wait = nullptr;
  int64_t demand_milli = -1;
  for (const auto& w : wakes) {
    ++wakeups_total[bpf::to_string(w.kind)];
    if (w.kind == bpf::WakeKind::kDemand) {
      demand_milli = std::max(demand_milli, w.demand_millicores());
    } else if (longest_wait == nullptr || w.value > longest_wait->value) {
      longest_wait = &w;
    }
  }
  bool cut = false;
  if (longest_wait != nullptr) {
    auto pod = tracked.find(longest_wait->dir);
    step::LsWait wait;
    wait.pod = pod != tracked.end() ? pod->second : longest_wait->dir;
    wait.waited_ns = static_cast<double>(longest_wait->value.count());
    wait.now_s = seconds_of(now);
    wait.reader = qos_reader.get();
    // A step per 100 ms at most under a storm of waits: the armed transition is worth a
    // line, each step only at debug level.
    const step::StepResult waited = step->ls_waited(wait);
    note_slo(waited, "wait");
    cut = waited.slo && waited.slo->action == step::SloAction::kCut;
    for (const auto& event : waited.events)
      spdlog::info("{}", event);
    for (const auto& detail : waited.details)
      spdlog::debug("{}", detail);
  }
  if (demand_milli >= 0) {
    spdlog::debug("eBPF wake-up: LS demand {}m", demand_milli);
    fast_sampler->note_non_be(now, demand_milli);
  }
  owner->fast_tick("wakeup");
  if (cut) {
    // The wait's end is the kernel's CLOCK_MONOTONIC, steady_clock's own on Linux (not the
    // daemon's injectable clock): the reaction is measured on the machine's clock.
    const auto landed = std::chrono::steady_clock::now().time_since_epoch();
    suppress_reaction_seconds.push_back(
        std::chrono::duration<double>(landed - longest_wait->at).count());
  }
}

void Daemon::Impl::update_wake_bounds(std::optional<int64_t> non_be_milli) {
  if (!wake_descriptor) return;
  const auto& threshold = step->engine().threshold();
  bpf::WakeSettings settings;
  if (threshold.enable) {
    // cpuSuppressMode slo cuts on a wait beyond the LS pods' tightest target.
    settings.runq_wait_bound = std::min(
        interference.runq_p99_bound, step->wake_wait_bound().value_or(interference.runq_p99_bound));
    // ... and steers by the waits BE causes: the others do not wake it.
    settings.be_caused_only = be_attribution && step->wake_wait_bound().has_value();
  }
  // Demand above what the last fast pass planned for, by more than one suppress step (a
  // tenth of the node, at least 100 millicores), wakes the fast path.
  if (non_be_milli && qos::suppress_ceiling_applies(threshold, step->suppress_armed())) {
    settings.demand_millicores =
        *non_be_milli + std::max<int64_t>(100, int64_t{100} * node_sampler->cpus());
  }
  if (settings.runq_wait_bound == wake_settings.runq_wait_bound &&
      settings.demand_millicores == wake_settings.demand_millicores &&
      settings.be_caused_only == wake_settings.be_caused_only) {
    return;
  }
  probe->set_wake(settings);
  wake_settings = settings;
}

}  // namespace gleaner::agent
