#pragma once
// The flags of `gleaner-scheduler run` and the checks on them: each flag's own range is
// checked by CLI11 at parse time (add_run_flags); validate() finds the rest, and both `run`
// and --check-config call it. Also the queues file and the options the flags make.

#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/result.h"
#include "kube/config.h"
#include "scheduler/cli/colocation_webhook.h"
#include "scheduler/estimator/estimator_server.h"
#include "scheduler/gang/gang_scheduler.h"
#include "scheduler/kube/leader_election.h"
#include "scheduler/sim/scenario.h"

namespace gleaner::scheduler {

struct RunOptions {
  std::string listen = ":8080";
  std::string token_file;
  // Who may report (docs/scheduler.md): token-review, shared-token, none, or auto
  // (shared-token with --token-file, token-review with a cluster, else none).
  std::string report_auth = "auto";
  std::string agent_audience = "gleaner-scheduler";
  std::string agent_service_account = "gleaner-system/gleaner-agent";
  std::size_t max_report_bytes = 1 << 20;
  std::string kubeconfig;
  std::string cluster_name = gang::kDefaultCluster;
  std::vector<std::string> clusters;  // NAME=KUBECONFIG
  // A fleet's hub (NAME=KUBECONFIG, "" = none): its SparkApplications that a policy of
  // hub_policy_group governs are placed into the --cluster members (docs/fleet.md).
  std::string hub;
  std::string hub_policy_group = "policy.karmada.io";
  // Members' labels and taints from the hub's Karmada Cluster objects.
  bool hub_cluster_objects = true;
  std::string scheduler_name = "gleaner-scheduler";
  double qps = 50;
  int burst = 100;
  int64_t stale_after = 60;
  int64_t degrade_after = int64_t{15} * 60;
  int64_t update_time_threshold = 300;
  double resource_diff_threshold = 0.1;
  std::string slo_config = "kube-system/ack-slo-config";  // NAMESPACE/NAME, "" = none
  std::string queues_file;
  std::string policy_file;  // the scenario format's "policy" object; "" = none
  std::string policy = "nonblocking";
  int64_t driver_start_timeout = 300;
  int64_t reservation_ttl = 600;
  // No ping-pong: seconds a node a job lost a pod to an eviction on must keep that pod's
  // room free before the job goes back to it (core/reclaim_memory.h).
  int64_t reclaim_hold = kDefaultReclaimHoldSeconds;
  int tick_ms = 50;
  std::string log_level = "info";
  std::string log_format = "text";
  bool check_config = false;
  WebhookFlags webhook;
  // Batch pods naming no scheduler are given scheduler_name (--webhook-assign-scheduler).
  bool webhook_assign_scheduler = true;
  std::string tls_cert_dir;       // "" = plain HTTP on --listen
  int tls_reload_seconds = 60;    // how often --tls-cert-dir is re-read
  bool tls_from_webhook = false;  // --listen serves the webhook's certificate
  std::string report_service = "gleaner-system/gleaner-scheduler";  // NAMESPACE/NAME
  std::string quota_tree_cluster;  // "" = the hub, else the first cluster, unless --queues-file
  bool leader_elect = false;
  std::string lease = "gleaner-system/gleaner-scheduler";  // NAMESPACE/NAME
  std::string identity;                                    // "" = $POD_NAME or hostname, + random
  double lease_duration = 15;
  double renew_deadline = 10;
  double retry_period = 2;
  // Karmada's scheduler-estimator API (docs/karmada-estimator.md).
  std::string estimator_listen;        // "" = not served
  std::string estimator_tls_cert_dir;  // "" = plain gRPC
  std::vector<std::string> estimator_batch_classes = {"koord-batch", "koord-free"};
  // The policy flags given on the command line (--policy, --driver-start-timeout,
  // --reservation-ttl): each overrides the policy file's field, and the file the default.
  std::set<std::string> policy_flags_given;
};

kube_glue::LeaderElectionOptions election_options(const RunOptions& o);
// The estimator server's options from the --estimator-* flags (the address in gRPC's form).
estimator::EstimatorOptions estimator_options(const RunOptions& o);
// --report-auth with auto resolved: "token-review", "shared-token" or "none".
std::string report_auth_mode(const RunOptions& o);
// The problems of the --report-auth flags alone (part of validate).
std::vector<std::string> report_auth_errors(const RunOptions& o);
// The quota tree and the policy run starts with. --queues-file: the scenario's "queues"
// array, alone or in an object with "queues" (and optionally "policy"); --policy-file: a
// scenario's "policy" object. Both are read by the simulator's own parser, so a field means
// the same in `simulate` and `run`. A policy flag given on the command line overrides the
// file's field. Errors name the flag, the file and the field.
struct LiveConfig {
  SchedulerPolicy policy;
  std::vector<QueueSpec> queues;
};
Result<LiveConfig> live_config(const RunOptions& o);
Result<kube::KubeConfig> cluster_config(const std::string& path, const RunOptions& o);
// Registers the flags on `run`, each with the CLI11 check of its own values (run_flags.cc).
void add_run_flags(CLI::App& cmd, RunOptions& o);
// Every problem of a configuration whose flags each passed their own check: flags that
// conflict or need one another, and the files they name (readable, parsable), without
// binding a port or contacting any cluster. `run` starts only when this is empty.
std::vector<std::string> validate(const RunOptions& o);
// --check-config: prints "config OK" or every error; 0, or 2 for a configuration error.
int check_config(const RunOptions& o);

}  // namespace gleaner::scheduler
