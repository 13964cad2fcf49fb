// One sampling pass of the agent (tick), the 50 ms fast path, and applying a plan.
#include <fstream>

#include "agent/daemon/daemon_impl.h"
#include "agent/step/suppress_status.h"

namespace gleaner::agent {
namespace {

// CPU seconds and RSS of this process, for the self-cost metrics.
std::pair<double, int64_t> self_usage() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  int64_t rss = 0;
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0;
  int64_t resident = 0;
  if (statm >> size >> resident) rss = resident * ::sysconf(_SC_PAGESIZE);
  return {cpu, rss};
}

}  // namespace

void Daemon::fast_tick(const char* trigger) {
  auto& d = *impl_;
  ++d.fast_passes_total[trigger];
  const SteadyTime now = d.clock.now();
  // Without a ceiling in force (suppression off, or an onInterference ceiling disarmed)
  // there is nothing to follow at 50 ms: the full pass arms, lifts and recovers.
  if (!qos::suppress_ceiling_applies(d.step->engine().threshold(), d.step->suppress_armed())) {
    d.update_wake_bounds(std::nullopt);
    return;
  }
  auto sample = d.fast_sampler->sample(now);
  if (!sample) return;
  spdlog::debug("fast pass ({}): node {}m, non-BE {}m (counters {}m)", trigger,
                sample->node_cpu_milli, sample->non_be_cpu_milli, sample->non_be_counted_milli);
  // Re-armed from the figure this pass plans with: the counters', or a demand a wake-up
  // noted while it holds BE down (200 ms). A demand counts LS's waits for a CPU, which the
  // counters never show, so LS that stays contended, re-armed from the counters alone,
  // signalled at every 5 ms gap (141 a second on 2 CPUs; 13-17 this way). A rising surge
  // still keeps signalling: each signal's rate is what LS wants, waits included, so the
  // next bound lies one step above it, within reach while the surge grows.
  d.update_wake_bounds(sample->non_be_cpu_milli);
  // The fast path only ever reacts to the latest counters; staleness is judged by the
  // full pass, whose node facts the fast path reuses.
  const bool stale = now - d.last_full_sample > 3 * d.opt.interval;
  const step::FastInputs in{sample->node_cpu_milli, sample->non_be_cpu_milli, stale,
                            d.qos_reader.get()};
  qos::Plan plan = d.step->fast(in);
  if (d.opt.on_fast_pass) d.observe_fast_pass(trigger, in, now, plan);
  d.last_fast_sample = now;
  d.apply(plan);
}

exec::KnobReport Daemon::Impl::apply(const qos::Plan& plan, bool full_pass) {
  for (const auto& note : plan.notes)
    spdlog::debug("qos: {}", note);
  exec::KnobReport report =
      knobs->apply(plan.writes, plan.resctrl, full_pass ? &plan.system : nullptr);
  for (const auto& eviction : plan.evictions) {
    ++evictions_total[eviction.reason];
    if (api) {
      api->evict(eviction.pod, eviction.reason, opt.dry_run);
    } else {
      // Without API access (no --kubeconfig) the decision can only be logged and counted.
      spdlog::warn("{}evict {} ({}; no API server configured)",
                   opt.dry_run ? "dry-run: would " : "would ", eviction.pod, eviction.reason);
    }
  }
  return report;
}

void Daemon::Impl::schedule_next() {
  if (stopped) return;
  timer.expires_after(opt.interval);
  timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped) return;
    if (config->has_changed()) owner->reload_config();
    owner->tick();
    if (opt.max_ticks > 0 && ticks >= opt.max_ticks) {
      owner->stop();
      return;
    }
    schedule_next();
  });
}

