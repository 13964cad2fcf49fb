// The cluster around the scheduler in the simulator (docs/scheduler.md, "Simulator"):
// agents reporting, the API server binding and deleting pods, kubelet starting them, the
// operators creating drivers, executors and replicas (and creating them again), Spark's
// churn, and a fleet's hub placing each job into a member. Everything it does reaches the
// scheduler through the gang layer's own entry points, as the Kubernetes glue's would.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

#include "common/json_util.h"
#include "kube/well_known.h"
#include "scheduler/gang/training_kinds.h"
#include "scheduler/kube/pod_view.h"
#include "scheduler/sim/simulator.h"

namespace gleaner::scheduler::sim {

namespace {

// The scheduler name the simulated pods ask for.
constexpr const char* kSchedulerName = "gleaner-scheduler";

// As the live loop reads a job: GPUs are regular resources (kubelet admits them against the
// Node's allocatable), cpu and memory batch ones.
RoleSpec as_live(RoleSpec r) {
  r.regular.gpus += r.batch.gpus;
  r.batch.gpus = 0;
  return r;
}

gang::GangShape shape_of(const JobSpec& spec) {
  gang::GangShape shape;
  if (!spec.roles.empty()) {
    for (const RoleSpec& r : roles_of(spec))
      shape.roles.push_back(as_live(r));
    return shape;
  }
  shape.driver = {spec.driver.cpu_milli, spec.driver.memory_bytes, 0};
  shape.executor = {spec.executor.cpu_milli, spec.executor.memory_bytes, 0};
  shape.executors = spec.executors;
  shape.driver_regular = spec.driver_regular;
  shape.driver_regular.gpus += spec.driver.gpus;
  shape.executor_regular = spec.executor_regular;
  shape.executor_regular.gpus += spec.executor.gpus;
  return shape;
}

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A hub application's uid, and back: its scenario index.
std::string app_uid(uint32_t job) {
  return "app-" + std::to_string(job);
}
uint32_t app_index(const std::string& uid) {
  uint32_t index = std::numeric_limits<uint32_t>::max();
  if (uid.rfind("app-", 0) == 0) {
    std::from_chars(uid.data() + 4, uid.data() + uid.size(), index);
  }
  return index;
}

}  // namespace

const std::string& Simulator::ns_of(uint32_t job) const {
  static const std::string default_ns = "default";
  return jobs_[job].ns.empty() ? default_ns : jobs_[job].ns;
}

void Simulator::report_node(uint32_t node, const Resources& batch) {
  const ScenarioNode& n = nodes_[node];
  const std::string cluster = n.info.cluster.empty() ? "default" : n.info.cluster;
  // The Node first (its labels, taints and allocatable GPUs), then its agent's report.
  gang_->observe_node(cluster, n.info.name, n.info.labels, n.info.taints,
                      Resources{kUnlimited, kUnlimited, batch.gpus});
  reporter::NodeReport report;
  report.node = n.info.name;
  report.cluster = cluster;
  report.sequence = ++report_sequence_;
  report.timestamp_unix_ms = now_ * 1000;
  report.batch_allocatable = reporter::ResourceAmounts{batch.cpu_milli, batch.memory_bytes};
  // What LS usage leaves BE on that node: the share its running BE pods split.
  report_batch_cpu(cluster + "/" + n.info.name, batch.cpu_milli);
  (void)gang_->apply_report(report);  // its cluster is one of the scenario's
  drain();
}

void Simulator::submit(uint32_t job) {
  Run& r = runs_[job];
  r.submitted = true;
  unfinished_.insert(job);
  touched_.insert(job);
  for (uint32_t i = 0; i < jobs_[job].events.size(); ++i)
    push(now_ + jobs_[job].events[i].at, Kind::kJobEvent, job, i);
  if (!hub_) {
    // The cluster's own application: its operator creates the driver (every replica).
    create_leader_pods(job, only_cluster_);
    return;
  }
  // A fleet's hub: the application waits there until the scheduler places it in a member.
  const ScenarioJob& sj = jobs_[job];
  gang::AppView app;
  app.kind = sj.spec.kind;
  app.cluster = kHub;
  app.ns = ns_of(job);
  app.name = sj.spec.name;
  app.uid = app_uid(job);
  app.shape = shape_of(sj.spec);
  app.queue = sj.spec.queue;
  app.priority = sj.spec.priority;
  app.selector = sj.spec.node_selector;
  app.hub = true;
  app.allowed_clusters = sj.spec.allowed_clusters;
  gang_->observe_app(app);
  drain();
}

void Simulator::create_leader_pods(uint32_t job, const std::string& cluster) {
  runs_[job].cluster = cluster;
  const JobSpec& spec = jobs_[job].spec;
  const std::vector<RoleSpec> roles = roles_of(spec);
  if (spec.roles.empty()) {
    create_pod(job, cluster, gang::PodRole::kDriver, spec.name + "-driver", roles.front(), 0);
    return;
  }
  for (const RoleSpec& role : roles) {
    for (int i = 0; i < role.replicas; ++i) {
      create_pod(job, cluster, gang::PodRole::kReplica,
                 spec.name + "-" + lower(role.name) + "-" + std::to_string(i), role, i);
    }
  }
}

std::string Simulator::create_pod(uint32_t job, const std::string& cluster, gang::PodRole role,
                                  const std::string& name, const RoleSpec& role_spec, int index) {
  const JobSpec& spec = jobs_[job].spec;
  const std::string uid = "pod-" + std::to_string(++next_uid_);
  // The pod as its operator creates it, read as the live loop reads it (kube/pod_view.h):
  // the job's kind adapter gives its gang, role, index and leader; the job's object, as an
  // informer would show it, its gang's shape.
  const kube::Pod object = pod_object(job, uid, name, role, role_spec, index);
  const gang::AppView owner = [&] {
    gang::AppView a;
    a.shape = shape_of(spec);
    a.queue = spec.queue;
    return a;
  }();
  kube_glue::JobOwners owners;
  owners.spark = owners.training = [&owner](const std::string&, const std::string&,
                                            const std::string&) { return owner; };
  Pod pod;
  pod.job = job;
  const kube_glue::JobKindAdapter* kind = nullptr;
  pod.view = kube_glue::pod_view(object, cluster, kSchedulerName, owners, &kind);
  pod.leader = kind->leads(pod.view);
  pod.executor = pod.view.role == gang::PodRole::kExecutor;
  // The leader's role coordinates and the others work, unless it is the only role.
  const std::vector<RoleSpec> roles = roles_of(spec);
  const bool leader_role = lower(role_spec.name) == lower(roles.front().name);
  pod.works = roles.size() > 1 ? !leader_role : leader_role;
  pods_[uid] = pod;
  job_pods_[job].push_back(uid);
  touched_.insert(job);
  gang_->observe_pod(pods_[uid].view);
  drain();
  return uid;
}

kube::Pod Simulator::pod_object(uint32_t job, const std::string& uid, const std::string& name,
                                gang::PodRole role, const RoleSpec& role_spec, int index) const {
  const JobSpec& spec = jobs_[job].spec;
  const RoleSpec live = as_live(role_spec);
  Json labels = Json::object();
  Json annotations = Json::object();
  if (spec.kind == kube_glue::kYuniKornKind) {
    // YuniKorn's: the application's task groups on every pod, each role one group.
    Json groups = Json::array();
    for (const RoleSpec& r : roles_of(spec))
      groups.push_back({{"name", lower(r.name)}, {"minMember", r.replicas}});
    labels["yunikorn.apache.org/app-id"] = spec.name;
    annotations["yunikorn.apache.org/task-group-name"] = lower(role_spec.name);
    annotations["yunikorn.apache.org/task-groups"] = groups.dump();
  } else if (role == gang::PodRole::kReplica) {
    // Kubeflow's training operator (mpi-operator: job-role, and no index on its launcher).
    const gang::TrainingKind* kind = gang::find_training_kind(spec.kind);
    const std::string type = lower(role_spec.name);
    labels[kube::kTrainingJobNameLabel] = spec.name;
    labels[kube::kTrainingOperatorLabel] = kind->operator_name;
    labels[kind->role_label == gang::RoleLabel::kJobRole ? kube::kTrainingJobRoleLabel
                                                         : kube::kTrainingReplicaTypeLabel] = type;
    if (type != kind->unindexed_role)
      labels[kube::kTrainingReplicaIndexLabel] = std::to_string(index);
  } else {
    // The Spark operator.
    labels[kube::kSparkRoleLabel] = role == gang::PodRole::kDriver ? "driver" : "executor";
    labels[kube::kSparkOperatorAppLabel] = spec.name;
  }
  if (!spec.queue.empty()) labels[kube::kQueueLabel] = spec.queue;
  // Batch cpu/memory as the colocation webhook writes them, GPUs and regular cpu/memory
  // as the pod asks.
  Json requests = Json::object();
  auto put = [&requests](const char* resource, int64_t amount, const char* unit) {
    if (amount > 0) requests[resource] = std::to_string(amount) + unit;
  };
  put(kube::kResourceBatchCpu, live.batch.cpu_milli, "");
  put(kube::kResourceBatchMemory, live.batch.memory_bytes, "");
  put(kube::kResourceCpu, live.regular.cpu_milli, "m");
  put(kube::kResourceMemory, live.regular.memory_bytes, "");
  put(kResourceGpu, live.regular.gpus, "");
  const NodeSelector& selector = role_spec.selector && role != gang::PodRole::kDriver
                                     ? *role_spec.selector
                                     : spec.node_selector;
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", ns_of(job)},
                {"uid", uid},
                {"labels", labels},
                {"annotations", annotations}}},
              {"spec",
               {{"schedulerName", kSchedulerName},
                {"priority", spec.priority},
                {"nodeSelector", selector.labels},
                {"containers", {{{"name", "main"}, {"resources", {{"requests", requests}}}}}}}},
              {"status", {{"phase", "Pending"}}}};
  auto parsed = kube::parse_pod(pod);
  return parsed ? std::move(*parsed) : kube::Pod{};  // built above: always parses
}

