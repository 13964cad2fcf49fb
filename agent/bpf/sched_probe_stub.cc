// The probe when the build host could not compile the BPF programs (see
// cmake/GleanerBpf.cmake): every open() reports why, and the agent runs without it.
#if !GLEANER_HAVE_BPF

#include "agent/bpf/sched_probe.h"

#ifndef GLEANER_BPF_UNAVAILABLE_REASON
#define GLEANER_BPF_UNAVAILABLE_REASON "built without eBPF"
#endif

namespace gleaner::agent::bpf {

struct SchedProbe::Impl {};

Result<std::unique_ptr<SchedProbe>> SchedProbe::open(const SchedProbeOptions&) {
  return make_error(ErrorCode::kUnsupported,
                    std::string("unavailable: ") + GLEANER_BPF_UNAVAILABLE_REASON);
}

SchedProbe::SchedProbe(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SchedProbe::~SchedProbe() = default;

Result<uint64_t> SchedProbe::track(const std::string&) {
  return make_error(ErrorCode::kUnsupported, GLEANER_BPF_UNAVAILABLE_REASON);
}
Status SchedProbe::set_be_cgroup(const std::string&) {
  return make_error(ErrorCode::kUnsupported, GLEANER_BPF_UNAVAILABLE_REASON);
}
Status SchedProbe::untrack(const std::string&) {
  return make_error(ErrorCode::kUnsupported, GLEANER_BPF_UNAVAILABLE_REASON);
}
Result<SchedInterval> SchedProbe::sample() {
  return make_error(ErrorCode::kUnsupported, GLEANER_BPF_UNAVAILABLE_REASON);
}
Result<std::vector<ProgramCost>> SchedProbe::program_costs() {
  return make_error(ErrorCode::kUnsupported, GLEANER_BPF_UNAVAILABLE_REASON);
}
void SchedProbe::set_wake(const WakeSettings&) {}
int SchedProbe::wake_fd() const {
  return -1;
}
std::vector<Wakeup> SchedProbe::drain_wakeups() {
  return {};
}
uint64_t SchedProbe::wakeups_lost() const {
  return 0;
}
bool SchedProbe::stats_enabled() const {
  return false;
}
std::vector<uint32_t> SchedProbe::program_ids() const {
  return {};
}

Result<std::vector<uint32_t>> kernel_program_ids() {
  return make_error(ErrorCode::kUnsupported, GLEANER_BPF_UNAVAILABLE_REASON);
}
Result<std::vector<uint32_t>> kernel_link_ids() {
  return make_error(ErrorCode::kUnsupported, GLEANER_BPF_UNAVAILABLE_REASON);
}

bool sched_probe_built() {
  return false;
}
std::string sched_probe_build_reason() {
  return GLEANER_BPF_UNAVAILABLE_REASON;
}

}  // namespace gleaner::agent::bpf

#endif