void Daemon::Impl::refresh_pods(SteadyTime now) {
  // A pods file is cheap to check (stat) every tick; kubelet is asked every pods_refresh.
  if (have_pods && !force_pod_refresh &&
      (opt.pods_file.empty() ? now - last_pod_fetch < opt.pods_refresh : pod_source->unchanged())) {
    return;
  }
  force_pod_refresh = false;
  last_pod_fetch = now;
  auto fetched = pod_source->fetch();
  if (!fetched) {
    ++pod_list_errors;
    if (fetched.error().message != last_pod_list_error) {
      spdlog::warn("pod list from {} failed, keeping {} known pods: {}", pod_source->name(),
                   pods.size(), fetched.error().message);
      last_pod_list_error = fetched.error().message;
    } else {
      spdlog::debug("pod list from {} failed again: {}", pod_source->name(),
                    fetched.error().message);
    }
    return;
  }
  if (!last_pod_list_error.empty()) {
    spdlog::info("pod list from {} works again", pod_source->name());
    last_pod_list_error.clear();
  }
  if (fetched->empty() && !pods.empty() && opt.pods_file.empty()) {
    spdlog::warn("{} returned no pods; keeping {} known pods", pod_source->name(), pods.size());
    return;
  }
  pods.clear();
  for (auto& pod : *fetched) {
    if (pod.node_name.empty() || pod.node_name == node.metadata.name)
      pods.push_back(std::move(pod));
  }
  have_pods = true;
  // kubelet names a new pod's containers a moment after the pod: list again next pass.
  force_pod_refresh = opt.pods_file.empty() && containers_pending(pods);
}