void Simulator::create_executor(uint32_t job, std::optional<uint32_t> request, bool replacement) {
  Run& r = runs_[job];
  const JobSpec& spec = jobs_[job].spec;
  const std::vector<RoleSpec> roles = roles_of(spec);
  if (roles.size() < 2 && !request) return;
  RoleSpec role;
  role.name = "executor";
  role.batch = spec.executor;
  role.regular = spec.executor_regular;
  const std::string uid =
      create_pod(job, r.cluster, gang::PodRole::kExecutor,
                 spec.name + "-exec-" + std::to_string(++r.executors_created), role, 0);
  if (auto it = pods_.find(uid); it != pods_.end()) {
    it->second.request = request;
    it->second.replacement = replacement;
    count_if_placed(it->second);  // bound at once (free room, or its reserved room)
  }
}

void Simulator::count_if_placed(Pod& pod) {
  if (pod.view.node.empty() || pod.counted_placed) return;
  if (pod.request) {
    ++runs_[pod.job].extras_placed;
  } else if (pod.replacement) {
    ++runs_[pod.job].replacements_placed;
  } else {
    return;
  }
  pod.counted_placed = true;
}

std::vector<std::string> Simulator::pods_of(uint32_t job) const {
  return job_pods_[job];
}

void Simulator::delete_pod(const std::string& uid, const std::string& phase) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  gang::PodView view = it->second.view;
  if (!phase.empty()) view.phase = phase;
  touched_.insert(it->second.job);
  pod_left(uid, it->second);
  std::vector<std::string>& of_job = job_pods_[it->second.job];
  of_job.erase(std::find(of_job.begin(), of_job.end(), uid));
  pods_.erase(it);
  gang_->forget_pod(view);
  drain();
}

