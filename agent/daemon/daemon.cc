#include "agent/daemon/daemon.h"

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
#include "agent/daemon/handover.h"
#include "agent/daemon/node_view.h"
#include "agent/daemon/pod_source.h"
#include "agent/metrics/fast_sampler.h"
#include "agent/metrics/metric_store.h"
#include "agent/metrics/node_sampler.h"
#include "agent/metrics/pod_sampler.h"
#include "agent/qos/cpu_topology.h"
#include "agent/qos/fs_reader.h"
#include "agent/qos/qos_engine.h"
#include "agent/qos/resctrl_qos.h"
#include "agent/step/agent_step.h"
#include "agent/step/step_record.h"
#include "cgroup/cgroup_fs.h"
#include "cgroup/executor.h"
#include "cgroup/layout.h"
#include "cgroup/originals_file.h"
#include "common/file_io.h"
#include "common/json_util.h"
#include "reporter/client/report_client.h"
#include "reporter/metrics/health.h"
#include "reporter/metrics/metrics_registry.h"
#include "reporter/metrics/metrics_server.h"
#include "reporter/metrics/routes.h"
#include "resctrl/availability.h"
#include "resctrl/resctrl_fs.h"

namespace gleaner::agent {
namespace {

constexpr std::chrono::minutes kLongestWindow{30};

cgroup::KubeQos to_cgroup_qos(states::KubeQoS qos) {
  switch (qos) {
    case states::KubeQoS::kGuaranteed:
      return cgroup::KubeQos::kGuaranteed;
    case states::KubeQoS::kBurstable:
      return cgroup::KubeQos::kBurstable;
    case states::KubeQoS::kBestEffort:
      return cgroup::KubeQos::kBestEffort;
  }
  return cgroup::KubeQos::kBestEffort;
}

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof(buf) - 1) == 0 ? std::string(buf) : "localhost";
}

// A Node for machines without an API server: capacity = allocatable = the machine.
Result<kube::Node> machine_node(const std::string& name, int cpus, int64_t memory_bytes) {
  Json raw = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}}},
      {"status",
       {{"capacity", {{"cpu", std::to_string(cpus)}, {"memory", std::to_string(memory_bytes)}}},
        {"allocatable",
         {{"cpu", std::to_string(cpus)}, {"memory", std::to_string(memory_bytes)}}}}}};
  return kube::parse_node(raw);
}

Result<kube::Node> load_node_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  auto json = parse_json(*text, path);
  if (!json) return json.error();
  auto node = kube::parse_node(*json);
  if (!node) return make_error(node.error().code, path + ": " + node.error().message);
  return node;
}

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

// Mounts resctrl where the CPU has RDT allocation and nobody mounted it (as koordlet does);
// says which of "not mounted", "no RDT" and "no kernel support" applies otherwise.
void prepare_resctrl(const DaemonOptions& opt) {
  const bool mounted = resctrl::ResctrlFs(opt.resctrl_root).detect().ok();
  auto cpuinfo = read_file(join_path(opt.proc_root, "cpuinfo"));
  auto availability = resctrl::classify(is_directory(opt.resctrl_root), mounted,
                                        cpuinfo ? *cpuinfo : std::string());
  if (availability == resctrl::Availability::kMounted) return;
  if (availability != resctrl::Availability::kNotMounted || !opt.resctrl_mount || opt.dry_run) {
    spdlog::info("resctrl at {}: {}; resctrl QoS off", opt.resctrl_root,
                 resctrl::describe(availability));
    return;
  }
  if (auto done = resctrl::mount_resctrl(opt.resctrl_root); !done) {
    spdlog::warn("resctrl at {}: {}, and mounting it failed ({}); resctrl QoS off",
                 opt.resctrl_root, resctrl::describe(availability), done.error().describe());
    return;
  }
  spdlog::info("resctrl mounted at {}", opt.resctrl_root);
}

}  // namespace

