// How far each job's run has got in the simulator (progress.h has the model): the pods and
// nodes that make a run's pace, gathered from the world, and the run's end moved with it.
#include <algorithm>

#include "scheduler/sim/simulator.h"

namespace gleaner::scheduler::sim {

namespace {

std::string node_key(const gang::PodView& pod) {
  return pod.cluster + "/" + pod.node;
}

int64_t batch_cpu_of(const gang::PodView& pod) {
  return pod.batch ? pod.request.cpu_milli : 0;
}

}  // namespace

void Simulator::start_progress(uint32_t job, JobId core, const CoreView& view) {
  Run& r = runs_[job];
  const std::vector<RoleSpec> roles = roles_of(jobs_[job].spec);
  // Workers: every role after the leader's, or the leader's own when it is alone.
  Progress p;
  for (size_t i = roles.size() > 1 ? 1 : 0; i < roles.size(); ++i) {
    const RoleSpec live = roles[i];
    p.planned_rate += live.replicas * nominal_speed(live.batch.cpu_milli, live.regular.cpu_milli);
    p.planned_workers += live.replicas;
  }
  p.work = p.planned_rate * static_cast<double>(jobs_[job].duration_seconds);
  p.since = now_;
  p.planned_finish = view.started_at + jobs_[job].duration_seconds;
  r.progress = p;
  r.progress_of = std::make_pair(core, view.attempt);
  r.progressing = true;
  r.paced = false;
  ++r.finish_generation;
  pace_jobs_.insert(job);
}

void Simulator::change_node_use(const std::string& key,
                                const std::function<void(NodeUse&)>& change) {
  NodeUse& use = node_use_[key];
  const double before = use.share();
  change(use);
  // The runs there keep their pace while the node keeps its share (the usual case: a node
  // whose batch CPU covers what runs there); their own pods mark them.
  if (use.share() != before) pace_nodes_.insert(key);
}

void Simulator::report_batch_cpu(const std::string& key, int64_t batch_cpu) {
  change_node_use(key, [batch_cpu](NodeUse& use) { use.batch_cpu = batch_cpu; });
}

void Simulator::pod_started_on(const std::string& uid, const Pod& pod) {
  pace_jobs_.insert(pod.job);
  change_node_use(node_key(pod.view), [&](NodeUse& use) {
    if (use.running.emplace(uid, pod.job).second) use.running_batch_cpu += batch_cpu_of(pod.view);
  });
}

void Simulator::pod_left(const std::string& uid, const Pod& pod) {
  pace_jobs_.insert(pod.job);
  if (pod.view.node.empty() || pod.view.phase != "Running") return;
  change_node_use(node_key(pod.view), [&](NodeUse& use) {
    if (use.running.erase(uid) > 0) use.running_batch_cpu -= batch_cpu_of(pod.view);
  });
}

std::vector<Worker> Simulator::running_workers(uint32_t job) const {
  std::vector<Worker> workers;
  for (const std::string& uid : job_pods_[job]) {
    const Pod& pod = pods_.at(uid);
    if (!pod.works || pod.view.node.empty() || pod.view.phase != "Running") continue;
    auto use = node_use_.find(node_key(pod.view));
    workers.push_back(Worker{batch_cpu_of(pod.view), pod.view.regular.cpu_milli,
                             use == node_use_.end() ? 1.0 : use->second.share()});
  }
  return workers;
}

void Simulator::update_progress() {
  std::set<uint32_t> jobs = std::exchange(pace_jobs_, {});
  for (const std::string& key : std::exchange(pace_nodes_, {})) {
    for (const auto& [uid, job] : node_use_[key].running)
      jobs.insert(job);
  }
  for (uint32_t job : jobs)
    repace(job);
}

void Simulator::repace(uint32_t job) {
  Run& r = runs_[job];
  if (!r.progressing || !r.progress_of) return;
  Progress& p = r.progress;
  p = advanced(p, now_);
  const auto [core, attempt] = *r.progress_of;
  if (!run_active(job, core, attempt)) {
    r.progressing = false;  // reclaimed or given up: a new run starts from nothing
    return;
  }
  const Pace pace = pace_of(running_workers(job), p.planned_rate, p.planned_workers);
  if (r.paced && pace == p.pace) return;  // same pace: its end stands
  r.paced = true;
  p.pace = pace;
  if (pace.rate > 0) {
    p.stalled_since.reset();
  } else if (!p.stalled_since) {
    p.stalled_since = now_;
  }
  ++r.finish_generation;
  if (auto left = seconds_to_finish(p)) {
    push(now_ + *left, Kind::kFinish, job, r.finish_generation, core, attempt);
  }
}

}  // namespace gleaner::scheduler::sim
