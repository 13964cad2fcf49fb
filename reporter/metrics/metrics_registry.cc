#include "reporter/metrics/metrics_registry.h"

#include <mutex>
#include <utility>
#include <vector>

#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "net/prometheus_text.h"

namespace gleaner::reporter {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

constexpr double kMilli = 1000.0;

// A family keyed by one label whose values come from the agent; bounded.
MetricFamily labelled_counter(std::string name, std::string help, const std::string& label,
                              const std::map<std::string, uint64_t>& totals,
                              MetricType type = MetricType::Counter) {
  return net::labelled_family(std::move(name), std::move(help), label, totals, type,
                              kMaxLabelValuesPerFamily);
}

std::string bounded_qos(const std::string& qos) {
  static constexpr const char* kKnown[] = {"LSE", "LSR", "LS", "BE", "SYSTEM", "NONE"};
  for (const char* k : kKnown) {
    if (qos == k) return qos;
  }
  return "NONE";
}

// Per-pod families. Adding one here counts against kMaxSeriesPerPod (one series each).
struct PodFamily {
  const char* name;
  const char* help;
  MetricType type;
  std::optional<double> (*value)(const PodState&);
};

std::optional<double> percent_to_ratio(const std::optional<double>& p) {
  if (!p) return std::nullopt;
  return *p / 100.0;
}

constexpr PodFamily kPodFamilies[] = {
    {"gleaner_pod_cpu_usage_cores", "CPU used by the pod, in cores.", MetricType::Gauge,
     [](const PodState& p) -> std::optional<double> {
       return static_cast<double>(p.cpu_usage_millicores) / kMilli;
     }},
    {"gleaner_pod_memory_working_set_bytes", "Memory working set of the pod.", MetricType::Gauge,
     [](const PodState& p) -> std::optional<double> {
       return static_cast<double>(p.memory_usage_bytes);
     }},
    {"gleaner_pod_cpu_throttled_seconds_total", "Time the pod's CPU quota throttled it.",
     MetricType::Counter,
     [](const PodState& p) -> std::optional<double> { return p.cpu_throttled_seconds_total; }},
    {"gleaner_pod_cpu_throttled_periods_total", "CFS periods in which the pod was throttled.",
     MetricType::Counter,
     [](const PodState& p) -> std::optional<double> {
       return static_cast<double>(p.cpu_throttled_periods_total);
     }},
    {"gleaner_pod_cpu_pressure_some_ratio", "CPU PSI some avg10 of the pod, as a ratio.",
     MetricType::Gauge, [](const PodState& p) { return percent_to_ratio(p.pressure.cpu_some); }},
    {"gleaner_pod_cpu_pressure_full_ratio", "CPU PSI full avg10 of the pod, as a ratio.",
     MetricType::Gauge, [](const PodState& p) { return percent_to_ratio(p.pressure.cpu_full); }},
    {"gleaner_pod_memory_pressure_some_ratio", "Memory PSI some avg10 of the pod, as a ratio.",
     MetricType::Gauge, [](const PodState& p) { return percent_to_ratio(p.pressure.memory_some); }},
    {"gleaner_pod_memory_pressure_full_ratio", "Memory PSI full avg10 of the pod, as a ratio.",
     MetricType::Gauge, [](const PodState& p) { return percent_to_ratio(p.pressure.memory_full); }},
    {"gleaner_pod_io_pressure_some_ratio", "IO PSI some avg10 of the pod, as a ratio.",
     MetricType::Gauge, [](const PodState& p) { return percent_to_ratio(p.pressure.io_some); }},
    {"gleaner_pod_io_pressure_full_ratio", "IO PSI full avg10 of the pod, as a ratio.",
     MetricType::Gauge, [](const PodState& p) { return percent_to_ratio(p.pressure.io_full); }},
    {"gleaner_pod_runqueue_latency_p99_seconds",
     "99th percentile run-queue latency of the pod's tasks over the last interval.",
     MetricType::Gauge,
     [](const PodState& p) -> std::optional<double> {
       if (!p.runqueue_latency_p99_us) return std::nullopt;
       return static_cast<double>(*p.runqueue_latency_p99_us) / 1e6;
     }},
};
static_assert(std::size(kPodFamilies) <= kMaxSeriesPerPod);

void append_node_families(const AgentState& s, std::vector<MetricFamily>& out) {
  auto cores = [](int64_t milli) { return static_cast<double>(milli) / kMilli; };
  auto bytes = [](int64_t b) { return static_cast<double>(b); };
  out.push_back(net::gauge_family("gleaner_node_cpu_capacity_cores", "CPU capacity of the node.",
                                  cores(s.node_capacity.cpu_millicores)));
  out.push_back(net::gauge_family("gleaner_node_memory_capacity_bytes",
                                  "Memory capacity of the node.",
                                  bytes(s.node_capacity.memory_bytes)));
  out.push_back(net::gauge_family("gleaner_node_cpu_allocatable_cores",
                                  "CPU allocatable on the node.",
                                  cores(s.node_allocatable.cpu_millicores)));
  out.push_back(net::gauge_family("gleaner_node_memory_allocatable_bytes",
                                  "Memory allocatable on the node.",
                                  bytes(s.node_allocatable.memory_bytes)));
  out.push_back(net::gauge_family("gleaner_node_cpu_usage_cores", "CPU used on the node.",
                                  cores(s.node_usage.cpu_millicores)));
  out.push_back(net::gauge_family("gleaner_node_memory_usage_bytes", "Memory used on the node.",
                                  bytes(s.node_usage.memory_bytes)));
  out.push_back(net::gauge_family("gleaner_system_cpu_usage_cores", "CPU used outside pods.",
                                  cores(s.system_usage.cpu_millicores)));
  out.push_back(net::gauge_family("gleaner_system_memory_usage_bytes", "Memory used outside pods.",
                                  bytes(s.system_usage.memory_bytes)));

  auto cls_cpu = net::metric_family("gleaner_class_cpu_usage_cores",
                                    "CPU used by the pods of a class.", MetricType::Gauge);
  net::add_series(cls_cpu, cores(s.ls_usage.cpu_millicores), {{"class", "ls"}});
  net::add_series(cls_cpu, cores(s.be_usage.cpu_millicores), {{"class", "be"}});
  out.push_back(std::move(cls_cpu));
  auto cls_mem = net::metric_family("gleaner_class_memory_usage_bytes",
                                    "Memory used by the pods of a class.", MetricType::Gauge);
  net::add_series(cls_mem, bytes(s.ls_usage.memory_bytes), {{"class", "ls"}});
  net::add_series(cls_mem, bytes(s.be_usage.memory_bytes), {{"class", "be"}});
  out.push_back(std::move(cls_mem));

  // Absent (no series) when the node offers no batch capacity: a 0 would read as "full".
  auto batch_cpu = net::metric_family("gleaner_batch_cpu_allocatable_cores",
                                      "Batch CPU (kubernetes.io/batch-cpu) the node can offer.",
                                      MetricType::Gauge);
  auto batch_mem = net::metric_family(
      "gleaner_batch_memory_allocatable_bytes",
      "Batch memory (kubernetes.io/batch-memory) the node can offer.", MetricType::Gauge);
  if (s.batch_allocatable) {
    net::add_series(batch_cpu, cores(s.batch_allocatable->cpu_millicores));
    net::add_series(batch_mem, bytes(s.batch_allocatable->memory_bytes));
  }
  out.push_back(std::move(batch_cpu));
  out.push_back(std::move(batch_mem));

  auto state = net::metric_family("gleaner_colocation_state",
                                  "1 for the node's current colocation state, 0 for the others.",
                                  MetricType::Gauge);
  for (auto c :
       {ColocationState::kEnabled, ColocationState::kDisabled, ColocationState::kDegraded}) {
    net::add_series(state, s.colocation == c ? 1 : 0, {{"state", to_string(c)}});
  }
  out.push_back(std::move(state));

  out.push_back(net::gauge_family("gleaner_be_suppress_active",
                                  "1 while BE CPU suppression is in force.",
                                  s.suppress.active ? 1 : 0));
  auto target = net::metric_family("gleaner_be_suppress_cpu_cores",
                                   "CPU the BE tier may use under suppression, by policy.",
                                   MetricType::Gauge);
  if (s.suppress.active && s.suppress.policy != "none") {
    net::add_series(target, cores(s.suppress.be_cpu_limit_millicores),
                    {{"policy", s.suppress.policy}});
  }
  out.push_back(std::move(target));
}

void append_agent_families(const AgentState& s, std::vector<MetricFamily>& out) {
  out.push_back(labelled_counter("gleaner_evictions_total", "Pods evicted by the agent.", "reason",
                                 s.evictions_total));
  out.push_back(net::counter_family(
      "gleaner_eviction_refusals_total",
      "Evictions the API server refused (a PodDisruptionBudget's 429) or failed; asked again "
      "after a back-off.",
      static_cast<double>(s.eviction_refusals_total)));
  out.push_back(
      labelled_counter("gleaner_cgroup_writes_total",
                       "cgroup, resctrl and system-config (sysctl) writes made by the executors.",
                       "resource", s.cgroup_writes_total));
  out.push_back(labelled_counter("gleaner_cgroup_write_failures_total",
                                 "cgroup, resctrl and system-config (sysctl) writes that failed.",
                                 "resource", s.cgroup_write_failures_total));
  out.push_back(labelled_counter(
      "gleaner_cgroup_writes_clamped_total",
      "cgroup writes cut to fit under an ancestor's limit (kernel hierarchy rules).", "resource",
      s.cgroup_writes_clamped_total));
  out.push_back(labelled_counter("gleaner_cgroup_writes_deferred_total",
                                 "Refused cgroup writes held back by the retry backoff.",
                                 "resource", s.cgroup_writes_deferred_total));
  out.push_back(labelled_counter(
      "gleaner_cgroup_writes_unrecorded_total",
      "Writes held because the original value could not be recorded in the state file first.",
      "resource", s.cgroup_writes_unrecorded_total));
  out.push_back(net::gauge_family(
      "gleaner_agent_originals_recorded",
      "1 when the record of original values can be written; 0 while it cannot (new changes held).",
      s.originals_recorded ? 1.0 : 0.0));
  out.push_back(
      net::counter_family("gleaner_agent_state_file_errors_total",
                          "Failures to read or write the record of original cgroup values.",
                          static_cast<double>(s.state_file_errors_total)));
  out.push_back(
      net::counter_family("gleaner_agent_pod_list_errors_total",
                          "Pod list fetches (kubelet or the pods file) that failed; the pods known "
                          "before were kept.",
                          static_cast<double>(s.pod_list_errors_total)));
  out.push_back(labelled_counter("gleaner_config_load_errors_total",
                                 "ack-slo-config keys that failed to parse or validate.", "key",
                                 s.config_load_errors_total));
  out.push_back(labelled_counter(
      "gleaner_config_key_valid",
      "1 when the ack-slo-config key in force is its file as written (or its defaults, the "
      "file absent); 0 while the file is rejected (the log names the error).",
      "key", s.config_key_valid, MetricType::Gauge));
  out.push_back(labelled_counter(
      "gleaner_config_warnings",
      "Fields of the ack-slo-config in force that this agent does not enforce, or does not "
      "know (the log names them), by ConfigMap key.",
      "key", s.config_warnings, MetricType::Gauge));
  out.push_back(net::counter_family("gleaner_report_sends_total",
                                    "Node reports the scheduler accepted.",
                                    static_cast<double>(s.report_sends_total)));
  out.push_back(net::counter_family("gleaner_report_send_failures_total",
                                    "Node report sends that failed.",
                                    static_cast<double>(s.report_send_failures_total)));
  out.push_back(net::counter_family("gleaner_node_metric_updates_total",
                                    "NodeMetric (slo.koordinator.sh) status writes done.",
                                    static_cast<double>(s.node_metric_updates_total)));
  out.push_back(
      net::counter_family("gleaner_node_metric_update_failures_total",
                          "NodeMetric status writes that failed (the CRD not served included).",
                          static_cast<double>(s.node_metric_update_failures_total)));
  out.push_back(net::gauge_family("gleaner_agent_http_connections",
                                  "Open connections to the agent's /metrics port.",
                                  static_cast<double>(s.http_open_connections)));
  out.push_back(
      net::counter_family("gleaner_agent_http_accept_errors_total",
                          "accept() failures on the /metrics port (out of file descriptors).",
                          static_cast<double>(s.http_accept_errors_total)));
  out.push_back(
      net::counter_family("gleaner_agent_http_connection_cap_reached_total",
                          "Times the /metrics port reached its connection cap (new ones wait).",
                          static_cast<double>(s.http_connection_cap_reached_total)));
  out.push_back(net::counter_family("gleaner_agent_cpu_seconds_total",
                                    "CPU time used by the agent itself.",
                                    s.agent_cpu_seconds_total));
  out.push_back(net::gauge_family("gleaner_agent_resident_memory_bytes",
                                  "Resident memory of the agent.",
                                  static_cast<double>(s.agent_resident_memory_bytes)));
  out.push_back(net::gauge_family("gleaner_last_sample_timestamp_seconds",
                                  "Unix time of the newest sample the exported values come from.",
                                  s.last_sample_unix_seconds));
  auto allowance =
      net::metric_family("gleaner_be_cpu_allowance_cores",
                         "cpuSuppressMode slo: the CPU the feedback controller allows the BE tier.",
                         MetricType::Gauge);
  if (s.be_cpu_allowance_cores) net::add_series(allowance, *s.be_cpu_allowance_cores, {});
  out.push_back(std::move(allowance));
  out.push_back(net::gauge_family(
      "gleaner_be_cpu_slo_fallback",
      "1 while cpuSuppressMode slo follows the threshold formula for want of the eBPF "
      "run-queue probe.",
      s.be_cpu_slo_fallback ? 1 : 0));
  out.push_back(net::gauge_family(
      "gleaner_ls_pods_unseen",
      "LS pods that ran in the last pass while the eBPF probe saw them use under a quarter of "
      "their CPU; BE may not grow while any is.",
      static_cast<double>(s.ls_pods_unseen)));
  out.push_back(labelled_counter(
      "gleaner_be_cpu_slo_cuts_total",
      "Cuts of the BE CPU allowance by the slo controller, by trigger (pass: a sampling pass "
      "saw a breach; wait: an LS task's wait between passes).",
      "trigger", s.be_cpu_slo_cuts_total));
  out.push_back(net::counter_family(
      "gleaner_be_cpu_slo_target_warnings_total",
      "LS pods' run-queue wait targets (annotation) that could not be used; the default applied.",
      static_cast<double>(s.be_cpu_slo_target_warnings_total)));
  out.push_back(net::counter_family(
      "gleaner_be_cpu_slo_targets_clamped_total",
      "LS pods' run-queue wait targets (annotation) below cpuSloMinWaitTargetMicros, raised to it.",
      static_cast<double>(s.be_cpu_slo_targets_clamped_total)));
  out.push_back(
      net::gauge_family("gleaner_ebpf_probe_loaded",
                        "1 when the eBPF run-queue probe is loaded; 0 when the agent runs on "
                        "cgroup and PSI sampling only.",
                        s.ebpf_probe_loaded ? 1 : 0));
  out.push_back(net::gauge_family(
      "gleaner_ebpf_be_attribution",
      "1 when the eBPF probe knows the BE QoS cgroup and tells the LS waits BE caused apart "
      "(cpuSuppressMode slo steers by those); 0 before the BE cgroup exists or without the probe.",
      s.ebpf_be_attribution ? 1 : 0));
  out.push_back(labelled_counter(
      "gleaner_agent_ebpf_wakeups_total",
      "Times the eBPF probe woke the fast path between ticks, by signal (runqueue_wait: an LS "
      "task waited beyond the interference bound; ls_demand: LS CPU over a 10 ms window rose "
      "beyond the last plan).",
      "signal", s.ebpf_wakeups_total));
  out.push_back(labelled_counter(
      "gleaner_agent_fast_passes_total",
      "Fast CPU-suppress passes, by what ran them (timer: the fast loop; wakeup: the eBPF "
      "probe's signal).",
      "trigger", s.fast_passes_total));
  out.push_back(
      net::counter_family("gleaner_agent_ebpf_wakeups_lost_total",
                          "Wake-ups the eBPF probe could not queue (its ring buffer was full).",
                          static_cast<double>(s.ebpf_wakeups_lost_total)));
  out.push_back(net::counter_family(
      "gleaner_agent_ebpf_track_failures_total",
      "Passes in which the eBPF probe refused to track an LS pod's cgroup for a reason other "
      "than its directory not being there yet (more distinct cgroup levels than it reads, "
      "its maps full); BE holds while such a pod runs.",
      static_cast<double>(s.ebpf_track_failures_total)));
  // Program names are the probe's own (a handful), so the label is bounded.
  auto run_seconds = net::metric_family(
      "gleaner_bpf_program_run_seconds_total",
      "Time the kernel spent running each BPF program (--bpf-stats).", MetricType::Counter);
  auto runs = net::metric_family("gleaner_bpf_program_runs_total",
                                 "Times each BPF program ran (--bpf-stats).", MetricType::Counter);
  auto per_event = net::metric_family(
      "gleaner_bpf_program_seconds_per_run",
      "Average run time of each BPF program over the last interval.", MetricType::Gauge);
  for (const auto& [program, cost] : s.bpf_program_costs) {
    net::add_series(run_seconds, cost.run_seconds_total, {{"program", program}});
    net::add_series(runs, static_cast<double>(cost.runs_total), {{"program", program}});
    if (cost.ns_per_event)
      net::add_series(per_event, *cost.ns_per_event / 1e9, {{"program", program}});
  }
  out.push_back(std::move(run_seconds));
  out.push_back(std::move(runs));
  out.push_back(std::move(per_event));
}

void append_pod_families(const AgentState& s, std::vector<MetricFamily>& out) {
  for (const auto& pf : kPodFamilies) {
    auto f = net::metric_family(pf.name, pf.help, pf.type);
    f.metric.reserve(s.pods.size());
    for (const auto& pod : s.pods) {
      auto v = pf.value(pod);
      if (!v) continue;
      net::add_series(
          f, *v,
          {{"namespace", pod.namespace_name}, {"pod", pod.name}, {"qos", bounded_qos(pod.qos)}});
    }
    out.push_back(std::move(f));
  }
}

}  // namespace