struct Daemon::Impl {
  boost::asio::io_context& io;
  DaemonOptions opt;
  SystemClock clock;
  cgroup::CgroupVersion version = cgroup::CgroupVersion::kV1;
  std::optional<cgroup::KubeletLayout> layout;
  std::unique_ptr<cgroup::CgroupFs> fs;
  std::unique_ptr<cgroup::WriteExecutor> executor;
  std::unique_ptr<cgroup::OriginalsFile> originals_file;  // null: originals not recorded
  uint64_t state_file_errors = 0;
  uint64_t resctrl_persist_failures = 0;           // resctrl changes not on record: never hand over
  std::unique_ptr<resctrl::ResctrlFs> resctrl_fs;  // null: no resctrl on this node
  std::unique_ptr<qos::ResctrlExecutor> resctrl_executor;
  std::unique_ptr<qos::FsQosReader> qos_reader;
  std::unique_ptr<step::AgentStep> step;
  std::optional<qos::CpuTopology> topology;
  std::unique_ptr<FastSampler> fast_sampler;
  boost::asio::steady_timer fast_timer;
  SteadyTime last_full_sample{};
  std::map<std::string, uint64_t> evictions_total;
  std::unique_ptr<ApiLink> api;
  std::optional<CgroupWatch> cgroup_watch;
  std::unique_ptr<boost::asio::posix::stream_descriptor> watch_descriptor;
  bool force_pod_refresh = false;
  SteadyTime last_fast_sample{};
  std::unique_ptr<bpf::SchedProbe> probe;
  bpf::InterferenceConfig interference;
  bool warned_no_signal = false;
  std::map<std::string, std::string> tracked;  // cgroup dir -> pod key, for LS pods
  std::map<std::string, double> runq_p99_ns;   // pod key -> this interval's p99
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
  reporter::MetricsRegistry registry;
  std::unique_ptr<reporter::HealthMonitor> health;
  std::unique_ptr<reporter::MetricsServer> metrics_server;
  std::unique_ptr<reporter::ReportClient> report_client;
  boost::asio::steady_timer timer;
  uint64_t sequence = 0;
  int ticks = 0;
  bool stopped = false;
  std::string last_calc;
  std::vector<double> pass_seconds;
  Daemon* owner = nullptr;
  std::function<void()> on_stop;

  Impl(boost::asio::io_context& io_ctx, DaemonOptions o)
      : io(io_ctx), opt(std::move(o)), fast_timer(io_ctx), timer(io_ctx) {}

  void refresh_pods(SteadyTime now);
  void schedule_next();
  void schedule_fast();
  void wait_for_cgroup_change();
  void describe_suppress(TickOutcome& outcome);
  // The interference signals of this tick: LS pods tracked by the eBPF probe (their
  // run-queue p99 over the interval) and the node's cpu PSI.
  step::ProbeReadings read_probe(const snapshot::NodeSnapshot& snap, const NodeUsage& node_usage);
  // Warns once when cpuSuppressMode onInterference has no signal to act on.
  void warn_without_signal(const config::ResourceThresholdStrategy& threshold);
  void apply(const qos::Plan& plan);
  // Adopts the originals an earlier run recorded and records every new one before it is
  // overwritten (DaemonOptions::state_dir).
  void record_originals();
  void adopt_resctrl(const Json& sections);
  Status save_state(const cgroup::Originals& cgroups, const qos::ResctrlOriginals& resctrl);
  // Whether a successor adopts the values this agent set (DaemonOptions::on_stop).
  StopDecision decide_stop();
};

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  impl_->owner = this;
}
Daemon::~Daemon() = default;

