#pragma once
// A deterministic discrete-event simulator around the scheduler's production code: the gang
// layer (scheduler/gang) with the core inside it, as the live loop runs them. The simulator
// plays the cluster's part: agents reporting each node's batch capacity, the API server
// binding and deleting pods, kubelet starting them after the node's start delay, Spark's
// operator creating drivers (and creating them again after a reclaim), drivers creating
// their executors, the training operator creating every replica, and with several clusters
// a fleet's hub placing each job into a member where its copy's operator creates its pods
// (cluster_world.cc).
//
// Events at one instant are applied in a fixed order (finishes, node changes, pods starting,
// submissions), then one scheduling pass runs (the gang layer's tick: timeouts, then the
// core's pass); ties break by insertion order, so the same scenario always gives the same
// result.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/clock.h"
#include "common/result.h"
#include "kube/objects.h"
#include "scheduler/gang/gang_scheduler.h"
#include "scheduler/sim/progress.h"
#include "scheduler/sim/scenario.h"

namespace gleaner::scheduler::sim {

// Simulated time: whole seconds since the scenario's start, on both clocks.
class SimClock final : public Clock {
 public:
  [[nodiscard]] SteadyTime now() const override { return SteadyTime(std::chrono::seconds(now_)); }
  [[nodiscard]] WallTime wall_now() const override { return WallTime(std::chrono::seconds(now_)); }
  void set(int64_t seconds) { now_ = seconds; }

 private:
  int64_t now_ = 0;
};

// What the simulator learns from the gang layer as it goes: the passes' admissions (for the
// observer) and the core's reasons for taking jobs back (driver start timeouts).
class PassCounters final : public gang::GangCounters {
 public:
  void admitted(double /*latency_seconds*/) override { ++admitted_; }
  void reclaimed(uint32_t job, const std::string& reason) override {
    reclaims_.emplace_back(job, reason);
  }
  size_t take() { return std::exchange(admitted_, 0); }
  std::vector<std::pair<JobId, std::string>> take_reclaims() {
    return std::exchange(reclaims_, {});
  }

 private:
  size_t admitted_ = 0;
  std::vector<std::pair<JobId, std::string>> reclaims_;
};

class Simulator {
 public:
  // Builds the scheduler from the scenario; errors name the offending field.
  static Result<Simulator> create(const Scenario& scenario);

  // Runs to the end (no events left, or policy.untilSeconds).
  void run();
  // Called after each scheduling pass with its wall-clock cost; the benchmark uses it.
  void set_pass_observer(std::function<void(int64_t now, size_t admitted, double seconds)> f) {
    observer_ = std::move(f);
  }

  [[nodiscard]] int64_t now() const { return now_; }
  // The output document of spec/scenario.md.
  [[nodiscard]] nlohmann::ordered_json report() const;

