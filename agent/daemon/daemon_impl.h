#pragma once
// The daemon's state, shared by its two halves: daemon.cc (start-up, the loops' timers,
// stop) and daemon_tick.cc (one sampling pass, the fast path, applying a plan). Private to
// agent/daemon.

#include <cmath>
#include <fstream>
#include <set>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/batch/batch_calculator.h"
#include "agent/bpf/interference.h"
#include "agent/bpf/sched_probe.h"
#include "agent/config/slo_config.h"
#include "agent/daemon/api_link.h"
#include "agent/daemon/cgroup_watch.h"
#include "agent/daemon/daemon.h"
#include "agent/daemon/handover.h"
#include "agent/daemon/node_metric.h"
#include "agent/daemon/node_view.h"
#include "agent/daemon/pod_source.h"
#include "agent/daemon/state_record.h"
#include "agent/daemon/warn_book.h"
#include "agent/edge/knob_reader.h"
#include "agent/exec/knob_executor.h"
#include "agent/metrics/fast_sampler.h"
#include "agent/metrics/metric_store.h"
#include "agent/metrics/node_sampler.h"
#include "agent/metrics/pod_sampler.h"
#include "agent/qos/cpu_topology.h"
#include "agent/qos/pod_dirs.h"
#include "agent/qos/qos_engine.h"
#include "agent/snapshot/node_snapshot.h"
#include "agent/step/agent_step.h"
#include "agent/step/step_record.h"
#include "cgroup/cgroup_fs.h"
#include "cgroup/layout.h"
#include "common/file_io.h"
#include "common/json_fwd.h"
#include "net/http_reply.h"
#include "reporter/client/report_client.h"
#include "reporter/metrics/health.h"
#include "reporter/metrics/metrics_registry.h"
#include "reporter/metrics/metrics_server.h"
#include "reporter/metrics/routes.h"
#include "resctrl/resctrl_fs.h"

namespace gleaner::agent {

// How long usage samples are kept: the longest aggregation window a config may ask for.
constexpr std::chrono::minutes kLongestWindow{30};

struct Daemon::Impl {
  boost::asio::io_context& io;
  DaemonOptions opt;
  const Clock& clock;
  cgroup::CgroupVersion version = cgroup::CgroupVersion::kV1;
  std::optional<cgroup::KubeletLayout> layout;
  std::unique_ptr<cgroup::CgroupFs> fs;
  std::unique_ptr<resctrl::ResctrlFs> resctrl_fs;  // null: no resctrl on this node
  // The one writer of cgroup, resctrl and system-config knobs (declared after what it uses).
  std::unique_ptr<exec::KnobExecutor> knobs;
  std::unique_ptr<StateRecord> state;  // null: originals not recorded (--state-dir "")
  std::unique_ptr<edge::FsQosReader> qos_reader;
  std::unique_ptr<step::AgentStep> step;
  std::optional<qos::CpuTopology> topology;
  std::unique_ptr<FastSampler> fast_sampler;
  boost::asio::steady_timer fast_timer;
  SteadyTime last_full_sample{};
  std::map<std::string, uint64_t> evictions_total;
  uint64_t eviction_refusals_total = 0;  // answered other than accepted by the API server
  std::unique_ptr<ApiLink> api;
  std::unique_ptr<NodeMetricPublisher> node_metric;
  SteadyTime node_metric_due{};  // the next pass that builds a NodeMetric status
  std::optional<CgroupWatch> cgroup_watch;
  std::unique_ptr<boost::asio::posix::stream_descriptor> watch_descriptor;
  bool force_pod_refresh = false;
  SteadyTime last_fast_sample{};
  std::unique_ptr<bpf::RunqProbe> probe;
  // The probe's wake-up ring buffer in the event loop (null: wake-ups off).
  std::unique_ptr<boost::asio::posix::stream_descriptor> wake_descriptor;
  bpf::WakeSettings wake_settings;                    // in force in the probe
  std::map<std::string, uint64_t> wakeups_total;      // by signal
  std::map<std::string, uint64_t> fast_passes_total;  // by trigger (timer, wakeup)
  bpf::InterferenceConfig interference;
  bool warned_no_signal = false;
  std::map<std::string, std::string> tracked;  // cgroup dir -> pod key, for LS pods
  // LS pods the probe refused to track for a reason other than a directory not there yet
  // (more distinct cgroup levels than it reads, its maps full): counted each pass, and
  // logged once per pod and reason in ten minutes. Such a pod is unseen, so BE holds.
  uint64_t ebpf_track_failures_total = 0;
  WarnBook track_warned{1024, std::chrono::minutes(10)};
  std::map<std::string, double> runq_p99_ns;     // pod key -> this interval's p99
  std::map<std::string, double> be_runq_p99_ns;  // pod key -> p99 of the waits BE caused
  bool be_attribution = false;  // the probe knows the BE cgroup (set_be_cgroup succeeded)
  bool warned_be_attribution = false;
  std::vector<double> suppress_reaction_seconds;  // slo cuts on wake-ups since the last pass
  std::string be_qos_dir;
  std::unique_ptr<NodeSampler> node_sampler;
  std::unique_ptr<PodSampler> pod_sampler;
  std::unique_ptr<MetricStore> store;
  std::unique_ptr<PodSource> pod_source;
  std::unique_ptr<config::ConfigLoader> config;
  kube::Node node;
  std::vector<kube::Pod> pods;
  SteadyTime last_pod_fetch{};
  bool have_pods = false;
  // Failed pod list fetches, and the last failure's message (warned once until it changes
  // or the list works again: kubelet away for an hour is one warning, not 3,600).
  uint64_t pod_list_errors = 0;
  std::string last_pod_list_error;
  reporter::MetricsRegistry registry;
  std::unique_ptr<reporter::HealthMonitor> health;
  std::unique_ptr<reporter::MetricsServer> metrics_server;
  std::unique_ptr<reporter::ReportClient> report_client;
  boost::asio::steady_timer timer;
  uint64_t sequence = 0;
  // This process among the agents that ever ran on the node (reports' epoch): the
  // scheduler tells a restarted agent by it, not by its clock.
  std::string epoch = new_report_epoch();
  int ticks = 0;
  bool stopped = false;
  std::string last_calc;
  // The snapshot that calculation ran on (averaged usage), for GET /debug/snapshot: read on
  // the loop's thread, as the metrics server runs on the daemon's io_context.
  std::shared_ptr<const snapshot::NodeSnapshot> calc_snapshot;
  std::vector<double> pass_seconds;
  Daemon* owner = nullptr;
  bool own_timers = true;  // DaemonDeps::own_timers
  std::function<void()> on_stop;