void Daemon::tick() {
  auto& d = *impl_;
  const SteadyTime now = d.clock.now();
  const auto started = std::chrono::steady_clock::now();
  d.refresh_pods(now);
  if (d.api) {
    if (auto node = d.api->node()) d.node = std::move(*node);  // labels drive per-node config
  }

  auto node_usage = d.node_sampler->sample();
  if (!node_usage) {
    spdlog::error("node sampling failed: {}", node_usage.error().message);
    return;
  }
  std::vector<PodCgroup> cgroups;
  cgroups.reserve(d.pods.size());
  for (const auto& pod : d.pods)
    cgroups.push_back({pod.key(), d.layout->pod_dir(states::kube_qos(pod), pod.metadata.uid)});
  PodSamplingPass pass = d.pod_sampler->sample(cgroups, now);
  for (const auto& key : pass.vanished)
    d.store->drop_prefix("pod/" + key + "/");

  if (node_usage->cpu_valid)
    d.store->add("node/cpu", now, static_cast<double>(node_usage->cpu_milli));
  d.store->add("node/memory", now, static_cast<double>(node_usage->memory_bytes));
  for (const auto& s : pass.pods) {
    if (s.cpu_valid) d.store->add("pod/" + s.key + "/cpu", now, static_cast<double>(s.cpu_milli));
    d.store->add("pod/" + s.key + "/memory", now, static_cast<double>(s.memory_bytes));
  }
  d.store->drop_older_than(now, std::chrono::duration_cast<std::chrono::seconds>(kLongestWindow));

  // Usage as the batch formula reads it: the average over the aggregation window.
  auto resolved = config::resolve_colocation(d.config->current().colocation, d.node);
  const std::chrono::seconds window(
      std::max<int64_t>(resolved.strategy.metric_aggregate_duration_seconds, 1));
  SampledUsage usage;
  auto avg = [&](const std::string& series) -> int64_t {
    auto agg = d.store->aggregate(series, now, window);
    return agg ? std::llround(agg->avg) : 0;
  };
  usage.node = {avg("node/cpu"), avg("node/memory")};
  for (const auto& s : pass.pods)
    usage.pods[s.key] = {avg("pod/" + s.key + "/cpu"), avg("pod/" + s.key + "/memory")};
  auto snap = build_snapshot(d.node, d.pods, usage);
  // The NodeMetric status (percentiles over 30 minutes, every pod) is built only when one
  // is due, not on every pass.
  const std::chrono::seconds report_every(resolved.strategy.metric_report_interval_seconds);
  if (d.node_metric && now >= d.node_metric_due) {
    d.node_metric_due = now + report_every;
    std::vector<UsageWindow> windows;
    for (auto minutes : {5, 10, 30}) {
      const std::chrono::seconds w(minutes * 60);
      auto cpu = d.store->aggregate("node/cpu", now, w);
      auto memory = d.store->aggregate("node/memory", now, w);
      if (cpu && memory) windows.push_back({w, *cpu, *memory});
    }
    d.node_metric->submit(node_metric_status(snap, windows, d.clock.wall_now()), report_every,
                          resolved.strategy.metric_aggregate_duration_seconds);
  }
  // QoS acts on the latest sample (as `plan` does): the batch formula's averaging window
  // (minutes) would make suppression and eviction lag far behind the load.
  SampledUsage latest;
  latest.node = {node_usage->cpu_milli, node_usage->memory_bytes};
  for (const auto& s : pass.pods) {
    latest.pods[s.key] = {s.cpu_valid ? s.cpu_milli : usage.pods[s.key].cpu_milli, s.memory_bytes};
  }
  auto batch_result = batch::calculate_batch(snap, resolved);
  d.last_calc = batch::explain(batch_result, resolved).dump();
  d.last_full_sample = now;
  // One snapshot serves both views, which differ in their metrics only: the step sees the
  // latest sample, the report (below) the averages. Building a second one copied every
  // pod again each pass.
  snapshot::NodeMetrics averaged = std::exchange(snap.metrics, metrics_of(latest));
  const snapshot::NodeSnapshot& latest_snap = snap;
  step::ProbeReadings probe = d.read_probe(latest_snap, *node_usage);

  if (d.opt.enforce) {
    step::TickInputs in;
    in.snapshot = &latest_snap;
    in.resolve_strategies(d.config->current(), d.node.metadata.labels);
    in.layout = *d.layout;
    in.topology = d.topology;
    in.reader = d.qos_reader.get();
    in.now_s = std::chrono::duration<double>(now.time_since_epoch()).count();
    in.stale = false;  // this pass sampled just now
    // The first pass only primes the CPU counters (node and pods alike): nothing to act on.
    in.cpu_measured = node_usage->cpu_valid;
    in.probe = std::move(probe);
    in.fast_path_live = now - d.last_fast_sample < 3 * d.opt.fast_interval;
    d.warn_without_signal(in.threshold);
    // What the API server made of earlier evictions: a pod it accepted counts as going, a
    // refused one is asked for again after its back-off.
    if (d.api) {
      for (const auto& answer : d.api->take_answers()) {
        if (!answer.accepted) ++d.eviction_refusals_total;
        d.step->eviction_answered(answer.pod, answer.accepted, in.now_s);
      }
    }
    const step::AgentMemory before = d.step->memory(in.now_s);
    step::StepResult result = d.step->tick(in);
    for (const auto& event : result.events)
      spdlog::info("{}", event);
    for (const auto& detail : result.details)
      spdlog::debug("{}", detail);
    d.note_slo(result, "pass");
    if (d.opt.on_step || d.opt.on_fast_pass) d.observe_tick(in, before, result.plan);
    // A full pass also sets system-config's knobs: the ones not in this plan go back to
    // what the agent found.
    d.be_in_force = d.be_ceiling_applied(result, d.apply(result.plan, true));
    // Without the Eviction API (no --kubeconfig, or --dry-run) a decision is only logged:
    // taken as answered, so that it is logged once, not at every decision.
    if (!d.api || d.opt.dry_run) {
      for (const auto& e : result.plan.evictions)
        d.step->eviction_answered(e.pod, true, in.now_s);
    }
  }

  d.bound_batch_by_slo(batch_result);
  snap.metrics = std::move(averaged);
  const double unix_now =
      std::chrono::duration<double>(d.clock.wall_now().time_since_epoch()).count();
  TickOutcome outcome =
      describe_tick(snap, batch_result, pass, d.opt.cluster, ++d.sequence, unix_now);
  // Kept, not copied: nothing of this pass reads it after this.
  d.calc_snapshot = std::make_shared<const snapshot::NodeSnapshot>(std::move(snap));
  outcome.report.epoch = d.epoch;
  for (const auto& [resource, c] : d.knobs->counters()) {
    outcome.state.cgroup_writes_total[resource] = static_cast<uint64_t>(c.writes);
    outcome.state.cgroup_write_failures_total[resource] = static_cast<uint64_t>(c.failures);
    outcome.state.cgroup_writes_clamped_total[resource] = static_cast<uint64_t>(c.clamped);
    outcome.state.cgroup_writes_deferred_total[resource] = static_cast<uint64_t>(c.deferred);
    outcome.state.cgroup_writes_unrecorded_total[resource] = static_cast<uint64_t>(c.unrecorded);
  }
  outcome.state.config_load_errors_total = d.config->error_counts();
  outcome.state.config_key_valid = d.config->key_valid();
  outcome.state.config_warnings = d.config->warning_counts();
  outcome.state.state_file_errors_total = d.state ? d.state->errors() : 0;
  const std::string state_problem = d.state ? d.state->problem() : std::string();
  outcome.state.originals_recorded = state_problem.empty();
  d.health->set_state_problem(state_problem.empty() ? state_problem
                                                    : d.state->path() + ": " + state_problem);
  outcome.state.pod_list_errors_total = d.pod_list_errors;
  outcome.state.evictions_total = d.evictions_total;
  outcome.state.eviction_refusals_total = d.eviction_refusals_total;
  d.describe_suppress(outcome);
  d.describe_slo(outcome);
  outcome.state.ebpf_probe_loaded = d.probe != nullptr;
  outcome.state.ebpf_be_attribution = d.probe != nullptr && d.be_attribution;
  outcome.state.ebpf_wakeups_total = d.wakeups_total;
  outcome.state.fast_passes_total = d.fast_passes_total;
  if (d.probe) outcome.state.ebpf_wakeups_lost_total = d.probe->wakeups_lost();
  outcome.state.ebpf_track_failures_total = d.ebpf_track_failures_total;
  if (d.probe && d.probe->stats_enabled()) {
    if (auto costs = d.probe->program_costs()) {
      for (const auto& c : *costs) {
        outcome.state.bpf_program_costs[c.name] = {static_cast<double>(c.run_time_ns) / 1e9,
                                                   c.run_count, c.ns_per_event};
      }
    }
  }
  auto [cpu_seconds, rss] = self_usage();
  outcome.state.agent_cpu_seconds_total = cpu_seconds;
  outcome.state.agent_resident_memory_bytes = rss;
  outcome.state.suppress_reaction_seconds = std::move(d.suppress_reaction_seconds);
  d.suppress_reaction_seconds.clear();
  outcome.state.sampling_pass_seconds = {
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()};
  if (d.report_client) {
    auto stats = d.report_client->stats();
    outcome.state.report_sends_total = stats.sends_ok;
    outcome.state.report_send_failures_total = stats.sends_failed;
    d.report_client->submit(outcome.report);
  }
  if (d.node_metric) {
    const auto published = d.node_metric->stats();
    outcome.state.node_metric_updates_total = published.updates;
    outcome.state.node_metric_update_failures_total = published.failures;
  }
  if (d.metrics_server) {
    const auto http = d.metrics_server->listener_stats();
    outcome.state.http_open_connections = static_cast<int64_t>(http.open_connections);
    outcome.state.http_accept_errors_total = http.accept_errors;
    outcome.state.http_connection_cap_reached_total = http.capacity_reached;
  }
  d.registry.update(std::move(outcome.state));
  d.health->beat("sampling");
  d.health->mark_first_sample();
  ++d.ticks;
}