struct MetricsRegistry::Impl {
  // The histograms are the families with state of their own (buckets accumulate across
  // ticks), so it lives in a prometheus-cpp registry; everything else renders from state.
  prometheus::Registry registry;
  prometheus::Histogram* sampling_pass = nullptr;
  prometheus::Histogram* suppress_reaction = nullptr;
  mutable std::mutex mu;
  std::shared_ptr<const AgentState> state = std::make_shared<AgentState>();
};

MetricsRegistry::MetricsRegistry() : impl_(std::make_unique<Impl>()) {
  auto& fam = prometheus::BuildHistogram()
                  .Name("gleaner_sampling_pass_duration_seconds")
                  .Help("Duration of one sampling pass over the node and its pods.")
                  .Register(impl_->registry);
  impl_->sampling_pass =
      &fam.Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                           0.1, 0.25, 0.5, 1});
  auto& reaction =
      prometheus::BuildHistogram()
          .Name("gleaner_be_suppress_reaction_seconds")
          .Help(
              "cpuSuppressMode slo: from the end of an LS task's run-queue wait that BE caused "
              "beyond its target (kernel time of the eBPF signal) to the BE CPU cut written "
              "in the cgroup.")
          .Register(impl_->registry);
  impl_->suppress_reaction =
      &reaction.Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.015,
                                                                0.025, 0.05, 0.1, 0.25, 1});
}

MetricsRegistry::~MetricsRegistry() = default;

void MetricsRegistry::update(AgentState state) {
  for (double seconds : state.sampling_pass_seconds)
    impl_->sampling_pass->Observe(seconds);
  state.sampling_pass_seconds.clear();
  for (double seconds : state.suppress_reaction_seconds)
    impl_->suppress_reaction->Observe(seconds);
  state.suppress_reaction_seconds.clear();
  auto next = std::make_shared<const AgentState>(std::move(state));
  std::lock_guard lock(impl_->mu);
  impl_->state = std::move(next);
}

std::string MetricsRegistry::serialize() const {
  std::shared_ptr<const AgentState> state;
  {
    // Scrapes hold the lock only to take a reference; rendering runs unlocked.
    std::lock_guard lock(impl_->mu);
    state = impl_->state;
  }
  std::vector<MetricFamily> families;
  families.reserve(48);
  append_node_families(*state, families);
  append_pod_families(*state, families);
  append_agent_families(*state, families);
  for (auto& f : impl_->registry.Collect())
    families.push_back(std::move(f));
  return net::serialize_families(families);
}

}  // namespace gleaner::reporter