Result<std::unique_ptr<Daemon>> Daemon::create(boost::asio::io_context& io, DaemonOptions options) {
  auto impl = std::make_unique<Impl>(io, std::move(options));
  auto& d = *impl;
  if (d.opt.node_name.empty()) d.opt.node_name = host_name();

  std::optional<cgroup::CgroupVersion> forced;
  if (!d.opt.cgroup_version.empty()) {
    auto v = cgroup::parse_version(d.opt.cgroup_version);
    if (!v) return v.error();
    forced = *v;
  }
  auto version = cgroup::detect_version(d.opt.cgroup_root, forced);
  if (!version) return version.error();
  d.version = *version;
  d.fs = std::make_unique<cgroup::CgroupFs>(d.opt.cgroup_root, d.version);
  d.executor = std::make_unique<cgroup::WriteExecutor>(*d.fs, d.opt.dry_run);

  const std::string cpu_root = d.fs->dir_of(cgroup::Resource::kCpuShares, "");
  if (!d.opt.cgroup_driver.empty()) {
    auto driver = cgroup::parse_driver(d.opt.cgroup_driver);
    if (!driver) return driver.error();
    d.layout.emplace(*driver, d.opt.cgroup_parent);
  } else if (auto driver = cgroup::detect_driver(cpu_root, d.opt.cgroup_parent)) {
    d.layout.emplace(*driver, d.opt.cgroup_parent);
  } else {
    spdlog::warn("{}; assuming cgroupfs until kubepods appears", driver.error().message);
    d.layout.emplace(cgroup::CgroupDriver::kCgroupfs, d.opt.cgroup_parent);
  }

  prepare_resctrl(d.opt);
  if (resctrl::ResctrlFs rdt(d.opt.resctrl_root); rdt.detect().ok()) {
    d.resctrl_fs = std::make_unique<resctrl::ResctrlFs>(d.opt.resctrl_root);
    d.resctrl_executor = std::make_unique<qos::ResctrlExecutor>(*d.resctrl_fs, d.opt.dry_run);
  }
  d.record_originals();
  d.qos_reader = std::make_unique<qos::FsQosReader>(*d.fs, d.resctrl_fs.get());
  if (auto topo = qos::read_cpu_topology(d.opt.sys_root)) d.topology = std::move(*topo);

  d.node_sampler = std::make_unique<NodeSampler>(d.opt.proc_root);
  d.be_qos_dir = d.layout->qos_dir(cgroup::KubeQos::kBestEffort);
  auto interference = bpf::parse_interference_config(
      d.opt.interference_runq_p99_bound, d.opt.interference_hold, d.opt.interference_psi_bound);
  if (!interference) return interference.error();
  if (d.opt.ebpf) {
    bpf::SchedProbeOptions probe_options;
    probe_options.cgroup_root = d.opt.cgroup_root;
    probe_options.v1_cpu_controller = d.version != cgroup::CgroupVersion::kV2;
    probe_options.enable_stats = d.opt.bpf_stats;
    if (auto probe = bpf::SchedProbe::open(probe_options)) {
      d.probe = std::move(*probe);
    } else {
      spdlog::warn("eBPF run-queue sampling off ({}); interference from PSI only",
                   probe.error().describe());
    }
  }
  d.interference = *interference;
  d.step = std::make_unique<step::AgentStep>(*interference, *d.layout, d.node_sampler->cpus());
  d.fast_sampler =
      std::make_unique<FastSampler>(*d.fs, *d.layout, d.opt.proc_root, d.node_sampler->cpus());
  d.pod_sampler = std::make_unique<PodSampler>(*d.fs);
  auto slots = static_cast<size_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(kLongestWindow).count() /
      std::max<int64_t>(d.opt.interval.count(), 1));
  d.store = std::make_unique<MetricStore>(d.clock.now(), std::max<size_t>(slots, 2));

  if (!d.opt.pods_file.empty()) {
    d.pod_source = std::make_unique<PodsFileSource>(d.opt.pods_file);
  } else if (!d.opt.kubelet_host.empty()) {
    kube::KubeletOptions k;
    k.host = d.opt.kubelet_host;
    k.port = static_cast<uint16_t>(d.opt.kubelet_port);
    k.https = d.opt.kubelet_https;
    d.pod_source = std::make_unique<KubeletPodSource>(std::move(k));
  } else {
    d.pod_source = std::make_unique<CgroupTreePodSource>(cpu_root, *d.layout);
  }

  if (!d.opt.kubeconfig.empty()) {
    kube::KubeFlags flags;
    if (d.opt.kubeconfig != "in-cluster") flags.kubeconfig = d.opt.kubeconfig;
    auto config = kube::resolve_config(flags, kube::process_env);
    if (!config) return config.error();
    d.api = std::make_unique<ApiLink>(std::move(*config), d.opt.node_name);
    if (!d.api->wait_for_node(std::chrono::seconds(10))) {
      return make_error(ErrorCode::kUnavailable,
                        "Node " + d.opt.node_name + " not found on the API server within 10s");
    }
    d.node = *d.api->node();
  } else if (!d.opt.node_file.empty()) {
    auto node = load_node_file(d.opt.node_file);
    if (!node) return node.error();
    d.node = std::move(*node);
  } else {
    // A sampler of its own: priming the agent's would make the first pass's node CPU
    // cover a few milliseconds while its pods' figures do not exist yet.
    auto first = NodeSampler(d.opt.proc_root).sample();
    if (!first) return first.error();
    auto node = machine_node(d.opt.node_name, d.node_sampler->cpus(), first->memory_total_bytes);
    if (!node) return node.error();
    d.node = std::move(*node);
  }

  d.config = std::make_unique<config::ConfigLoader>(d.opt.config_dir);
  d.health = std::make_unique<reporter::HealthMonitor>(d.clock, d.opt.interval * 5);
  d.health->register_loop("sampling");

  if (!d.opt.metrics_addr.empty()) {
    auto* impl_ptr = impl.get();
    auto server = reporter::MetricsServer::create(
        io, d.opt.metrics_addr, [impl_ptr](std::string_view method, std::string_view target) {
          return reporter::route_request(method, target, impl_ptr->registry, *impl_ptr->health);
        });
    if (!server) return server.error();
    d.metrics_server = std::move(*server);
  }
  if (!d.opt.scheduler_url.empty()) {
    reporter::ReportClientOptions r;
    r.scheduler_url = d.opt.scheduler_url;
    r.token_file = d.opt.token_file;
    auto client = reporter::ReportClient::create(io, d.clock, std::move(r));
    if (!client) return client.error();
    d.report_client = std::move(*client);
  }
  return std::unique_ptr<Daemon>(new Daemon(std::move(impl)));
}

