#include "scheduler/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <set>

namespace gleaner::scheduler::sim {

bool Simulator::Event::operator>(const Event& o) const {
  if (time != o.time) return time > o.time;
  if (kind != o.kind) return kind > o.kind;
  return seq > o.seq;
}

Simulator::Simulator(const Scenario& scenario, Scheduler scheduler)
    : nodes_(scenario.nodes),
      jobs_(scenario.jobs),
      job_ids_(scenario.jobs.size()),
      until_(scenario.until_seconds),
      scheduler_(std::move(scheduler)) {}

Result<Simulator> Simulator::create(const Scenario& scenario) {
  auto quotas = QuotaTree::build(scenario.queues);
  if (!quotas) {
    return make_error(quotas.error().code, "queues: " + quotas.error().message);
  }
  ClusterState clusters;
  for (const std::string& c : scenario.clusters)
    clusters.add_cluster(c);
  for (size_t i = 0; i < scenario.nodes.size(); ++i) {
    auto id = clusters.upsert_node(scenario.nodes[i].info, 0);
    if (!id) {
      return make_error(id.error().code, "nodes[" + std::to_string(i) + "]: " + id.error().message);
    }
  }
  // Everything submit() could reject is checked now, so a bad file fails before any
  // simulated time passes; jobs reach the core at their submitAt.
  std::set<std::string> names;
  for (size_t i = 0; i < scenario.jobs.size(); ++i) {
    const JobSpec& spec = scenario.jobs[i].spec;
    const std::string p = "jobs[" + std::to_string(i) + "]";
    if (!names.insert(spec.name).second) {
      return make_error(ErrorCode::kInvalidArgument, p + ".name: duplicate job " + spec.name);
    }
    if (!spec.queue.empty() && spec.queue != "default" && !quotas->find(spec.queue)) {
      return make_error(ErrorCode::kInvalidArgument,
                        p + ".queue: unknown queue " + spec.queue + " (not in queues)");
    }
  }
  Simulator sim(scenario, Scheduler(scenario.policy, std::move(*quotas), std::move(clusters)));
  for (size_t i = 0; i < scenario.nodes.size(); ++i) {
    for (size_t c = 0; c < scenario.nodes[i].changes.size(); ++c) {
      sim.push(scenario.nodes[i].changes[c].at, Kind::kNodeChange, static_cast<uint32_t>(i),
               static_cast<uint32_t>(c), 0);
    }
  }
  for (size_t i = 0; i < scenario.jobs.size(); ++i) {
    sim.push(scenario.jobs[i].spec.submit_time, Kind::kSubmit, static_cast<uint32_t>(i), 0, 0);
  }
  return sim;
}

void Simulator::push(int64_t time, Kind kind, uint32_t a, uint32_t b, uint32_t attempt) {
  events_.push(Event{time, kind, seq_++, a, b, attempt});
}

void Simulator::run() {
  while (!events_.empty()) {
    const int64_t t = events_.top().time;
    if (until_ && t > *until_) break;
    now_ = t;
    while (!events_.empty() && events_.top().time == t) {
      Event e = events_.top();
      events_.pop();
      handle(e);
    }
    auto timeouts = scheduler_.check_timeouts(t);
    std::map<JobId, std::string> timed_out;
    for (const Decision& d : timeouts) {
      if (d.kind == DecisionKind::kReschedule && d.reason.rfind("driver not running", 0) == 0) {
        ++start_timeouts_[d.job];
        timed_out[d.job] = d.reason;
      }
    }
    apply(timeouts);
    auto started = std::chrono::steady_clock::now();
    std::vector<Decision> decisions = scheduler_.schedule(t);
    if (observer_) {
      auto admitted = static_cast<size_t>(
          std::count_if(decisions.begin(), decisions.end(),
                        [](const Decision& d) { return d.kind == DecisionKind::kAdmit; }));
      observer_(t, admitted,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    apply(decisions);
    // What a job given up held (room, quota, a blocking queue's head) is for the others now.
    if (give_up_cycling_jobs(timed_out)) apply(scheduler_.schedule(t));
    place_waiting_extras();
    if (auto deadline = scheduler_.next_deadline(); deadline && *deadline > t) {
      if (!tick_at_ || *tick_at_ <= t || *deadline < *tick_at_) {
        tick_at_ = *deadline;
        push(*deadline, Kind::kTick, 0, 0, 0);
      }
    }
  }
}

void Simulator::handle(const Event& e) {
  switch (e.kind) {
    case Kind::kSubmit: {
      auto id = scheduler_.submit(jobs_[e.a].spec);
      if (!id) break;  // create() already rejected everything submit() can
      job_ids_[e.a] = *id;
      durations_.resize(std::max<size_t>(durations_.size(), *id + 1));
      durations_[*id] = jobs_[e.a].duration_seconds;
      scenario_index_.resize(std::max<size_t>(scenario_index_.size(), *id + 1));
      scenario_index_[*id] = e.a;
      replaced_.resize(std::max<size_t>(replaced_.size(), *id + 1));
      for (uint32_t i = 0; i < jobs_[e.a].events.size(); ++i)
        push(e.time + jobs_[e.a].events[i].at, Kind::kJobEvent, *id, i, 0);
      break;
    }
    case Kind::kJobEvent:
      job_event(e.a, jobs_[scenario_index_[e.a]].events[e.b]);
      break;
    case Kind::kNodeChange: {
      const NodeChange& c = nodes_[e.a].changes[e.b];
      NodeId node = *scheduler_.clusters().find_node(nodes_[e.a].info.name);
      auto decisions = scheduler_.report_node(node, c.batch, e.time);
      if (decisions) apply(*decisions);
      break;
    }
    case Kind::kPodRunning: {
      const Job& j = scheduler_.job(e.a);
      if (j.attempt != e.attempt || j.phase != JobPhase::kAdmitted) break;  // stale
      if (j.started) {
        // A replacement executor of a job already running.
        scheduler_.pod_running(e.a, static_cast<int>(e.b), e.time);
        break;
      }
      bool started = scheduler_.pod_running(e.a, static_cast<int>(e.b), e.time);
      if (e.b == 0) {
        start_timeouts_.erase(e.a);
        start_executors(e.a);
      }
      if (started) {
        push(e.time + durations_[e.a], Kind::kFinish, e.a, 0, e.attempt);
        schedule_losses(e.a, e.time, e.attempt);
      }
      break;
    }
    case Kind::kExecutorGone: {
      const Job& j = scheduler_.job(e.a);
      if (j.attempt != e.attempt || !j.started) break;
      if (!scheduler_.executor_gone(e.a, static_cast<int>(e.b), e.time).ok()) break;
      const ScenarioJob& sj = jobs_[scenario_index_[e.a]];
      for (const auto& loss : sj.executor_losses) {
        if (loss.executor != static_cast<int>(e.b)) continue;
        push(e.time + loss.replace_after_seconds, Kind::kExecutorReplaced, e.a, e.b, e.attempt);
        break;
      }
      break;
    }
    case Kind::kExecutorReplaced: {
      const Job& j = scheduler_.job(e.a);
      if (j.attempt != e.attempt || !j.started) break;
      // The replacement takes the room its predecessor left with the job.
      auto node = scheduler_.bind_executor(e.a, static_cast<int>(e.b), e.time);
      if (!node) break;
      ++replaced_[e.a];
      push(e.time + delay_of(*node), Kind::kPodRunning, e.a, e.b, e.attempt);
      break;
    }
    case Kind::kFinish: {
      const Job& j = scheduler_.job(e.a);
      if (j.attempt != e.attempt || !j.started) break;
      release_extras(e.a, std::nullopt);  // Spark deletes every executor at the end
      scheduler_.complete(e.a, e.time);
      break;
    }
    case Kind::kExtraRequested: {
      const Job& j = scheduler_.job(e.a);
      if (j.attempt != e.attempt || !j.started) break;
      const ExecutorRequest& r = jobs_[scenario_index_[e.a]].executor_requests[e.b];
      for (int i = 0; i < r.count; ++i)
        extras_.push_back(Extra{e.a, e.b, e.attempt, std::nullopt});
      if (r.release_after_seconds)
        push(e.time + *r.release_after_seconds, Kind::kExtraReleased, e.a, e.b, e.attempt);
      break;  // placed after this instant's events, with the others waiting
    }
    case Kind::kExtraReleased:
      release_extras(e.a, e.b);
      break;
    case Kind::kTick:
      break;  // timeouts are checked after every instant
  }
}

int64_t Simulator::delay_of(NodeId node) const {
  // Core node ids follow scenario order: create() added the nodes in that order.
  return nodes_[node].start_delay_seconds;
}

void Simulator::start_executors(JobId id) {
  // The running driver asks for its executors; each takes its reserved room.
  const Job& j = scheduler_.job(id);
  for (size_t i = 1; i < j.pods.size(); ++i) {
    auto node = scheduler_.bind_executor(id, static_cast<int>(i), now_);
    if (!node) {
      apply({scheduler_.lose_pod(id, now_, node.error().message)});
      return;
    }
    push(now_ + delay_of(*node), Kind::kPodRunning, id, static_cast<uint32_t>(i), j.attempt);
  }
}

void Simulator::schedule_losses(JobId id, int64_t started, uint32_t attempt) {
  const ScenarioJob& sj = jobs_[scenario_index_[id]];
  for (const auto& loss : sj.executor_losses) {
    push(started + loss.after_seconds, Kind::kExecutorGone, id,
         static_cast<uint32_t>(loss.executor), attempt);
  }
  for (uint32_t i = 0; i < sj.executor_requests.size(); ++i)
    push(started + sj.executor_requests[i].after_seconds, Kind::kExtraRequested, id, i, attempt);
}

void Simulator::place_waiting_extras() {
  for (auto it = extras_.begin(); it != extras_.end();) {
    const Job& j = scheduler_.job(it->job);
    if ((j.phase != JobPhase::kRunning && j.phase != JobPhase::kAdmitted) ||
        j.attempt != it->attempt) {
      // Reclaimed or preempted: its executors went with it.
      if (it->node)
        scheduler_.release_extra_executor(*it->node, j.spec.executor, j.spec.executor_regular);
      it = extras_.erase(it);
      continue;
    }
    if (!it->node) {
      // The live loop's path for an executor beyond its gang (attach_waiting).
      auto node = scheduler_.place_extra_executor(it->job, j.spec.executor, j.spec.executor_regular,
                                                  nullptr);
      if (node) {
        it->node = *node;
        ++extras_placed_[it->job];
      }
    }
    ++it;
  }
}

void Simulator::release_extras(JobId id, std::optional<uint32_t> request) {
  const Job& j = scheduler_.job(id);
  for (auto it = extras_.begin(); it != extras_.end();) {
    if (it->job != id || (request && it->request != *request)) {
      ++it;
      continue;
    }
    if (it->node)
      scheduler_.release_extra_executor(*it->node, j.spec.executor, j.spec.executor_regular);
    it = extras_.erase(it);
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
        const Job& j = scheduler_.job(e.a);
        if (j.attempt != e.attempt || j.phase != JobPhase::kAdmitted) break;  // stale
        // A leader that starts before its timeout is progress; one that starts later is
        // the cycle itself (events at an instant run before its timeouts).
        if (e.b != 0 || e.time <= j.admitted_at + scheduler_.policy().driver_start_timeout_seconds)
          return true;
        break;
      }
      default:
        return true;
    }
  }
  return false;
}

bool Simulator::give_up_cycling_jobs(const std::map<JobId, std::string>& timed_out) {
  std::vector<JobId> cycling;
  for (const auto& [id, reason] : timed_out) {
    if (start_timeouts_[id] >= kGiveUpAfter) cycling.push_back(id);
  }
  // Placed again this instant where its leader starts in time, it is progress, not a cycle
  // (outside_events_ahead sees that leader's start).
  if (cycling.empty() || outside_events_ahead()) return false;
  for (JobId id : cycling) {
    given_up_[id] = timed_out.at(id) + ", " + std::to_string(start_timeouts_[id]) +
                    " times in a row with nothing else left to happen: the simulation " +
                    "stopped retrying it";
    release_extras(id, std::nullopt);
    (void)scheduler_.withdraw(id);
    start_timeouts_.erase(id);
  }
  return true;
}

void Simulator::job_event(JobId id, const JobEvent& event) {
  const Job& j = scheduler_.job(id);
  if (!j.started || (j.phase != JobPhase::kRunning && j.phase != JobPhase::kAdmitted)) return;
  if (event.type == JobEvent::Type::kDriverFailed) {
    release_extras(id, std::nullopt);
    scheduler_.lose_pod(id, now_, "driver failed");
    return;
  }
  // The last `count` running pods besides the leader go; the operator (Spark, the training
  // operator) asks for replacements at once, which take the room they left.
  const uint32_t attempt = j.attempt;
  int left = event.count;
  for (size_t i = j.pods.size(); i-- > 1 && left > 0;) {
    if (!j.pods[i].running) continue;
    if (!scheduler_.executor_gone(id, static_cast<int>(i), now_).ok()) continue;
    push(now_, Kind::kExecutorReplaced, id, static_cast<uint32_t>(i), attempt);
    --left;
  }
}

void Simulator::apply(const std::vector<Decision>& decisions) {
  for (const Decision& d : decisions) {
    if (d.kind != DecisionKind::kAdmit) continue;  // the rest already changed the core's state
    const Job& j = scheduler_.job(d.job);
    push(now_ + delay_of(j.pods[0].node), Kind::kPodRunning, d.job, 0, j.attempt);
  }
}

}  // namespace gleaner::scheduler::sim