 private:
  enum class Kind {
    kFinish = 0,  // b = the run's finish_generation when it was pushed
    kNodeChange = 1,
    kPodRunning = 2,
    kSubmit = 3,
    kTick = 4,
    kExecutorGone = 5,      // a = job, b = executor (1-based)
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
    uint32_t b;  // change, executor, request or event index
    JobId core;  // the core job and its admission it belongs to
    uint32_t attempt;
    std::string pod;  // kPodRunning: the pod's uid
    bool operator>(const Event& o) const;
  };
  // A pod of the simulated clusters.
  struct Pod {
    gang::PodView view;
    uint32_t job = 0;  // scenario index
    bool leader = false;
    bool executor = false;            // a Spark executor (of the gang, or beyond it)
    std::optional<uint32_t> request;  // an executor beyond the gang: its request's index
    bool counted_placed = false;      // beyond the gang, or a replacement: counted when first bound
    bool replacement = false;         // made to replace a pod its job lost
    bool works = false;               // does the job's work (progress.h)
  };
  // A scenario job as the world sees it.
  struct Run {
    bool submitted = false;
    bool given_up = false;
    std::string given_up_reason;
    std::string cluster;                // where its pods are created
    std::vector<JobId> core_jobs;       // each core job it has been, oldest first
    std::optional<uint32_t> scheduled;  // the admission whose end and churn are scheduled
    int start_timeouts = 0;             // consecutive driver start timeouts
    int replacements_asked = 0;         // pods its operator made to replace lost ones
    int replacements_placed = 0;        // of those, the ones bound to a node
    int evicted = 0;                    // executors the node agent evicted
    int extras_placed = 0;
    int executors_created = 0;  // Spark executor pods created (names them)
    // The current run's progress, while `progress_of` (its core job and attempt) runs.
    std::optional<std::pair<JobId, uint32_t>> progress_of;
    bool progressing = false;  // not finished, reclaimed or given up yet
    bool paced = false;        // its end is scheduled at progress.pace (when it has one)
    Progress progress;
    uint32_t finish_generation = 0;  // bumped whenever its pace, and so its end, changes
  };
  // What the core knows of a job, read under the gang layer's lock.
  struct CoreView {
    JobPhase phase = JobPhase::kPending;
    uint32_t attempt = 0;
    bool started = false;
    int64_t started_at = 0;
    int64_t admitted_at = 0;
  };
  // A node's batch CPU and the pods running there, kept as they change: its batch share.
  struct NodeUse {
    int64_t batch_cpu = 0;                    // its agent's last report
    int64_t running_batch_cpu = 0;            // asked by the pods running there
    std::map<std::string, uint32_t> running;  // uid -> scenario job
    [[nodiscard]] double share() const { return batch_share(batch_cpu, running_batch_cpu); }
  };

  Simulator(const Scenario& scenario, std::unique_ptr<gang::GangScheduler> gang,
            std::unique_ptr<SimClock> clock, std::unique_ptr<PassCounters> counters,
            std::unique_ptr<std::deque<gang::Action>> actions);
  void push(int64_t time, Kind kind, uint32_t a, uint32_t b, JobId core = 0, uint32_t attempt = 0,
            std::string pod = "");
  void handle(const Event& e);
  void report_node(uint32_t node, const Resources& batch);
  // The node agent's memory eviction: executors on `node` are deleted, lowest job priority
  // first, then the largest memory request, then the youngest, until `memory` is freed;
  // Spark asks for a replacement of each at once.
  void evict_memory(uint32_t node, int64_t memory);

  // --- the cluster's part ---
  void submit(uint32_t job);
  // Creates the job's leader (Spark's driver) or, for a training job, every replica, in
  // `cluster`, as its operator does.
  void create_leader_pods(uint32_t job, const std::string& cluster);
  std::string create_pod(uint32_t job, const std::string& cluster, gang::PodRole role,
                         const std::string& name, const RoleSpec& role_spec, int index);
  // The Pod object the job's operator makes (labels, requests, node selector), as JSON read.
  [[nodiscard]] kube::Pod pod_object(uint32_t job, const std::string& uid, const std::string& name,
                                     gang::PodRole role, const RoleSpec& role_spec,
                                     int index) const;
  void create_executor(uint32_t job, std::optional<uint32_t> request, bool replacement);
  // A pod beyond the gang or a replacement counts as placed when first bound.
  void count_if_placed(Pod& pod);
  // The pod is deleted (by the scheduler, Spark, or the world): the gang layer forgets it.
  void delete_pod(const std::string& uid, const std::string& phase = "");
  void pod_running(const std::string& uid);
  // The training operator creates a deleted replica again (same role and index).
  void recreate_replica(const Pod& pod, bool replacement);
  // Applies the gang layer's queued actions until none is left.
  void drain();
  void apply(const gang::Action& a);
  [[nodiscard]] std::vector<std::string> pods_of(uint32_t job) const;

  // --- what the scheduler decided ---
  // Records each job's newest core job, schedules what happens once a job runs, and counts
  // driver start timeouts; returns the jobs that just timed out, with why.
  std::map<uint32_t, std::string> observe_jobs();
  [[nodiscard]] CoreView core_view(JobId id) const;
  // A job whose leader just missed driverStartTimeoutSeconds for the kGiveUpAfter-th time
  // in a row, while nothing ahead can change anything (no submission, node change,
  // completion, pod start in time or pod event), would cycle forever: it is withdrawn (its
  // application deleted) and reported Pending. True when it withdrew some.
  bool give_up_cycling_jobs(const std::map<uint32_t, std::string>& timed_out);
  [[nodiscard]] bool outside_events_ahead() const;
  void job_event(uint32_t job, const JobEvent& event);
  void finish(uint32_t job);
  // The event belongs to the job's current run: its newest core job, admitted as then.
  [[nodiscard]] bool active(const Event& e) const;
  [[nodiscard]] bool run_active(uint32_t job, JobId core, uint32_t attempt) const;

