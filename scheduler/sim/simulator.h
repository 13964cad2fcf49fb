#pragma once
// A deterministic discrete-event simulator around the unchanged scheduler core. Events
// at one instant are applied in a fixed order (finishes, node changes, pods starting,
// submissions), then the core's timeouts and one scheduling pass run; ties break by
// insertion order, so the same scenario always gives the same result.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "scheduler/core/scheduler.h"
#include "scheduler/sim/scenario.h"

namespace gleaner::scheduler::sim {

class Simulator {
 public:
  // Builds the core from the scenario; errors name the offending field.
  static Result<Simulator> create(const Scenario& scenario);

  // Runs to the end (no events left, or policy.untilSeconds).
  void run();
  // Called after each scheduling pass with its wall-clock cost; the benchmark uses it.
  void set_pass_observer(std::function<void(int64_t now, size_t admitted, double seconds)> f) {
    observer_ = std::move(f);
  }

  [[nodiscard]] const Scheduler& scheduler() const { return scheduler_; }
  [[nodiscard]] int64_t now() const { return now_; }
  // The output document of spec/scenario.md.
  [[nodiscard]] nlohmann::ordered_json report() const;

 private:
  enum class Kind {
    kFinish = 0,
    kNodeChange = 1,
    kPodRunning = 2,
    kSubmit = 3,
    kTick = 4,
    kExecutorGone = 5,      // a = job, b = executor index
    kExecutorReplaced = 6,  // Spark's replacement for it
    kExtraRequested = 7,    // a = job, b = its executorRequests index
    kExtraReleased = 8,
    kJobEvent = 9,  // a = job, b = its events index
  };
  struct Event {
    int64_t time;
    Kind kind;
    uint64_t seq;
    uint32_t a;  // job or node index
    uint32_t b;  // pod index or change index
    uint32_t attempt;
    bool operator>(const Event& o) const;
  };

  Simulator(const Scenario& scenario, Scheduler scheduler);
  void push(int64_t time, Kind kind, uint32_t a, uint32_t b, uint32_t attempt);
  void handle(const Event& e);
  void apply(const std::vector<Decision>& decisions);
  void start_executors(JobId id);
  // The job's executor losses (ExecutorLoss) and requests (ExecutorRequest), from the
  // moment it started running.
  void schedule_losses(JobId id, int64_t started, uint32_t attempt);
  // Executors beyond the gang still waiting for room get it where some was given back;
  // those of jobs no longer running are dropped.
  void place_waiting_extras();
  void release_extras(JobId id, std::optional<uint32_t> request);
  // A scenario JobEvent: pods of a running job go (replaced at once), or its leader fails.
  void job_event(JobId id, const JobEvent& event);
  // A job whose leader just missed driverStartTimeoutSeconds for the kGiveUpAfter-th time
  // in a row, while nothing ahead can change anything (no submission, node change,
  // completion, pod start in time or pod event), would cycle forever: it is withdrawn and
  // reported Pending. `timed_out`: the jobs reclaimed for it at this instant, with why.
  // True when it withdrew some.
  bool give_up_cycling_jobs(const std::map<JobId, std::string>& timed_out);
  [[nodiscard]] bool outside_events_ahead() const;

  [[nodiscard]] int64_t delay_of(NodeId node) const;

  std::vector<ScenarioNode> nodes_;
  std::vector<ScenarioJob> jobs_;
  std::vector<uint32_t> scenario_index_;   // core job id -> its index in jobs_
  std::vector<int> replaced_;              // core job id -> executors replaced
  std::map<JobId, int> start_timeouts_;    // consecutive driver start timeouts
  std::map<JobId, std::string> given_up_;  // why the simulation stopped retrying a job
  static constexpr int kGiveUpAfter = 3;
  struct Extra {
    JobId job;
    uint32_t request;            // index in its job's executor_requests
    uint32_t attempt;            // the admission it belongs to
    std::optional<NodeId> node;  // nullopt: waiting for room
  };
  std::vector<Extra> extras_;
  std::map<JobId, int> extras_placed_;         // core job id -> extra executors that got room
  std::vector<std::optional<JobId>> job_ids_;  // scenario order -> core id, once submitted
  std::vector<int64_t> durations_;             // by core id
  std::optional<int64_t> until_;
  Scheduler scheduler_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::optional<int64_t> tick_at_;
  uint64_t seq_ = 0;
  int64_t now_ = 0;
  std::function<void(int64_t, size_t, double)> observer_;
};

// Parses, runs and renders: the whole of `gleaner-scheduler simulate`.
Result<std::string> simulate(std::string_view scenario_text, std::string_view where);

}  // namespace gleaner::scheduler::sim