void Simulator::pod_running(const std::string& uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end() || it->second.view.node.empty() || it->second.view.phase == "Running") {
    return;  // deleted, or started already
  }
  it->second.view.phase = "Running";
  const Pod pod = it->second;
  pod_started_on(uid, pod);
  touched_.insert(pod.job);
  gang_->observe_pod(pod.view);
  drain();
  if (!pod.leader) return;
  runs_[pod.job].start_timeouts = 0;
  if (pod.view.role != gang::PodRole::kDriver) return;
  // The running driver asks for its executors.
  for (int i = 0; i < jobs_[pod.job].spec.executors; ++i)
    create_executor(pod.job, std::nullopt, false);
}

void Simulator::recreate_replica(const Pod& pod, bool replacement) {
  for (const RoleSpec& role : roles_of(jobs_[pod.job].spec)) {
    if (lower(role.name) != pod.view.replica_type) continue;
    const std::string uid = create_pod(pod.job, pod.view.cluster, gang::PodRole::kReplica,
                                       pod.view.name, role, pod.view.replica_index);
    if (auto it = pods_.find(uid); it != pods_.end()) {
      it->second.replacement = replacement;
      count_if_placed(it->second);
    }
    return;
  }
}

void Simulator::drain() {
  while (!actions_->empty()) {
    gang::Action a = std::move(actions_->front());
    actions_->pop_front();
    apply(a);
  }
}

