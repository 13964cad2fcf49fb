#include "scheduler/kube/leader_election.h"

#include <algorithm>
#include <condition_variable>
#include <ctime>

#include <spdlog/spdlog.h>

#include "common/time_format.h"

namespace gleaner::scheduler::kube_glue {

namespace {

std::string lease_path(const LeaderElectionOptions& o) {
  return "/apis/coordination.k8s.io/v1/namespaces/" + o.lease_namespace + "/leases/" + o.lease_name;
}

std::string record_of(const Json& lease) {
  return string_at(lease, "spec/holderIdentity") + "|" + string_at(lease, "spec/renewTime") + "|" +
         string_at(lease, "metadata/resourceVersion");
}

}  // namespace

Status check_leader_election(const LeaderElectionOptions& o) {
  if (o.identity.empty())
    return make_error(ErrorCode::kInvalidArgument, "leader election: no identity");
  if (o.renew_deadline >= o.lease_duration) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--leader-elect-renew-deadline must be below --leader-elect-lease-duration");
  }
  if (o.retry_period >= o.renew_deadline || o.retry_period.count() <= 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--leader-elect-retry-period must be above 0 and below the renew deadline");
  }
  return ok_status();
}

LeaseStep decide_lease(const std::optional<Json>& lease, const std::string& identity,
                       std::chrono::milliseconds observed_for,
                       std::chrono::milliseconds lease_duration) {
  if (!lease) return LeaseStep::kCreate;
  const std::string holder = string_at(*lease, "spec/holderIdentity");
  if (holder == identity) return LeaseStep::kRenew;
  // Released (no holder), or not renewed for a whole lease duration as seen from here.
  if (holder.empty() || observed_for >= lease_duration) return LeaseStep::kTakeOver;
  return LeaseStep::kWait;
}

LeaderElector::LeaderElector(kube::KubeClient& client, LeaderElectionOptions options,
                             const Clock& clock)
    : client_(client), options_(std::move(options)), clock_(clock) {}

LeaderElector::~LeaderElector() {
  stop();
}

void LeaderElector::start(std::function<void()> started, std::function<void()> lost) {
  started_ = std::move(started);
  lost_ = std::move(lost);
  thread_ = std::jthread([this](const std::stop_token& st) { run(st); });
}

void LeaderElector::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
  if (!leading_.exchange(false)) return;
  // A clean stop hands the Lease back: a standby takes it on its next try instead of
  // waiting out the lease duration.
  const std::string path = lease_path(options_);
  auto found = client_.find(path);
  if (!found || !*found || string_at(**found, "spec/holderIdentity") != options_.identity) return;
  Json lease = **found;
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["renewTime"] = rfc3339_micro(clock_.wall_now());
  if (auto r = client_.replace(path, lease); !r) {
    spdlog::warn("leader election: releasing the Lease: {}", r.error().message);
  } else {
    spdlog::info("leader election: {} released the Lease", options_.identity);
  }
}

bool LeaderElector::leading() const {
  return leading_.load() && clock_.now().time_since_epoch().count() < deadline_ns_.load();
}

bool LeaderElector::try_acquire_or_renew(SteadyTime deadline) {
  // Each call gets what is left before the deadline: a request the API server holds (a
  // slow or overloaded server) cannot carry this replica past it.
  auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.now()));
  };
  const std::string path = lease_path(options_);
  auto found = client_.find(path, left());
  if (!found) {
    spdlog::debug("leader election: {}", found.error().message);
    return false;
  }
  const SteadyTime now = clock_.now();
  if (*found) {
    const std::string record = record_of(**found);
    if (record != observed_record_) {
      observed_record_ = record;
      observed_at_ = now;
    }
  }
  const auto observed_for =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - observed_at_);
  const LeaseStep step =
      decide_lease(*found, options_.identity, observed_for, options_.lease_duration);
  if (step == LeaseStep::kWait) return false;
  if (now >= deadline) return false;
  const std::string stamp = rfc3339_micro(clock_.wall_now());
  Json lease =
      *found ? **found
             : Json{{"apiVersion", "coordination.k8s.io/v1"},
                    {"kind", "Lease"},
                    {"metadata",
                     {{"name", options_.lease_name}, {"namespace", options_.lease_namespace}}},
                    {"spec", {{"leaseTransitions", 0}}}};
  Json& spec = lease["spec"];
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] = std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(options_.lease_duration).count());
  spec["renewTime"] = stamp;
  if (step != LeaseStep::kRenew) {
    spec["acquireTime"] = stamp;
    if (step == LeaseStep::kTakeOver)
      spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  auto written = step == LeaseStep::kCreate
                     ? client_.create("/apis/coordination.k8s.io/v1/namespaces/" +
                                          options_.lease_namespace + "/leases",
                                      lease, left())
                     : client_.replace(path, lease, left());  // resourceVersion: one writer wins
  if (!written) {
    spdlog::debug("leader election: {}", written.error().message);
    return false;
  }
  observed_record_ = record_of(*written);
  observed_at_ = now;
  return true;
}

void LeaderElector::run(const std::stop_token& stop) {
  // As client-go's LeaderElector.renew (tools/leaderelection/leaderelection.go): the leader
  // keeps renewing every retry period, each try bounded by the renew deadline, and stops
  // leading once a renewal has not succeeded within it. The deadline counts from the start
  // of the last renewal that succeeded (its write reached the server after that start), so
  // this replica stops at least lease duration - renew deadline before any other replica,
  // which waits a whole lease duration from when it saw that write, may take the Lease.
  while (!stop.stop_requested()) {
    const SteadyTime started = clock_.now();
    const SteadyTime deadline = leading_ ? SteadyTime(std::chrono::nanoseconds(deadline_ns_.load()))
                                         : started + options_.renew_deadline;
    if (leading_ && started >= deadline) return lose();
    if (try_acquire_or_renew(deadline)) {
      deadline_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         (started + options_.renew_deadline).time_since_epoch())
                         .count();
      if (!leading_.exchange(true)) {
        spdlog::info("leader election: {} leads (Lease {}/{})", options_.identity,
                     options_.lease_namespace, options_.lease_name);
        if (started_) started_();
      }
    } else if (leading_ && clock_.now() >= deadline) {
      return lose();
    }
    auto wait = options_.retry_period;
    if (leading_) {
      // Wake at the deadline at the latest, to stop on time.
      const SteadyTime until(std::chrono::nanoseconds(deadline_ns_.load()));
      wait = std::min(
          wait,
          std::max(std::chrono::milliseconds(0),
                   std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_.now())));
    }
    std::unique_lock lock(wake_mu_);
    wake_.wait_for(lock, stop, wait, [] { return false; });
  }
}

void LeaderElector::lose() {
  leading_ = false;
  spdlog::error(
      "leader election: {} could not renew Lease {}/{} within {} ms: no longer the leader",
      options_.identity, options_.lease_namespace, options_.lease_name,
      options_.renew_deadline.count());
  if (lost_) lost_();
}

}  // namespace gleaner::scheduler::kube_glue
