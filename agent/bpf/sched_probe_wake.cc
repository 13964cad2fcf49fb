// SchedProbe's wake-up signals: the bounds written into the programs' globals, and the
// ring buffer they send through.
#include "agent/bpf/sched_probe.h"

namespace gleaner::agent::bpf {

const char* to_string(WakeKind kind) {
  switch (kind) {
    case WakeKind::kRunqWait:
      return "runqueue_wait";
    case WakeKind::kDemand:
      return "ls_demand";
  }
  return "unknown";
}

int64_t Wakeup::demand_millicores() const {
  return span.count() > 0 ? value.count() * 1000 / span.count() : 0;
}

}  // namespace gleaner::agent::bpf

#if GLEANER_HAVE_BPF

#include <cerrno>

#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include "agent/bpf/sched_probe_impl.h"

namespace gleaner::agent::bpf {
namespace {

struct DrainContext {
  const std::map<uint64_t, std::string>* dirs = nullptr;
  std::vector<Wakeup>* out = nullptr;
};

int on_wakeup(void* ctx, void* data, size_t size) {
  if (size < sizeof(gleaner_wakeup)) return 0;
  const auto* ev = static_cast<const gleaner_wakeup*>(data);
  auto* drain = static_cast<DrainContext*>(ctx);
  Wakeup w;
  w.kind = ev->kind == GLEANER_WAKE_LS_DEMAND ? WakeKind::kDemand : WakeKind::kRunqWait;
  w.at = std::chrono::nanoseconds(static_cast<int64_t>(ev->at_ns));
  w.value = std::chrono::nanoseconds(static_cast<int64_t>(ev->value_ns));
  w.span = std::chrono::nanoseconds(static_cast<int64_t>(ev->span_ns));
  w.cpu = static_cast<int>(ev->cpu);
  w.be_caused = ev->be_caused != 0;
  if (auto it = drain->dirs->find(ev->cgroup_id); it != drain->dirs->end()) w.dir = it->second;
  drain->out->push_back(std::move(w));
  return 0;
}

}  // namespace

void SchedProbe::set_wake(const WakeSettings& settings) {
  auto* bss = impl_->skel->bss;
  auto* data = impl_->skel->data;
  // Plain stores into the programs' mapped globals; the programs read them on their next
  // event.
  __atomic_store_n(&data->wake_min_gap_ns, static_cast<uint64_t>(settings.min_gap.count()),
                   __ATOMIC_RELAXED);
  __atomic_store_n(&bss->wake_demand_millicores,
                   static_cast<uint64_t>(std::max<int64_t>(0, settings.demand_millicores)),
                   __ATOMIC_RELAXED);
  __atomic_store_n(&bss->wake_wait_bound_ns,
                   static_cast<uint64_t>(std::max<int64_t>(0, settings.runq_wait_bound.count())),
                   __ATOMIC_RELAXED);
  __atomic_store_n(&bss->wake_be_caused_only, settings.be_caused_only, __ATOMIC_RELAXED);
}

int SchedProbe::wake_fd() const {
  if (impl_->wakeups == nullptr) return -1;
  return ring_buffer__epoll_fd(impl_->wakeups);
}

std::vector<Wakeup> SchedProbe::drain_wakeups() {
  std::vector<Wakeup> out;
  if (impl_->wakeups == nullptr) return out;
  DrainContext ctx{&impl_->dirs, &out};
  // The callback context is fixed when the ring buffer is made; it points at a slot that
  // this call fills for the duration of the consume.
  impl_->drain_context = &ctx;
  const int n = ring_buffer__consume(impl_->wakeups);
  impl_->drain_context = nullptr;
  if (n < 0) spdlog::debug("sched probe: reading wake-ups failed: {}", n);
  return out;
}

uint64_t SchedProbe::wakeups_lost() const {
  return __atomic_load_n(&impl_->skel->bss->wakeups_lost, __ATOMIC_RELAXED);
}

int SchedProbe::Impl::on_ring_event(void* ctx, void* data, size_t size) {
  auto* impl = static_cast<SchedProbe::Impl*>(ctx);
  if (impl->drain_context == nullptr) return 0;
  return on_wakeup(impl->drain_context, data, size);
}

}  // namespace gleaner::agent::bpf

#endif
