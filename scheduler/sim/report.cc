// Renders the simulator's outcome as the output document of spec/scenario.md.
#include <algorithm>
#include <map>

#include "scheduler/sim/simulator.h"

namespace gleaner::scheduler::sim {

nlohmann::ordered_json Simulator::report() const {
  using OJson = nlohmann::ordered_json;
  OJson jobs = OJson::array();
  int64_t completed = 0;
  int64_t running = 0;
  int64_t pending = 0;
  int64_t makespan = 0;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    OJson out;
    out["name"] = jobs_[i].spec.name;
    if (!job_ids_[i]) {
      out["state"] = "Pending";
      out["kind"] = jobs_[i].spec.kind;
      out["submittedAt"] = jobs_[i].spec.submit_time;
      out["preemptions"] = 0;
      out["reschedules"] = 0;
      out["reason"] = "not submitted before policy.untilSeconds";
      out["pods"] = OJson::array();
      ++pending;
      jobs.push_back(std::move(out));
      continue;
    }
    const Job& j = scheduler_.job(*job_ids_[i]);
    auto given_up = given_up_.find(*job_ids_[i]);
    const bool placed = j.phase != JobPhase::kPending && given_up == given_up_.end();
    // Admitted but not every pod running yet still counts as Running: it holds room.
    const char* state = j.phase == JobPhase::kCompleted ? "Completed"
                        : placed                        ? "Running"
                                                        : "Pending";
    out["state"] = state;
    out["kind"] = j.spec.kind;
    if (placed && j.cluster) out["cluster"] = scheduler_.clusters().cluster_name(*j.cluster);
    out["submittedAt"] = j.spec.submit_time;
    // An executor replaced mid-run leaves the job admitted for a moment: still started.
    if (j.started) out["startedAt"] = j.started_at;
    if (j.phase == JobPhase::kCompleted) out["finishedAt"] = j.finished_at;
    out["preemptions"] = j.preemptions;
    out["reschedules"] = j.reschedules;
    if (!jobs_[i].executor_losses.empty() || !jobs_[i].events.empty())
      out["executorsReplaced"] = replaced_[*job_ids_[i]];
    if (!jobs_[i].executor_requests.empty()) {
      const JobId id = *job_ids_[i];
      auto placed = extras_placed_.find(id);
      out["extraExecutorsPlaced"] = placed == extras_placed_.end() ? 0 : placed->second;
      out["extraExecutorsWaiting"] = std::count_if(
          extras_.begin(), extras_.end(), [&](const Extra& e) { return e.job == id && !e.node; });
    }
    if (!placed) out["reason"] = given_up != given_up_.end() ? given_up->second : j.reason;
    OJson pods = OJson::array();
    const bool spark = j.spec.kind == "SparkApplication";
    std::map<std::string, int> role_index;  // the n-th pod of each role, as operators name them
    for (size_t p = 0; placed && p < j.pods.size(); ++p) {
      OJson pod;
      const std::string& role = j.role_of(p).name;
      const int n = role_index[role]++;
      if (spark) {
        pod["name"] =
            j.spec.name + (p == 0 ? std::string("-driver") : "-exec-" + std::to_string(p));
      } else {
        pod["name"] = j.spec.name + "-" + role + "-" + std::to_string(n);
      }
      pod["role"] = role;
      pod["node"] = scheduler_.clusters().node(j.pods[p].node).name;
      if (j.pods[p].bound) {
        pod["boundAt"] = j.pods[p].bound_at;
      } else {
        pod["boundAt"] = nullptr;  // room reserved, pod not created yet
      }
      pods.push_back(std::move(pod));
    }
    out["pods"] = std::move(pods);
    if (j.phase == JobPhase::kCompleted) {
      ++completed;
      makespan = std::max(makespan, j.finished_at);
    } else if (placed) {
      ++running;
    } else {
      ++pending;
    }
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