  Impl(boost::asio::io_context& io_ctx, DaemonOptions o, const Clock& c)
      : io(io_ctx), opt(std::move(o)), clock(c), fast_timer(io_ctx), timer(io_ctx) {}

  void refresh_pods(SteadyTime now);
  void schedule_next();
  void schedule_fast();
  void wait_for_cgroup_change();
  // Wake-ups (wakeups.cc): listens on the probe's ring buffer when it can act on them;
  // keeps the probe's bounds in step with the fast path's latest non-BE figure.
  void start_wakeups();
  void wait_for_wakeup();
  void on_wakeups();
  void update_wake_bounds(std::optional<int64_t> non_be_milli);
  // The suppress status: BE's ceiling as the last full pass put it in force (nullopt: no
  // pass planned yet, or enforcement off), not a read of the tree.
  void describe_suppress(TickOutcome& outcome);
  std::optional<step::BeCeiling> be_in_force;
  // The ceiling the pass read with the writes the executor made over it: a planned write
  // it did not make (refused, held back, a dry run) leaves the value read.
  [[nodiscard]] step::BeCeiling be_ceiling_applied(const step::StepResult& result,
                                                   const exec::KnobReport& applied) const;
  // The interference signals of this tick: LS pods tracked by the eBPF probe (their
  // run-queue p99 over the interval) and the node's cpu PSI.
  step::ProbeReadings read_probe(const snapshot::NodeSnapshot& snap, const NodeUsage& node_usage);
  // Warns once when cpuSuppressMode onInterference has no signal to act on.
  void warn_without_signal(const config::ResourceThresholdStrategy& threshold);
  // cpuSuppressMode slo (slo_report.cc): logs and counts what a step of the controller did
  // (`trigger`: pass or wait), and its figures for the metrics.
  void note_slo(const step::StepResult& result, const char* trigger);
  void note_unseen(const std::vector<step::UnseenPod>& unseen);
  // The batch CPU the node offers never exceeds what the controller lets BE keep.
  void bound_batch_by_slo(batch::BatchResult& batch) const;
  void describe_slo(TickOutcome& outcome) const;
  std::map<std::string, uint64_t> slo_cuts_total;  // by trigger
  uint64_t slo_target_warnings_total = 0;
  uint64_t slo_targets_clamped_total = 0;
  // Each pod's bad target is logged once (again for a new value at most every 10 minutes);
  // 1024 pods is far above a node's (kubelet's default max-pods is 110).
  WarnBook slo_warned{1024, std::chrono::minutes(10)};
  bool slo_fallback = false;  // the last pass fell back to the threshold formula
  // LS pods the last pass found running unseen by the probe (logged as they come and go).
  std::set<std::string> unseen_ls_pods;
  std::optional<int64_t> slo_allowance_milli;
  // DaemonOptions::on_step and on_fast_pass (step_observer.cc): a full tick's record before
  // its writes, kept for the fast passes after it, and a fast pass's against it.
  void observe_tick(const step::TickInputs& in, const step::AgentMemory& before,
                    const qos::Plan& plan);
  void observe_fast_pass(const char* trigger, const step::FastInputs& in, SteadyTime now,
                         const qos::Plan& plan);
  struct ObservedTick {
    Json snapshot;
    step::StepRecord record;
    double now_s = 0;
  };
  std::optional<ObservedTick> observed_tick;  // the last tick, CPU measured
  // GET /debug/snapshot: the last calculation's snapshot as `gleaner-agent calc --snapshot`
  // reads it (shareable_snapshot_json), or 503 before the first pass.
  [[nodiscard]] net::HttpReply snapshot_reply() const;
  // `full_pass`: system-config's knobs are set too (the fast path leaves them).
  exec::KnobReport apply(const qos::Plan& plan, bool full_pass = false);
  // Whether a successor adopts the values this agent set (DaemonOptions::on_stop).
  StopDecision decide_stop();
};

}  // namespace gleaner::agent
