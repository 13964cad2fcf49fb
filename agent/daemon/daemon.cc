#include "agent/daemon/daemon.h"

#include "agent/daemon/daemon_impl.h"
#include "agent/daemon/descriptor_limit.h"
#include "agent/edge/node_environment.h"
#include "agent/qos/kubelet_values.h"
#include "common/json_util.h"
#include "common/strings.h"

namespace gleaner::agent {
namespace {

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

const Clock& system_clock() {
  static const SystemClock clock;
  return clock;
}

}  // namespace

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  impl_->owner = this;
}
Daemon::~Daemon() = default;

Result<std::unique_ptr<Daemon>> Daemon::create(boost::asio::io_context& io, DaemonOptions options,
                                               DaemonDeps deps) {
  auto impl = std::make_unique<Impl>(io, std::move(options),
                                     deps.clock != nullptr ? *deps.clock : system_clock());
  auto& d = *impl;
  d.own_timers = deps.own_timers;
  if (d.opt.node_name.empty()) d.opt.node_name = host_name();

  // resctrl mounted first (when asked), so that discovery finds it.
  prepare_resctrl(d.opt.resctrl_root, d.opt.proc_root, d.opt.resctrl_mount && !d.opt.dry_run);
  auto env = edge::discover_environment(edge::EnvironmentFlags{
      .cgroup_root = d.opt.cgroup_root,
      .cgroup_version = d.opt.cgroup_version,
      .cgroup_driver = d.opt.cgroup_driver,
      .cgroup_parent = d.opt.cgroup_parent,
      .resctrl_root = d.opt.resctrl_root,
      .sys_root = d.opt.sys_root,
  });
  if (!env) return env.error();
  d.version = env->version;
  d.fs = std::make_unique<cgroup::CgroupFs>(d.opt.cgroup_root, d.version);
  d.fs->set_descriptor_cap(raise_descriptor_limit(cgroup::CgroupFs::kDefaultDescriptorCap));
  if (!env->driver) {
    spdlog::warn("{}; assuming cgroupfs until kubepods appears", env->driver_problem);
  }
  d.layout.emplace(env->driver.value_or(cgroup::CgroupDriver::kCgroupfs), d.opt.cgroup_parent);
  // kubepods outlives every pod: a file missing there is one this kernel does not offer.
  d.fs->judge_offers_in(d.layout->kubepods_dir());
  if (env->resctrl) d.resctrl_fs = std::make_unique<resctrl::ResctrlFs>(d.opt.resctrl_root);
  d.knobs = std::make_unique<exec::KnobExecutor>(*d.fs, d.resctrl_fs.get(), d.opt.proc_root,
                                                 d.opt.sys_root, d.opt.dry_run);
  if (!d.opt.state_dir.empty() && !d.opt.dry_run) {
    d.state = std::make_unique<StateRecord>(d.opt.state_dir, d.opt.proc_root, *d.knobs);
    if (d.state->lost()) {
      d.knobs->cgroups().set_lost_record([&d](cgroup::Resource r, const std::string& cg) {
        std::string cpus;
        if (r == cgroup::Resource::kCpusetCpus) {
          auto found = d.fs->read_raw(cgroup::Resource::kCpusetEffective, d.layout->kubepods_dir());
          if (found) cpus = std::string(trim(*found));
        }
        return qos::kubelet_value(r, cg, qos::KubeletScene{*d.layout, d.pods, cpus});
      });
    }
  }
  d.qos_reader = std::make_unique<edge::FsQosReader>(*d.fs, d.resctrl_fs.get());
  if (env->topology) d.topology = std::move(*env->topology);

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
    auto probe =
        deps.open_probe ? deps.open_probe(probe_options) : bpf::open_runq_probe(probe_options);
    if (probe) {
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
    k.verify_tls = !d.opt.kubelet_insecure_tls;
    k.ca_file = d.opt.kubelet_ca_file;
    if (k.https && !k.verify_tls) {
      spdlog::warn(
          "--kubelet-insecure-tls: kubelet's certificate is not verified; the "
          "ServiceAccount token goes to whoever answers at {}:{}",
          k.host, k.port);
    }
    d.pod_source = std::make_unique<KubeletPodSource>(std::move(k), d.clock);
  } else {
    d.pod_source = std::make_unique<CgroupTreePodSource>(env->cpu_root, *d.layout);
  }

  if (!d.opt.kubeconfig.empty()) {
    kube::KubeFlags flags;
    if (d.opt.kubeconfig != "in-cluster") flags.kubeconfig = d.opt.kubeconfig;
    auto config = kube::resolve_config(flags, kube::process_env);
    if (!config) return config.error();
    if (d.opt.node_metric && !d.opt.dry_run)
      d.node_metric = std::make_unique<NodeMetricPublisher>(*config, d.opt.node_name);
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
          if (target.substr(0, target.find('?')) == "/debug/snapshot" &&
              (method == "GET" || method == "HEAD")) {
            return impl_ptr->snapshot_reply();
          }
          return reporter::route_request(method, target, impl_ptr->registry, *impl_ptr->health);
        });
    if (!server) return server.error();
    d.metrics_server = std::move(*server);
  }
  if (!d.opt.scheduler_url.empty()) {
    reporter::ReportClientOptions r;
    r.scheduler_url = d.opt.scheduler_url;
    r.token_file = d.opt.token_file;
    r.ca_file = d.opt.scheduler_ca_file;
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

net::HttpReply Daemon::Impl::snapshot_reply() const {
  if (!calc_snapshot) {
    return {503, "text/plain; charset=utf-8",
            "no snapshot yet: the first sampling pass has not run\n"};
  }
  return {200, "application/json", dump_json(snapshot::shareable_snapshot_json(*calc_snapshot))};
}

std::string Daemon::last_calc_json() const {
  return impl_->last_calc;
}

void Daemon::reload_config() {
  auto errors = impl_->config->reload();
  std::string problems;
  for (const auto& e : errors) {
    spdlog::error("ack-slo-config {}: {} ({})", e.key, e.error.message, config::to_string(e.kept));
    problems += (problems.empty() ? "" : "; ") + e.key + ": " + e.error.message + " (" +
                config::to_string(e.kept) + ")";
  }
  for (const auto& w : impl_->config->warnings())
    spdlog::warn("ack-slo-config {}: {}", w.key, w.error.message);
  impl_->health->mark_config_loaded(std::move(problems));
}

void Daemon::start() {
  reload_config();
  if (impl_->report_client) impl_->report_client->start();
  tick();
  if (impl_->own_timers) {
    impl_->schedule_next();
    if (impl_->opt.enforce && impl_->opt.fast_interval.count() > 0) impl_->schedule_fast();
  }
  impl_->start_wakeups();
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

StopDecision Daemon::Impl::decide_stop() {
  if (opt.on_stop != "auto" || opt.dry_run) return {};
  if (!api || opt.pod_name.empty() || opt.pod_namespace.empty()) return {};
  if (!state || !state->complete()) {
    return {false, "the original values are not all on record"};
  }
  if (knobs->originals().empty()) return {};
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
  return decide_on_stop(*pod, daemon_set, node);
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

void Daemon::stop() {
  auto& d = *impl_;
  if (d.stopped) return;
  d.stopped = true;
  d.timer.cancel();
  d.fast_timer.cancel();
  if (d.watch_descriptor) d.watch_descriptor->close();
  if (d.wake_descriptor) d.wake_descriptor->close();
  const StopDecision decision = d.decide_stop();
  if (decision.hand_over) {
    // The values stay in force and on record; the next agent adopts the record and
    // restores from it when it is the one that goes for good.
    spdlog::info("{}: leaving {} cgroup values in force for the next agent ({})", decision.why,
                 d.knobs->originals().cgroups.size(), d.state->path());
    d.knobs->release();
    if (d.report_client) d.report_client->stop();
    if (d.metrics_server) d.metrics_server->stop();
    if (d.on_stop) d.on_stop();
    return;
  }
  if (!decision.why.empty()) spdlog::info("restoring on stop: {}", decision.why);
  // Safety first: put back every resctrl, cgroup and system-config value this agent changed.
  const exec::KnobReport back = d.knobs->restore_all();
  for (const auto& f : back.failed) {
    if (f.kind != exec::KnobKind::kCgroup) {
      spdlog::warn("{} restore: {}", exec::to_string(f.kind), f.error.describe());
    }
  }
  using exec::KnobKind;
  spdlog::info(
      "restored {} cgroup values ({} failed), {} resctrl changes ({} failed) and {} "
      "system-config knobs ({} failed)",
      back.written_of(KnobKind::kCgroup), back.failed_of(KnobKind::kCgroup),
      back.written_of(KnobKind::kResctrl), back.failed_of(KnobKind::kResctrl),
      back.written_of(KnobKind::kSysctl), back.failed_of(KnobKind::kSysctl));
  // Kept when something could not be put back: the next start adopts and retries it.
  if (d.state && back.nothing_left()) d.state->remove();
  if (d.report_client) d.report_client->stop();
  if (d.metrics_server) d.metrics_server->stop();
  if (d.on_stop) d.on_stop();
}

void Daemon::set_on_stop(std::function<void()> callback) {
  impl_->on_stop = std::move(callback);
}

}  // namespace gleaner::agent
