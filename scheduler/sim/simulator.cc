#include "scheduler/sim/simulator.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <limits>
#include <set>

namespace gleaner::scheduler::sim {

namespace {

// The fleet's hub, when the scenario has several clusters (a name no member may have: it
// has a character cluster names do not).
constexpr const char* kHub = "fleet hub";
// Regular allocatable without a limit on cpu and memory: a scenario sizes nodes by their
// batch capacity; only their GPUs (which kubelet admits against allocatable) are counted.
constexpr int64_t kUnlimited = int64_t{1} << 50;

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

bool Simulator::Event::operator>(const Event& o) const {
  if (time != o.time) return time > o.time;
  if (kind != o.kind) return kind > o.kind;
  return seq > o.seq;
}

Simulator::Simulator(const Scenario& scenario, std::unique_ptr<gang::GangScheduler> gang,
                     std::unique_ptr<SimClock> clock, std::unique_ptr<PassCounters> counters,
                     std::unique_ptr<std::deque<gang::Action>> actions)
    : nodes_(scenario.nodes),
      jobs_(scenario.jobs),
      runs_(scenario.jobs.size()),
      job_pods_(scenario.jobs.size()),
      hub_(scenario.clusters.size() > 1),
      only_cluster_(scenario.clusters.empty() ? "default" : scenario.clusters.front()),
      until_(scenario.until_seconds),
      driver_start_timeout_(scenario.policy.driver_start_timeout_seconds),
      clock_(std::move(clock)),
      counters_(std::move(counters)),
      actions_(std::move(actions)),
      gang_(std::move(gang)) {}

Result<Simulator> Simulator::create(const Scenario& scenario) {
  if (auto quotas = QuotaTree::build(scenario.queues); !quotas) {
    return make_error(quotas.error().code, "queues: " + quotas.error().message);
  }
  std::set<std::string> queues;
  for (const QueueSpec& q : scenario.queues)
    queues.insert(q.name);
  // Everything the scheduler could refuse is checked now, so a bad file fails before any
  // simulated time passes; jobs reach the scheduler at their submitAt.
  std::set<std::string> names;
  for (size_t i = 0; i < scenario.jobs.size(); ++i) {
    const JobSpec& spec = scenario.jobs[i].spec;
    const std::string p = "jobs[" + std::to_string(i) + "]";
    if (!names.insert(spec.name).second) {
      return make_error(ErrorCode::kInvalidArgument, p + ".name: duplicate job " + spec.name);
    }
    if (!spec.queue.empty() && spec.queue != "default" && !queues.contains(spec.queue)) {
      return make_error(ErrorCode::kInvalidArgument,
                        p + ".queue: unknown queue " + spec.queue + " (not in queues)");
    }
  }
  gang::GangOptions options;
  options.policy = scenario.policy;
  // Agents report on time: nodes go stale or degraded only as the scenario says.
  options.staleness = StalenessPolicy{kUnlimited, kUnlimited};
  options.clusters =
      scenario.clusters.empty() ? std::vector<std::string>{"default"} : scenario.clusters;
  auto clock = std::make_unique<SimClock>();
  auto counters = std::make_unique<PassCounters>();
  auto actions = std::make_unique<std::deque<gang::Action>>();
  auto gang = gang::GangScheduler::create(options, scenario.queues, *clock, *counters);
  if (!gang) return make_error(gang.error().code, "queues: " + gang.error().message);
  // Sinks only queue (the gang layer's rule); drain() carries the actions out.
  std::deque<gang::Action>* queue = actions.get();
  (*gang)->set_sinks([queue](gang::Action a) { queue->push_back(std::move(a)); }, nullptr);
  Simulator sim(scenario, std::move(*gang), std::move(clock), std::move(counters),
                std::move(actions));
  for (uint32_t i = 0; i < sim.nodes_.size(); ++i) {
    const ScenarioNode& n = sim.nodes_[i];
    const std::string cluster = n.info.cluster.empty() ? "default" : n.info.cluster;
    sim.start_delay_[cluster + "/" + n.info.name] = n.start_delay_seconds;
    sim.report_node(i, n.info.batch);
    for (uint32_t c = 0; c < n.changes.size(); ++c)
      sim.push(n.changes[c].at, Kind::kNodeChange, i, c);
  }
  for (uint32_t i = 0; i < sim.jobs_.size(); ++i)
    sim.push(sim.jobs_[i].spec.submit_time, Kind::kSubmit, i, 0);
  return sim;
}

void Simulator::push(int64_t time, Kind kind, uint32_t a, uint32_t b, JobId core, uint32_t attempt,
                     std::string pod) {
  events_.push(Event{time, kind, seq_++, a, b, core, attempt, std::move(pod)});
}

std::string Simulator::gang_of(uint32_t job) const {
  return gang::gang_name(jobs_[job].spec.kind, jobs_[job].spec.name);
}

const std::string& Simulator::ns_of(uint32_t job) const {
  static const std::string kDefault = "default";
  return jobs_[job].ns.empty() ? kDefault : jobs_[job].ns;
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
  (void)gang_->apply_report(report);  // its cluster is one of the scenario's
  drain();
}

void Simulator::run() {
  while (!events_.empty()) {
    const int64_t t = events_.top().time;
    if (until_ && t > *until_) break;
    now_ = t;
    clock_->set(t);
    while (!events_.empty() && events_.top().time == t) {
      Event e = events_.top();
      events_.pop();
      handle(e);
      drain();
    }
    const auto started = std::chrono::steady_clock::now();
    (void)counters_->take();
    gang_->tick();
    const size_t admitted = counters_->take();
    if (observer_) {
      observer_(t, admitted,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    drain();
    // What a job given up held (room, quota, a blocking queue's head) is for the others now.
    if (give_up_cycling_jobs(observe_jobs())) {
      gang_->tick();
      drain();
      (void)observe_jobs();
    }
    if (auto deadline = gang_->next_deadline(); deadline && *deadline > t) {
      if (!tick_at_ || *tick_at_ <= t || *deadline < *tick_at_) {
        tick_at_ = *deadline;
        push(*deadline, Kind::kTick, 0, 0);
      }
    }
  }
}

void Simulator::handle(const Event& e) {
  switch (e.kind) {
    case Kind::kSubmit:
      submit(e.a);
      break;
    case Kind::kNodeChange:
      report_node(e.a, nodes_[e.a].changes[e.b].batch);
      break;
    case Kind::kPodRunning:
      pod_running(e.pod);
      break;
    case Kind::kJobEvent:
      if (runs_[e.a].submitted && !runs_[e.a].given_up) job_event(e.a, jobs_[e.a].events[e.b]);
      break;
    case Kind::kExecutorGone: {
      if (!active(e)) break;
      // The e.b-th executor Spark created in this run, if it is still there.
      std::vector<std::string> executors;
      for (const std::string& uid : pods_of(e.a))
        if (pods_.at(uid).executor && !pods_.at(uid).request) executors.push_back(uid);
      if (e.b < 1 || e.b > executors.size()) break;
      delete_pod(executors[e.b - 1]);
      for (const auto& loss : jobs_[e.a].executor_losses) {
        if (loss.executor != static_cast<int>(e.b)) continue;
        push(now_ + loss.replace_after_seconds, Kind::kExecutorReplaced, e.a, e.b, e.core,
             e.attempt);
        break;
      }
      break;
    }
    case Kind::kExecutorReplaced:
      if (!active(e)) break;
      ++runs_[e.a].replaced;
      create_executor(e.a, std::nullopt);
      break;
    case Kind::kFinish:
      if (active(e)) finish(e.a);
      break;
    case Kind::kExtraRequested: {
      if (!active(e)) break;
      const ExecutorRequest& r = jobs_[e.a].executor_requests[e.b];
      for (int i = 0; i < r.count; ++i)
        create_executor(e.a, e.b);
      if (r.release_after_seconds)
        push(now_ + *r.release_after_seconds, Kind::kExtraReleased, e.a, e.b, e.core, e.attempt);
      break;
    }
    case Kind::kExtraReleased:
      for (const std::string& uid : pods_of(e.a))
        if (pods_.at(uid).request == e.b) delete_pod(uid);
      break;
    case Kind::kTick:
      break;  // the pass after every instant checks the timeouts
  }
}

bool Simulator::active(const Event& e) const {
  const Run& r = runs_[e.a];
  if (!r.submitted || r.given_up || r.core_jobs.empty() || r.core_jobs.back() != e.core) {
    return false;
  }
  const CoreView j = core_view(e.core);
  return j.started && j.attempt == e.attempt &&
         (j.phase == JobPhase::kRunning || j.phase == JobPhase::kAdmitted);
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
  const RoleSpec live = as_live(role_spec);
  Pod pod;
  pod.job = job;
  pod.leader = role == gang::PodRole::kDriver ||
               (role == gang::PodRole::kReplica && roles_of(spec).front().name == role_spec.name &&
                index == 0);
  pod.executor = role == gang::PodRole::kExecutor;
  gang::PodView& v = pod.view;
  v.cluster = cluster;
  v.ns = ns_of(job);
  v.name = name;
  v.uid = "pod-" + std::to_string(++next_uid_);
  v.phase = "Pending";
  v.ours = true;
  v.role = role;
  v.gang = role == gang::PodRole::kReplica ? gang_of(job) : spec.name;
  v.request = live.batch;
  v.batch = true;
  v.regular = live.regular;
  v.priority = spec.priority;
  v.queue = spec.queue;
  v.selector = role_spec.selector ? *role_spec.selector : spec.node_selector;
  if (role == gang::PodRole::kReplica) {
    v.replica_type = lower(role_spec.name);
    v.replica_index = index;
    v.shape = shape_of(spec);  // the job's roles, as the training-job informer gives them
  } else if (role == gang::PodRole::kDriver) {
    v.shape = shape_of(spec);  // from its SparkApplication
    v.selector = spec.node_selector;
  }
  const std::string uid = v.uid;
  pods_[uid] = pod;
  job_pods_[job].push_back(uid);
  touched_.insert(job);
  gang_->observe_pod(pods_[uid].view);
  drain();
  return uid;
}

void Simulator::create_executor(uint32_t job, std::optional<uint32_t> request) {
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
    // Bound at once (free room, or its reserved room): counted now.
    if (request && !it->second.view.node.empty() && !it->second.counted_placed) {
      it->second.counted_placed = true;
      ++r.extras_placed;
    }
  }
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
  touched_.insert(pod.job);
  gang_->observe_pod(pod.view);
  drain();
  if (!pod.leader) return;
  runs_[pod.job].start_timeouts = 0;
  if (pod.view.role != gang::PodRole::kDriver) return;
  // The running driver asks for its executors.
  for (int i = 0; i < jobs_[pod.job].spec.executors; ++i)
    create_executor(pod.job, std::nullopt);
}

void Simulator::recreate_replica(const Pod& pod) {
  for (const RoleSpec& role : roles_of(jobs_[pod.job].spec)) {
    if (lower(role.name) != pod.view.replica_type) continue;
    create_pod(pod.job, pod.view.cluster, gang::PodRole::kReplica, pod.view.name, role,
               pod.view.replica_index);
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
      if (pod.request && !pod.counted_placed) {
        pod.counted_placed = true;
        ++runs_[pod.job].extras_placed;
      }
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
        recreate_replica(pod);
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

Simulator::CoreView Simulator::core_view(JobId id) const {
  CoreView v;
  gang_->inspect([&](const Scheduler& core) {
    if (id >= core.job_count()) return;
    const Job& j = core.job(id);
    v.phase = j.phase;
    v.attempt = j.attempt;
    v.started = j.started;
    v.started_at = j.started_at;
    v.admitted_at = j.admitted_at;
  });
  return v;
}

std::map<uint32_t, std::string> Simulator::observe_jobs() {
  std::map<uint32_t, std::string> timed_out;
  const auto reclaims = counters_->take_reclaims();
  for (const auto& [id, reason] : reclaims) {
    auto job = scenario_job_.find(id);
    if (job != scenario_job_.end()) touched_.insert(job->second);
    if (job == scenario_job_.end() || reason.rfind("driver not running", 0) != 0) continue;
    ++runs_[job->second].start_timeouts;
    timed_out[job->second] = reason;
  }
  const std::set<uint32_t> touched = std::exchange(touched_, {});
  for (uint32_t job : touched) {
    if (!unfinished_.contains(job)) continue;
    Run& r = runs_[job];
    const std::string cluster = hub_ ? std::string(kHub) : r.cluster;
    if (auto id = gang_->job_of(cluster, ns_of(job), gang_of(job))) {
      if (r.core_jobs.empty() || r.core_jobs.back() != *id) {
        r.core_jobs.push_back(*id);
        scenario_job_[*id] = job;
        r.scheduled.reset();
      }
    }
    if (r.core_jobs.empty()) continue;
    const CoreView j = core_view(r.core_jobs.back());
    const bool placed = j.phase == JobPhase::kAdmitted || j.phase == JobPhase::kRunning;
    if (!placed || !j.started || r.scheduled == j.attempt) continue;
    // It runs: its end, and what happens to its pods meanwhile.
    r.scheduled = j.attempt;
    const ScenarioJob& sj = jobs_[job];
    const JobId core = r.core_jobs.back();
    push(j.started_at + sj.duration_seconds, Kind::kFinish, job, 0, core, j.attempt);
    for (const auto& loss : sj.executor_losses) {
      push(j.started_at + loss.after_seconds, Kind::kExecutorGone, job,
           static_cast<uint32_t>(loss.executor), core, j.attempt);
    }
    for (uint32_t i = 0; i < sj.executor_requests.size(); ++i) {
      push(j.started_at + sj.executor_requests[i].after_seconds, Kind::kExtraRequested, job, i,
           core, j.attempt);
    }
  }
  return timed_out;
}

void Simulator::finish(uint32_t job) {
  unfinished_.erase(job);
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
    ++runs_[job].replaced;
    --left;
    if (pod.executor) {
      create_executor(job, std::nullopt);
    } else {
      recreate_replica(pod);
    }
  }
}

bool Simulator::outside_events_ahead() const {
  // priority_queue hides its container; a copy is cheap next to a cycle that never ends.
  auto copy = events_;
  for (; !copy.empty(); copy.pop()) {
    const Event& e = copy.top();
    switch (e.kind) {
      case Kind::kTick:
        break;
      case Kind::kPodRunning: {
        auto pod = pods_.find(e.pod);
        if (pod == pods_.end()) break;  // deleted since
        if (!pod->second.leader) return true;
        // A leader that starts before its timeout is progress; one that starts later is
        // the cycle itself (events at an instant run before its timeouts).
        const Run& r = runs_[pod->second.job];
        if (r.core_jobs.empty()) return true;
        const CoreView j = core_view(r.core_jobs.back());
        if (j.phase != JobPhase::kAdmitted) break;
        if (e.time <= j.admitted_at + driver_start_timeout_) return true;
        break;
      }
      default:
        return true;
    }
  }
  return false;
}

bool Simulator::give_up_cycling_jobs(const std::map<uint32_t, std::string>& timed_out) {
  std::vector<uint32_t> cycling;
  for (const auto& [job, reason] : timed_out) {
    if (runs_[job].start_timeouts >= kGiveUpAfter) cycling.push_back(job);
  }
  // Placed again this instant where its leader starts in time, it is progress, not a cycle
  // (outside_events_ahead sees that leader's start).
  if (cycling.empty() || outside_events_ahead()) return false;
  for (uint32_t job : cycling) {
    Run& r = runs_[job];
    r.given_up = true;
    unfinished_.erase(job);
    r.given_up_reason = timed_out.at(job) + ", " + std::to_string(r.start_timeouts) +
                        " times in a row with nothing else left to happen: the simulation " +
                        "stopped retrying it";
    // Its application is deleted: its pods go, and the scheduler forgets it.
    for (const std::string& uid : pods_of(job))
      delete_pod(uid);
    gang_->forget_app(hub_ ? std::string(kHub) : r.cluster, ns_of(job), jobs_[job].spec.name,
                      jobs_[job].spec.kind);
    drain();
  }
  return true;
}

}  // namespace gleaner::scheduler::sim
