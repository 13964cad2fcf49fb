// Renders the simulator's outcome as the output document of spec/scenario.md.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "common/json_util.h"
#include "scheduler/sim/simulator.h"

namespace gleaner::scheduler::sim {

void Simulator::progress_fields(const Run& r, bool completed, nlohmann::ordered_json& out) const {
  // A run still going is shown as it stands at the end of the simulated time.
  const Progress p = r.progressing ? advanced(r.progress, horizon()) : r.progress;
  out["plannedFinishAt"] = p.planned_finish;
  if (!completed) {
    const double done = p.work > 0 ? p.done / p.work : 1.0;
    out["workDonePercent"] = static_cast<int64_t>(std::floor(100 * done));
    if (r.progressing && p.stalled_since) out["stalledSince"] = *p.stalled_since;
  }
  out["stalledSeconds"] = p.stalled_seconds;
  out["executorSecondsStarved"] = std::llround(p.starved_seconds);
  out["executorSecondsMissing"] = std::llround(p.missing_seconds);
}

nlohmann::ordered_json Simulator::report() const {
  using OJson = nlohmann::ordered_json;
  // A node's core name is "cluster/node": the report names nodes as the scenario does.
  auto node_name = [](const std::string& core) { return core.substr(core.find('/') + 1); };
  OJson jobs = OJson::array();
  int64_t completed = 0;
  int64_t running = 0;
  int64_t pending = 0;
  int64_t makespan = 0;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    const Run& r = runs_[i];
    OJson out;
    out["name"] = jobs_[i].spec.name;
    if (r.core_jobs.empty()) {
      out["state"] = "Pending";
      out["kind"] = jobs_[i].spec.kind;
      out["submittedAt"] = jobs_[i].spec.submit_time;
      out["preemptions"] = 0;
      out["reschedules"] = 0;
      out["reason"] = r.submitted ? (r.given_up ? r.given_up_reason : "not queued")
                                  : "not submitted before policy.untilSeconds";
      out["pods"] = OJson::array();
      ++pending;
      jobs.push_back(std::move(out));
      continue;
    }
    gang_->inspect([&](const Scheduler& core) {
      const Job& j = core.job(r.core_jobs.back());
      const bool placed =
          !r.given_up && (j.phase == JobPhase::kAdmitted || j.phase == JobPhase::kRunning ||
                          j.phase == JobPhase::kCompleted);
      // Admitted but not every pod running yet still counts as Running: it holds room.
      const char* state = r.given_up                        ? "Pending"
                          : j.phase == JobPhase::kCompleted ? "Completed"
                          : placed                          ? "Running"
                                                            : "Pending";
      out["state"] = state;
      out["kind"] = jobs_[i].spec.kind;
      if (placed && j.cluster) out["cluster"] = core.clusters().cluster_name(*j.cluster);
      out["submittedAt"] = jobs_[i].spec.submit_time;
      // An executor replaced mid-run leaves the job admitted for a moment: still started.
      if (j.started) out["startedAt"] = j.started_at;
      if (j.phase == JobPhase::kCompleted) out["finishedAt"] = j.finished_at;
      // Every core job it has been counts: a run its operator retried (a failed leader) is
      // one more placement, as a reclaim is.
      int preemptions = 0;
      int reschedules = static_cast<int>(r.core_jobs.size()) - 1;
      for (JobId id : r.core_jobs) {
        preemptions += core.job(id).preemptions;
        reschedules += core.job(id).reschedules;
      }
      out["preemptions"] = preemptions;
      out["reschedules"] = reschedules;
      if (r.progress_of && r.progress_of->first == r.core_jobs.back() &&
          r.progress_of->second == j.attempt) {
        progress_fields(r, j.phase == JobPhase::kCompleted, out);
      }
      if (!jobs_[i].executor_losses.empty() || !jobs_[i].events.empty() || r.evicted > 0) {
        out["replacementsAsked"] = r.replacements_asked;
        out["executorsReplaced"] = r.replacements_placed;
      }
      if (r.evicted > 0) out["executorsEvicted"] = r.evicted;
      int steered = 0;
      for (JobId id : r.core_jobs)
        steered += core.job(id).steered_away;
      if (r.evicted > 0 || steered > 0) out["placementsSteeredAway"] = steered;
      if (!jobs_[i].executor_requests.empty()) {
        int waiting = 0;
        for (const auto& [uid, pod] : pods_)
          if (pod.job == i && pod.request && pod.view.node.empty()) ++waiting;
        out["extraExecutorsPlaced"] = r.extras_placed;
        out["extraExecutorsWaiting"] = waiting;
      }
      if (!placed) out["reason"] = r.given_up ? r.given_up_reason : j.reason;
      OJson pods = OJson::array();
      const bool spark = j.spec.kind == "SparkApplication";
      std::map<std::string, int> role_index;  // the n-th pod of each role, as operators name them
      for (size_t p = 0; placed && p < j.pods.size(); ++p) {
        OJson pod;
        const std::string& role = j.role_of(p).name;
        const int n = role_index[role]++;
        const std::string& name = jobs_[i].spec.name;
        if (spark) {
          pod["name"] = name + (p == 0 ? std::string("-driver") : "-exec-" + std::to_string(p));
        } else {
          pod["name"] = fmt::format("{}-{}-{}", name, role, n);
        }
        pod["role"] = role;
        pod["node"] = node_name(core.clusters().node(j.pods[p].node).name);
        // A completed job's pods all ran (Spark deleted its executors before its driver
        // ended, which unbinds them in the core): their last bind time.
        if (j.pods[p].bound || j.phase == JobPhase::kCompleted) {
          pod["boundAt"] = j.pods[p].bound_at;
        } else {
          pod["boundAt"] = nullptr;  // room reserved, pod not created yet
        }
        pods.push_back(std::move(pod));
      }
      out["pods"] = std::move(pods);
      if (r.given_up || !placed) {
        ++pending;
      } else if (j.phase == JobPhase::kCompleted) {
        ++completed;
        makespan = std::max(makespan, j.finished_at);
      } else {
        ++running;
      }
    });
    jobs.push_back(std::move(out));
  }
  OJson doc;
  doc["jobs"] = std::move(jobs);
  doc["summary"] = OJson{{"completed", completed},
                         {"running", running},
                         {"pending", pending},
                         {"makespanSeconds", makespan}};
  return doc;
}

Result<std::string> simulate(std::string_view scenario_text, std::string_view where) {
  auto scenario = parse_scenario_text(scenario_text, where);
  if (!scenario) return scenario.error();
  auto sim = Simulator::create(*scenario);
  if (!sim) return make_error(sim.error().code, std::string(where) + ": " + sim.error().message);
  sim->run();
  return sim->report().dump(2) + "\n";
}

}  // namespace gleaner::scheduler::sim
