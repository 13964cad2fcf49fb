#pragma once
// Leader election on a coordination.k8s.io/v1 Lease, as kube-scheduler does it (client-go's
// tools/leaderelection/leaderelection.go): the leader renews the Lease every retry period; a
// candidate takes it over once it has seen the same record unchanged for a whole lease
// duration (its own clock, never the holder's: clocks may be skewed). A leader that cannot
// renew within the renew deadline has lost, even while a request to the API server is still
// held: every Lease request is bounded by the time left, leading() turns false at the
// deadline, and the caller stops acting at once (the scheduler exits and is restarted as a
// candidate, as kube-scheduler does). The deadline falls lease duration - renew deadline
// before another replica may take over, so two replicas never bind at the same time.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/json_fwd.h"
#include "common/result.h"
#include "kube/api_client.h"

namespace gleaner::scheduler::kube_glue {

struct LeaderElectionOptions {
  std::string lease_namespace = "gleaner-system";
  std::string lease_name = "gleaner-scheduler";
  std::string identity;  // unique per replica (pod name plus a random suffix)
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

// Checks the durations (renew deadline below the lease duration, retry below the deadline).
Status check_leader_election(const LeaderElectionOptions& options);

// The decision for one look at the Lease, pure. `observed_for`: how long this candidate
// has seen the current record unchanged.
enum class LeaseStep { kCreate, kRenew, kTakeOver, kWait };
LeaseStep decide_lease(const std::optional<Json>& lease, const std::string& identity,
                       std::chrono::milliseconds observed_for,
                       std::chrono::milliseconds lease_duration);

class LeaderElector {
 public:
  LeaderElector(kube::KubeClient& client, LeaderElectionOptions options, const Clock& clock);
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Runs on its own thread: `started` once this replica leads, `lost` once it no longer
  // does (never after stop()).
  void start(std::function<void()> started, std::function<void()> lost);
  void stop();
  // True while this replica leads and its last renewal is within the renew deadline.
  [[nodiscard]] bool leading() const;

 private:
  void run(const std::stop_token& stop);
  // One look at the Lease and the write it calls for, all before `deadline`; true when this
  // replica holds it.
  bool try_acquire_or_renew(SteadyTime deadline);
  void lose();

  kube::KubeClient& client_;
  LeaderElectionOptions options_;
  const Clock& clock_;
  std::atomic<bool> leading_{false};
  std::string observed_record_;  // holder, renewTime and resourceVersion last seen
  SteadyTime observed_at_{};
  // The renew deadline of the current term (steady nanoseconds): the start of the last
  // successful renewal plus the renew deadline. Read by leading() from any thread.
  std::atomic<int64_t> deadline_ns_{0};
  std::function<void()> started_;
  std::function<void()> lost_;
  std::mutex wake_mu_;
  std::condition_variable_any wake_;
  std::jthread thread_;
};

}  // namespace gleaner::scheduler::kube_glue