void Simulator::apply(const gang::Action& a) {
  switch (a.kind) {
    case gang::ActionKind::kBind: {
      auto it = pods_.find(a.uid);
      if (it == pods_.end()) {
        gang_->bind_done(a.cluster, a.uid, make_error(ErrorCode::kNotFound, "pod not found"));
        return;
      }
      Pod& pod = it->second;
      pod.view.node = a.node;
      touched_.insert(pod.job);
      gang_->bind_done(a.cluster, a.uid, ok_status());
      count_if_placed(pod);
      gang_->observe_pod(pod.view);  // the informer sees spec.nodeName
      auto delay = start_delay_.find(a.cluster + "/" + a.node);
      push(now_ + (delay == start_delay_.end() ? 0 : delay->second), Kind::kPodRunning, 0, 0, 0, 0,
           a.uid);
      return;
    }
    case gang::ActionKind::kDelete: {
      auto it = pods_.find(a.uid);
      if (it == pods_.end()) return;
      const Pod pod = it->second;
      delete_pod(a.uid);
      // A hub's copy goes with its placement (the hub places the job again). The cluster's
      // own application: its operator creates the deleted driver (replica) again, and the
      // job keeps its place in the queue; executors are their driver's.
      if (hub_ || runs_[pod.job].given_up) return;
      if (pod.view.role == gang::PodRole::kDriver) {
        for (const std::string& uid : pods_of(pod.job))
          delete_pod(uid);
        create_leader_pods(pod.job, pod.view.cluster);
      } else if (pod.view.role == gang::PodRole::kReplica) {
        recreate_replica(pod, false);
      }
      return;
    }
    case gang::ActionKind::kPlaceApp: {
      // The hub records the decision and creates the copy in the member, whose operator
      // creates the pods.
      gang_->app_recorded(a.cluster, a.ns, a.name, a.app_kind);
      const uint32_t job = app_index(a.uid);
      if (job < jobs_.size()) touched_.insert(job);
      if (job < jobs_.size() && pods_of(job).empty() && !runs_[job].given_up) {
        create_leader_pods(job, a.target);
      }
      return;
    }
    case gang::ActionKind::kUnplaceApp: {
      // The copy in the member is deleted, and every pod it still has.
      const uint32_t job = app_index(a.uid);
      if (job >= jobs_.size()) return;
      touched_.insert(job);
      for (const std::string& uid : pods_of(job))
        if (pods_.at(uid).view.cluster == a.peer) delete_pod(uid);
      return;
    }
    case gang::ActionKind::kEvent:
    case gang::ActionKind::kCreateApp:
    case gang::ActionKind::kMirrorAppState:
    case gang::ActionKind::kDeleteCopy:
      return;  // Events are for people; the peer protocol is not the hub's
  }
}

void Simulator::finish(uint32_t job) {
  unfinished_.erase(job);
  Run& r = runs_[job];
  r.progress = advanced(r.progress, now_);
  r.progressing = false;
  // Spark deletes its executors, then its driver succeeds; a training job ends when its
  // leader does.
  std::string leader;
  for (const std::string& uid : pods_of(job)) {
    if (pods_.at(uid).leader) {
      leader = uid;
    } else if (jobs_[job].spec.roles.empty()) {
      delete_pod(uid);
    }
  }
  if (!leader.empty()) delete_pod(leader, "Succeeded");
  for (const std::string& uid : pods_of(job))
    delete_pod(uid, "Succeeded");
}

void Simulator::job_event(uint32_t job, const JobEvent& event) {
  const Run& r = runs_[job];
  if (r.core_jobs.empty()) return;
  const CoreView j = core_view(r.core_jobs.back());
  if (!j.started || (j.phase != JobPhase::kRunning && j.phase != JobPhase::kAdmitted)) return;
  const std::vector<std::string> pods = pods_of(job);
  if (event.type == JobEvent::Type::kDriverFailed) {
    // The leader fails; its operator retries the application (Spark's executors go with
    // their driver).
    std::string leader;
    for (const std::string& uid : pods)
      if (pods_.at(uid).leader) leader = uid;
    if (leader.empty()) return;
    const std::string cluster = pods_.at(leader).view.cluster;
    delete_pod(leader, "Failed");
    for (const std::string& uid : pods_of(job))
      delete_pod(uid, jobs_[job].spec.roles.empty() ? "" : "Failed");
    create_leader_pods(job, cluster);
    return;
  }
  // The last `count` running pods besides the leader go; the operator (Spark, the training
  // operator) asks for replacements at once, which take the room they left.
  int left = event.count;
  for (auto it = pods.rbegin(); it != pods.rend() && left > 0; ++it) {
    const Pod pod = pods_.at(*it);
    if (pod.leader || pod.view.phase != "Running" || pod.request) continue;
    delete_pod(*it);
    ++runs_[job].replacements_asked;
    --left;
    if (pod.executor) {
      create_executor(job, std::nullopt, true);
    } else {
      recreate_replica(pod, true);
    }
  }
}

}  // namespace gleaner::scheduler::sim
