#include "scheduler/sim/simulator.h"

#include <chrono>
#include <set>

namespace gleaner::scheduler::sim {

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
    update_progress();
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
      if (const int64_t m = nodes_[e.a].changes[e.b].evict_memory; m > 0) evict_memory(e.a, m);
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
      ++runs_[e.a].replacements_asked;
      create_executor(e.a, std::nullopt, true);
      break;
    case Kind::kFinish:
      // Only the end scheduled at the run's current pace: an earlier one is stale.
      if (active(e) && e.b == runs_[e.a].finish_generation) finish(e.a);
      break;
    case Kind::kExtraRequested: {
      if (!active(e)) break;
      const ExecutorRequest& r = jobs_[e.a].executor_requests[e.b];
      for (int i = 0; i < r.count; ++i)
        create_executor(e.a, e.b, false);
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

void Simulator::evict_memory(uint32_t node, int64_t memory) {
  const ScenarioNode& n = nodes_[node];
  const std::string cluster = n.info.cluster.empty() ? "default" : n.info.cluster;
  std::vector<const Pod*> victims;
  for (const auto& [uid, pod] : pods_) {
    if (pod.executor && !pod.request && pod.view.node == n.info.name &&
        pod.view.cluster == cluster) {
      victims.push_back(&pod);
    }
  }
  // The agent's order (agent/qos/evict.h): lowest priority, then the largest user; the
  // youngest among equals (executor names count up).
  std::sort(victims.begin(), victims.end(), [](const Pod* a, const Pod* b) {
    const auto& x = a->view;
    const auto& y = b->view;
    return std::make_tuple(x.priority, -x.request.memory_bytes, -std::ssize(x.name), y.name) <
           std::make_tuple(y.priority, -y.request.memory_bytes, -std::ssize(y.name), x.name);
  });
  std::vector<std::pair<std::string, uint32_t>> chosen;  // uid, scenario job
  for (const Pod* p : victims) {
    if (memory <= 0) break;
    memory -= p->view.request.memory_bytes;
    chosen.emplace_back(p->view.uid, p->job);
  }
  for (const auto& [uid, job] : chosen) {
    // The agent's eviction, as the API server records it on the pod (DisruptionTarget:
    // kube/pod_view.h reads it): the job keeps off this node until its room is back.
    if (auto it = pods_.find(uid); it != pods_.end()) it->second.view.evicted = true;
    delete_pod(uid, "Failed");
    Run& r = runs_[job];
    ++r.evicted;
    if (r.core_jobs.empty()) continue;
    const JobId core = r.core_jobs.back();
    push(now_, Kind::kExecutorReplaced, job, 0, core, core_view(core).attempt);
  }
}

bool Simulator::active(const Event& e) const {
  return run_active(e.a, e.core, e.attempt);
}

bool Simulator::run_active(uint32_t job, JobId core, uint32_t attempt) const {
  const Run& r = runs_[job];
  if (!r.submitted || r.given_up || r.core_jobs.empty() || r.core_jobs.back() != core) {
    return false;
  }
  const CoreView j = core_view(core);
  return j.started && j.attempt == attempt &&
         (j.phase == JobPhase::kRunning || j.phase == JobPhase::kAdmitted);
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
    if (auto id = gang_->job_of(cluster, ns_of(job), jobs_[job].spec.name, jobs_[job].spec.kind)) {
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
    // It runs: its progress (which gives its end), and what happens to its pods meanwhile.
    r.scheduled = j.attempt;
    const ScenarioJob& sj = jobs_[job];
    const JobId core = r.core_jobs.back();
    start_progress(job, core, j);
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