step::ProbeReadings Daemon::Impl::read_probe(const snapshot::NodeSnapshot& snap,
                                             const NodeUsage& node_usage) {
  step::ProbeReadings readings;
  readings.runqueue_probe = probe != nullptr;
  if (node_usage.cpu_pressure) readings.cpu_psi_some_avg10 = node_usage.cpu_pressure->some.avg10;
  runq_p99_ns.clear();
  be_runq_p99_ns.clear();
  if (!probe) return readings;
  {
    // Named each pass: the BE QoS directory may appear after the agent (kubelet creates it),
    // or be made anew under another id, which would leave no wait BE-caused and let BE grow
    // unchecked. The probe only takes a changed id; while the directory is missing the plain
    // waits steer, which errs on LS's side.
    const std::string be_dir = fs->dir_of(cgroup::Resource::kCpuShares, be_qos_dir);
    if (auto set = probe->set_be_cgroup(be_dir); set.ok()) {
      if (!be_attribution) {
        spdlog::info("eBPF: waits that end by taking the CPU from {} count as BE-caused", be_dir);
      }
      be_attribution = true;
      warned_be_attribution = false;
    } else {
      if (!warned_be_attribution) {
        spdlog::warn(
            "eBPF: no BE-caused waits while the BE cgroup is missing ({}); slo steers "
            "by all LS waits",
            set.error().describe());
      }
      be_attribution = false;
      warned_be_attribution = true;
    }
  }
  readings.be_attribution = be_attribution;
  std::set<std::string> ls_dirs;
  for (const auto& pod : snap.pods) {
    if (pod.qos == states::QoSClass::kBE) continue;
    const std::string dir = fs->dir_of(cgroup::Resource::kCpuShares,
                                       layout->pod_dir(pod.kube_qos, pod.pod.metadata.uid));
    ls_dirs.insert(dir);
    // Named each pass, as the BE directory above: a pod's cgroup made anew at the same path
    // (another id) would otherwise stay unseen, its waits read as none while BE grows. The
    // probe re-reads the id (a stat per pod on this, the slow, pass) and drops a stale one;
    // a directory not there (yet) is retried on the next pass.
    auto track = probe->track(dir);
    if (track.ok()) {
      tracked[dir] = pod.pod.key();
      continue;
    }
    tracked.erase(dir);
    if (track.error().code == ErrorCode::kNotFound) continue;
    ++ebpf_track_failures_total;
    const std::string why = track.error().describe();
    if (track_warned.should_log(pod.pod.key(), std::hash<std::string>{}(why), clock.now())) {
      spdlog::warn("eBPF: LS pod {} is not tracked, so BE holds while it runs: {}", pod.pod.key(),
                   why);
    }
  }
  for (auto it = tracked.begin(); it != tracked.end();) {
    if (ls_dirs.count(it->first)) {
      ++it;
      continue;
    }
    (void)probe->untrack(it->first);
    it = tracked.erase(it);
  }
  // What the probe saw each LS pod run; a failed sample saw none (unseen_pods.h: BE holds).
  readings.on_cpu_milli.emplace();
  if (auto interval = probe->sample()) {
    const auto elapsed_ns = interval->elapsed.count();
    for (const auto& cg : interval->cgroups) {
      auto it = tracked.find(cg.dir);
      if (it == tracked.end()) continue;
      if (elapsed_ns > 0) (*readings.on_cpu_milli)[it->second] = cg.cpu_ns * 1000 / elapsed_ns;
      if (!cg.runq_p99_ns) continue;
      runq_p99_ns[it->second] = *cg.runq_p99_ns;
      if (cg.be_runq_p99_ns) be_runq_p99_ns[it->second] = *cg.be_runq_p99_ns;
    }
  }
  readings.runq_p99_ns = runq_p99_ns;
  if (be_attribution) readings.be_runq_p99_ns = be_runq_p99_ns;
  return readings;
}