std::string Daemon::describe() const {
  const auto& d = *impl_;
  auto rdt = resctrl::ResctrlFs(d.opt.resctrl_root).detect();
  return fmt::format(
      "gleaner-agent on node {}: cgroup {} at {}, kubelet driver {}, pods from {}, PSI {}, BTF {}, "
      "resctrl {}, interval {}ms{}",
      d.node.metadata.name, cgroup::to_string(d.version), d.opt.cgroup_root,
      cgroup::to_string(d.layout->driver()), d.pod_source->name(),
      d.node_sampler->has_psi() ? "yes" : "no",
      path_exists("/sys/kernel/btf/vmlinux") ? "yes" : "no", rdt.ok() ? "yes" : "no",
      d.opt.interval.count(), d.opt.dry_run ? ", dry-run" : "");
}

uint16_t Daemon::metrics_port() const {
  return impl_->metrics_server ? impl_->metrics_server->port() : 0;
}

std::string Daemon::last_calc_json() const {
  return impl_->last_calc;
}

void Daemon::reload_config() {
  auto errors = impl_->config->reload();
  for (const auto& e : errors)
    spdlog::error("ack-slo-config {}: {}", e.key, e.error.message);
  impl_->health->mark_config_loaded();
}

void Daemon::start() {
  reload_config();
  if (impl_->report_client) impl_->report_client->start();
  tick();
  impl_->schedule_next();
  if (impl_->opt.enforce && impl_->opt.fast_interval.count() > 0) impl_->schedule_fast();
  auto& d = *impl_;
  std::vector<std::string> qos_dirs;
  for (auto qos :
       {cgroup::KubeQos::kGuaranteed, cgroup::KubeQos::kBurstable, cgroup::KubeQos::kBestEffort}) {
    qos_dirs.push_back(d.fs->dir_of(cgroup::Resource::kCpuShares, d.layout->qos_dir(qos)));
  }
  if (auto watch = CgroupWatch::open(qos_dirs)) {
    d.cgroup_watch.emplace(std::move(*watch));
    d.watch_descriptor =
        std::make_unique<boost::asio::posix::stream_descriptor>(d.io, ::dup(d.cgroup_watch->fd()));
    d.wait_for_cgroup_change();
  } else {
    spdlog::info("no inotify on QoS directories ({}); pods are re-listed every {}s",
                 watch.error().message, d.opt.pods_refresh.count());
  }
}

void Daemon::Impl::record_originals() {
  if (opt.state_dir.empty() || opt.dry_run) return;
  originals_file = std::make_unique<cgroup::OriginalsFile>(
      join_path(opt.state_dir, "originals.json"), cgroup::read_boot_id(opt.proc_root));
  auto loaded = originals_file->load();
  if (loaded) {
    if (loaded->other_boot) {
      spdlog::info("{}: recorded before the last reboot, nothing to restore",
                   originals_file->path());
      (void)originals_file->remove();
    } else {
      if (!loaded->originals.empty()) {
        spdlog::info(
            "{}: adopting {} original values recorded by an earlier run (restored on stop "
            "instead of the values found now)",
            originals_file->path(), loaded->originals.size());
        executor->adopt_originals(std::move(loaded->originals));
      }
      adopt_resctrl(loaded->sections);
    }
  } else if (loaded.error().code != ErrorCode::kNotFound) {
    ++state_file_errors;
    spdlog::warn(
        "{}; set aside as {}.corrupt: values found now are taken as originals, which may be an "
        "earlier agent's own",
        loaded.error().describe(), originals_file->path());
    (void)originals_file->set_aside();
  }
  executor->set_persist([this](const cgroup::Originals& originals) {
    return save_state(originals,
                      resctrl_executor ? resctrl_executor->originals() : qos::ResctrlOriginals{});
  });
  if (resctrl_executor) {
    resctrl_executor->set_persist([this](const qos::ResctrlOriginals& resctrl) {
      if (!save_state(executor->originals(), resctrl)) ++resctrl_persist_failures;
    });
  }
}