  // --- how far each run has got (job_progress.cc, progress.h) ---
  // The run just started: its work is its declared workers' CPU for durationSeconds.
  void start_progress(uint32_t job, JobId core, const CoreView& view);
  // Brings every run whose pods or nodes changed this instant up to date, and moves its end.
  void update_progress();
  void repace(uint32_t job);
  [[nodiscard]] std::vector<Worker> running_workers(uint32_t job) const;
  void pod_started_on(const std::string& uid, const Pod& pod);
  void pod_left(const std::string& uid, const Pod& pod);
  void report_batch_cpu(const std::string& node_key, int64_t batch_cpu);
  // Applies `change` to the node's use; when its share moves, every run there is repaced.
  void change_node_use(const std::string& node_key, const std::function<void(NodeUse&)>& change);
  // The report's progress fields of the run (spec/scenario.md, docs/scheduler.md).
  void progress_fields(const Run& r, bool completed, nlohmann::ordered_json& out) const;
  // The end of the simulated time: policy.untilSeconds, else the last instant.
  [[nodiscard]] int64_t horizon() const { return until_ ? std::max(*until_, now_) : now_; }
  [[nodiscard]] const std::string& ns_of(uint32_t job) const;

  // The fleet's hub, when the scenario has several clusters (a name no member may have: it
  // has a character cluster names do not).
  static constexpr const char* kHub = "fleet hub";
  // Regular allocatable without a limit on cpu and memory: a scenario sizes nodes by their
  // batch capacity; only their GPUs (which kubelet admits against allocatable) are counted.
  static constexpr int64_t kUnlimited = int64_t{1} << 50;

  std::vector<ScenarioNode> nodes_;
  std::vector<ScenarioJob> jobs_;
  std::vector<Run> runs_;
  std::map<std::string, int64_t> start_delay_;      // "cluster/node" -> seconds
  std::map<std::string, Pod> pods_;                 // uid
  std::map<JobId, uint32_t> scenario_job_;          // core job -> scenario index
  std::vector<std::vector<std::string>> job_pods_;  // scenario index -> its pods, oldest first
  std::set<uint32_t> unfinished_;                   // submitted, neither finished nor given up
  std::map<std::string, NodeUse> node_use_;         // "cluster/node"
  // What changed since update_progress last looked: their runs' pace may have.
  std::set<uint32_t> pace_jobs_;
  std::set<std::string> pace_nodes_;
  // Jobs something happened to since observe_jobs last looked (a pod created, bound,
  // started or deleted, a placement, a reclaim): only they can have changed.
  std::set<uint32_t> touched_;
  // Several clusters: every job is a fleet hub's, placed into a member; one cluster: every
  // job is that cluster's own.
  bool hub_ = false;
  std::string only_cluster_;
  uint64_t next_uid_ = 0;
  uint64_t report_sequence_ = 0;
  static constexpr int kGiveUpAfter = 3;
  std::optional<int64_t> until_;
  int64_t driver_start_timeout_ = 0;
  // On the heap: the gang layer keeps references to them, and the simulator moves.
  std::unique_ptr<SimClock> clock_;
  std::unique_ptr<PassCounters> counters_;
  std::unique_ptr<std::deque<gang::Action>> actions_;
  std::unique_ptr<gang::GangScheduler> gang_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::optional<int64_t> tick_at_;
  uint64_t seq_ = 0;
  int64_t now_ = 0;
  std::function<void(int64_t, size_t, double)> observer_;
};

// Parses, runs and renders: the whole of `gleaner-scheduler simulate`.
Result<std::string> simulate(std::string_view scenario_text, std::string_view where);

}  // namespace gleaner::scheduler::sim