void Daemon::Impl::warn_without_signal(const config::ResourceThresholdStrategy& threshold) {
  const bool has_signal = probe != nullptr || interference.cpu_psi_some_avg10_bound.has_value();
  const bool on_interference =
      threshold.enable && threshold.cpu_suppress_mode == config::CpuSuppressMode::kOnInterference;
  if (on_interference && !has_signal && !warned_no_signal) {
    spdlog::warn(
        "cpuSuppressMode onInterference needs an interference signal (eBPF run-queue "
        "sampling or --interference-psi-bound); none is available, so the suppress ceiling "
        "stays in force as in mode always");
    warned_no_signal = true;
  }
}

step::BeCeiling Daemon::Impl::be_ceiling_applied(const step::StepResult& result,
                                                 const exec::KnobReport& applied) const {
  step::BeCeiling in_force = result.be_read;
  if (opt.dry_run) return in_force;  // nothing was written
  // Each write as made, in order: under an ancestor's limit it may be clamped below the
  // plan. One skipped because the file held the value already leaves the value read.
  const step::BeCeilingFiles files{
      fs->path_of(cgroup::Resource::kCpuQuota, be_qos_dir).value_or(""),
      fs->path_of(cgroup::Resource::kCpusetCpus, be_qos_dir).value_or(""), version};
  for (const auto& c : applied.written) {
    if (c.kind == exec::KnobKind::kCgroup)
      step::note_be_file_write(in_force, files, c.path, c.value);
  }
  return in_force;
}

void Daemon::Impl::describe_suppress(TickOutcome& outcome) {
  for (auto& pod : outcome.state.pods) {
    auto it = runq_p99_ns.find(pod.namespace_name + "/" + pod.name);
    if (it != runq_p99_ns.end()) {
      pod.runqueue_latency_p99_us = static_cast<int64_t>(it->second / 1000);
    }
  }
  for (const auto& [key, p99] : runq_p99_ns) {
    auto slash = key.find('/');
    reporter::LsPodInterference entry;
    entry.pod = {key.substr(0, slash), key.substr(slash + 1), ""};
    entry.runqueue_latency_p99_us = static_cast<int64_t>(p99 / 1000);
    outcome.report.interference.push_back(entry);
  }
  const step::SuppressStatus status =
      step::suppress_status(config->current().threshold.for_node(node.metadata.labels),
                            be_in_force.value_or(step::BeCeiling{}), node_sampler->cpus());
  const reporter::SuppressState s{status.active, status.policy, status.be_cpu_limit_millicores};
  outcome.state.suppress = s;
  outcome.report.suppress = s;
}

}  // namespace gleaner::agent