void Daemon::Impl::adopt_resctrl(const Json& sections) {
  auto it = sections.find("resctrl");
  if (it == sections.end()) return;
  auto earlier = qos::parse_resctrl_originals(*it, originals_file->path());
  if (!earlier) {
    ++state_file_errors;
    spdlog::warn("{}; resctrl is restored from the values found now", earlier.error().describe());
    return;
  }
  if (!resctrl_executor) {
    spdlog::warn("{}: resctrl changes on record but resctrl is not available here; left as is",
                 originals_file->path());
    return;
  }
  resctrl_executor->adopt(*earlier);
}

Status Daemon::Impl::save_state(const cgroup::Originals& cgroups,
                                const qos::ResctrlOriginals& resctrl) {
  Json sections = Json::object();
  if (!resctrl.empty()) sections["resctrl"] = qos::resctrl_originals_json(resctrl);
  auto saved = originals_file->save(cgroups, sections);
  if (!saved) ++state_file_errors;
  return saved;
}

StopDecision Daemon::Impl::decide_stop() {
  if (opt.on_stop != "auto" || opt.dry_run) return {};
  if (!api || opt.pod_name.empty() || opt.pod_namespace.empty()) return {};
  if (!originals_file || executor->persist_failures() > 0 || resctrl_persist_failures > 0) {
    return {false, "the original values are not all on record"};
  }
  if (executor->originals().empty() &&
      (!resctrl_executor || resctrl_executor->originals().empty())) {
    return {};
  }
  auto pod = api->fetch(kube::pod_path(opt.pod_namespace, opt.pod_name));
  if (!pod) return {false, "cannot read this agent's Pod: " + pod.error().describe()};
  std::optional<Json> daemon_set;
  if (*pod) {
    const std::string owner = owning_daemon_set(**pod);
    if (!owner.empty()) {
      auto ds = api->fetch(kube::daemon_set_path(opt.pod_namespace, owner));
      if (!ds) return {false, "cannot read DaemonSet " + owner + ": " + ds.error().describe()};
      daemon_set = std::move(*ds);
    }
  }
  return decide_on_stop(*pod, daemon_set, node.metadata.labels);
}

void Daemon::Impl::wait_for_cgroup_change() {
  watch_descriptor->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                               [this](const boost::system::error_code& ec) {
                                 if (ec || stopped) return;
                                 if (cgroup_watch->drain()) {
                                   // A pod cgroup appeared or went: re-list pods now, and act on it
                                   // at once.
                                   force_pod_refresh = true;
                                   owner->tick();
                                 }
                                 wait_for_cgroup_change();
                               });
}

void Daemon::Impl::schedule_fast() {
  if (stopped) return;
  fast_timer.expires_after(opt.fast_interval);
  fast_timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped) return;
    owner->fast_tick();
    schedule_fast();
  });
}

void Daemon::fast_tick() {
  auto& d = *impl_;
  const SteadyTime now = d.clock.now();
  // Without a ceiling in force (suppression off, or an onInterference ceiling disarmed)
  // there is nothing to follow at 50 ms: the full pass arms, lifts and recovers.
  if (!qos::suppress_ceiling_applies(d.step->engine().threshold(), d.step->suppress_armed())) {
    return;
  }
  auto sample = d.fast_sampler->sample(now);
  if (!sample) return;
  // The fast path only ever reacts to the latest counters; staleness is judged by the
  // full pass, whose node facts the fast path reuses.
  const bool stale = now - d.last_full_sample > 3 * d.opt.interval;
  qos::Plan plan =
      d.step->fast({sample->node_cpu_milli, sample->non_be_cpu_milli, stale, d.qos_reader.get()});
  d.last_fast_sample = now;
  d.apply(plan);
}

void Daemon::Impl::apply(const qos::Plan& plan) {
  for (const auto& note : plan.notes)
    spdlog::debug("qos: {}", note);
  if (!plan.writes.empty()) executor->apply(plan.writes);
  if (!plan.resctrl.empty() && resctrl_executor) resctrl_executor->apply(plan.resctrl);
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
}

void Daemon::Impl::schedule_next() {
  if (stopped) return;
  timer.expires_after(opt.interval);
  timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped) return;
    if (config->has_changed()) {
      for (const auto& e : config->reload()) {
        spdlog::error("ack-slo-config {}: {}", e.key, e.error.message);
      }
    }
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
  if (have_pods && !force_pod_refresh && opt.pods_file.empty() &&
      now - last_pod_fetch < opt.pods_refresh) {
    return;
  }
  force_pod_refresh = false;
  last_pod_fetch = now;
  auto fetched = pod_source->fetch();
  if (!fetched) {
    spdlog::warn("pod list from {} failed, keeping {} known pods: {}", pod_source->name(),
                 pods.size(), fetched.error().message);
    return;
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
  for (const auto& pod : d.pods) {
    auto classified = snapshot::classify_pod(pod);
    cgroups.push_back(
        {pod.key(), d.layout->pod_dir(to_cgroup_qos(classified.kube_qos), pod.metadata.uid)});
  }
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
  // QoS acts on the latest sample (as `plan` does): the batch formula's averaging window
  // (minutes) would make suppression and eviction lag far behind the load.
  SampledUsage latest;
  latest.node = {node_usage->cpu_milli, node_usage->memory_bytes};
  for (const auto& s : pass.pods) {
    latest.pods[s.key] = {s.cpu_valid ? s.cpu_milli : usage.pods[s.key].cpu_milli, s.memory_bytes};
  }
  auto latest_snap = build_snapshot(d.node, d.pods, latest);
  auto batch_result = batch::calculate_batch(snap, resolved);
  d.last_calc = batch::explain(batch_result, resolved).dump();
  d.last_full_sample = now;
  step::ProbeReadings probe = d.read_probe(latest_snap, *node_usage);

  if (d.opt.enforce) {
    step::TickInputs in;
    in.latest = &latest_snap;
    in.threshold = d.config->current().threshold.for_node(d.node.metadata.labels);
    in.qos = d.config->current().qos.for_node(d.node.metadata.labels);
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
    const step::AgentMemory before = d.step->memory();
    step::StepResult result = d.step->tick(in);
    for (const auto& event : result.events)
      spdlog::info("{}", event);
    if (d.opt.on_step) {
      StepObservation seen;
      seen.snapshot_file = snapshot::to_snapshot_json(latest_snap);
      step::add_step_record(seen.snapshot_file, {in.probe, before, in.fast_path_live}, in.now_s);
      seen.writes = d.executor->plan(result.plan.writes);
      for (const auto& e : result.plan.evictions)
        seen.evictions.push_back(e.pod);
      seen.cpu_measured = in.cpu_measured;
      d.opt.on_step(seen);
    }
    d.apply(result.plan);
  }

  const double unix_now =
      std::chrono::duration<double>(d.clock.wall_now().time_since_epoch()).count();
  TickOutcome outcome =
      describe_tick(snap, batch_result, pass, d.opt.cluster, ++d.sequence, unix_now);
  for (const auto& [resource, c] : d.executor->counters()) {
    outcome.state.cgroup_writes_total[resource] = static_cast<uint64_t>(c.writes);
    outcome.state.cgroup_write_failures_total[resource] = static_cast<uint64_t>(c.failures);
    outcome.state.cgroup_writes_clamped_total[resource] = static_cast<uint64_t>(c.clamped);
    outcome.state.cgroup_writes_deferred_total[resource] = static_cast<uint64_t>(c.deferred);
  }
  outcome.state.config_load_errors_total = d.config->error_counts();
  outcome.state.state_file_errors_total = d.state_file_errors;
  outcome.state.evictions_total = d.evictions_total;
  d.describe_suppress(outcome);
  outcome.state.ebpf_probe_loaded = d.probe != nullptr;
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
  outcome.state.sampling_pass_seconds = {
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()};
  if (d.report_client) {
    auto stats = d.report_client->stats();
    outcome.state.report_sends_total = stats.sends_ok;
    outcome.state.report_send_failures_total = stats.sends_failed;
    d.report_client->submit(outcome.report);
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
  if (!probe) return readings;
  std::set<std::string> ls_dirs;
  for (const auto& pod : snap.pods) {
    if (pod.qos == states::QoSClass::kBE) continue;
    const std::string dir =
        fs->dir_of(cgroup::Resource::kCpuShares,
                   layout->pod_dir(to_cgroup_qos(pod.kube_qos), pod.pod.metadata.uid));
    ls_dirs.insert(dir);
    if (!tracked.count(dir) && probe->track(dir).ok()) tracked[dir] = pod.pod.key();
  }
  for (auto it = tracked.begin(); it != tracked.end();) {
    if (ls_dirs.count(it->first)) {
      ++it;
      continue;
    }
    (void)probe->untrack(it->first);
    it = tracked.erase(it);
  }
  if (auto interval = probe->sample()) {
    for (const auto& cg : interval->cgroups) {
      auto it = tracked.find(cg.dir);
      if (it == tracked.end() || !cg.runq_p99_ns) continue;
      runq_p99_ns[it->second] = *cg.runq_p99_ns;
    }
  }
  readings.runq_p99_ns = runq_p99_ns;
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
  const auto threshold = config->current().threshold.for_node(node.metadata.labels);
  reporter::SuppressState s;
  if (!threshold.enable) {
    s.policy = "none";
  } else if (threshold.cpu_suppress_policy == config::CpuSuppressPolicy::kCfsQuota) {
    s.policy = "cfsQuota";
    auto quota = fs->read_int(cgroup::Resource::kCpuQuota, be_qos_dir);
    auto period = fs->read_int(cgroup::Resource::kCpuPeriod, be_qos_dir);
    if (quota && period && *quota > 0 && *period > 0) {
      s.active = true;
      s.be_cpu_limit_millicores = *quota * 1000 / *period;
    }
  } else {
    s.policy = "cpuset";
    auto cpuset = fs->read_cpuset(be_qos_dir);
    if (cpuset && !cpuset->empty() && static_cast<int>(cpuset->size()) < node_sampler->cpus()) {
      s.active = true;
      s.be_cpu_limit_millicores = static_cast<int64_t>(cpuset->size()) * 1000;
    }
  }
  outcome.state.suppress = s;
  outcome.report.suppress = s;
}

void Daemon::stop() {
  auto& d = *impl_;
  if (d.stopped) return;
  d.stopped = true;
  d.timer.cancel();
  d.fast_timer.cancel();
  if (d.watch_descriptor) d.watch_descriptor->close();
  const StopDecision decision = d.decide_stop();
  if (decision.hand_over) {
    // The values stay in force and on record; the next agent adopts the record and
    // restores from it when it is the one that goes for good.
    spdlog::info("{}: leaving {} cgroup values in force for the next agent ({})", decision.why,
                 d.executor->originals().size(), d.originals_file->path());
    d.executor->release_originals();
    if (d.resctrl_executor) d.resctrl_executor->release();
    if (d.report_client) d.report_client->stop();
    if (d.metrics_server) d.metrics_server->stop();
    if (d.on_stop) d.on_stop();
    return;
  }
  if (!decision.why.empty()) spdlog::info("restoring on stop: {}", decision.why);
  // Safety first: put back every resctrl and cgroup value this agent changed.
  qos::ResctrlApplyReport resctrl_back;
  if (d.resctrl_executor) {
    resctrl_back = d.resctrl_executor->restore_all();
    for (const auto& e : resctrl_back.failed)
      spdlog::warn("resctrl restore: {}", e.describe());
  }
  auto restored = d.executor->restore_all();
  spdlog::info("restored {} cgroup values ({} failed) and {} resctrl changes ({} failed)",
               restored.written.size(), restored.failed.size(), resctrl_back.written,
               resctrl_back.failed.size());
  if (d.originals_file) {
    const bool all_back =
        resctrl_back.failed.empty() &&
        std::all_of(restored.failed.begin(), restored.failed.end(),
                    [](const auto& f) { return f.second.code == ErrorCode::kNotFound; });
    // Kept when something could not be put back: the next start adopts and retries it.
    if (all_back) (void)d.originals_file->remove();
  }
  if (d.report_client) d.report_client->stop();
  if (d.metrics_server) d.metrics_server->stop();
  if (d.on_stop) d.on_stop();
}

void Daemon::set_on_stop(std::function<void()> callback) {
  impl_->on_stop = std::move(callback);
}

}  // namespace gleaner::agent
