// The flags of `gleaner-scheduler run`. What one flag alone allows is checked here, by
// CLI11 as the command line is parsed (a refused value exits 2 naming the flag, before
// anything starts, for `run` and `--check-config` alike); what depends on several flags
// or on the files they name is `validate()` (run_options.cc).
#include <string>
#include <vector>

#include "common/cli_checks.h"
#include "scheduler/cli/run_options.h"

namespace gleaner::scheduler {
void add_run_flags(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("--listen", o.listen, "HTTP address for reports, API and /metrics")
      ->capture_default_str();
  cmd.add_option("--tls-cert-dir", o.tls_cert_dir,
                 "serve --listen over HTTPS with tls.crt and tls.key of this directory (e.g. a "
                 "mounted Secret; re-read every --tls-reload-seconds); agents then use an https:// "
                 "--scheduler-url and --scheduler-ca-file");
  cmd.add_option("--estimator-listen", o.estimator_listen,
                 "serve Karmada's scheduler-estimator gRPC API here (e.g. :10352), answering "
                 "karmada-scheduler for every member cluster that reports");
  cmd.add_option("--tls-reload-seconds", o.tls_reload_seconds,
                 "how often --tls-cert-dir is re-read for a renewed certificate")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  cmd.add_option("--estimator-tls-cert-dir", o.estimator_tls_cert_dir,
                 "serve the estimator over TLS with tls.crt and tls.key of this directory "
                 "(re-read every minute); default plain gRPC, as karmada-scheduler dials "
                 "without --scheduler-estimator-ca-file");
  cmd.add_option("--estimator-batch-classes", o.estimator_batch_classes,
                 "priority classes whose plain cpu/memory requests the estimator counts as "
                 "batch-cpu/batch-memory")
      ->delimiter(',')
      ->capture_default_str();
  cmd.add_option("--report-auth", o.report_auth,
                 "who may report: token-review (each agent's projected ServiceAccount token, "
                 "checked with the API server, for its own node only), shared-token "
                 "(--token-file), none, or auto (shared-token with --token-file, token-review "
                 "with a cluster, else none)")
      ->check(CLI::IsMember({"auto", "token-review", "shared-token", "none"}))
      ->capture_default_str();
  cmd.add_option("--agent-token-audience", o.agent_audience,
                 "token-review: the audience agents' tokens must be issued for")
      ->capture_default_str();
  cmd.add_option("--agent-service-account", o.agent_service_account,
                 "token-review: NAMESPACE/NAME of the agents' ServiceAccount")
      ->capture_default_str();
  cmd.add_flag("--tls-from-webhook", o.tls_from_webhook,
               "serve --listen over HTTPS with the colocation webhook's certificate (kept in "
               "--webhook-secret, then also issued for --report-service; renewals served "
               "without restart)");
  cmd.add_option("--report-service", o.report_service,
                 "with --tls-from-webhook: NAMESPACE/NAME of the Service agents report to")
      ->capture_default_str();
  cmd.add_option("--ca-configmap", o.webhook.ca_config_maps,
                 "NAMESPACE/NAME of a ConfigMap to publish the scheduler's CA in as ca.crt, "
                 "for agents' --scheduler-ca-file (repeatable; with --webhook-secret)");
  cmd.add_option("--token-file", o.token_file,
                 "shared-token: the bearer token agents must present (re-read when it "
                 "changes)");
  cmd.add_option("--max-report-bytes", o.max_report_bytes, "largest report body accepted")
      ->check(kPositive)
      ->capture_default_str();
  cmd.add_option("--kubeconfig", o.kubeconfig, "kubeconfig of the (single) cluster");
  cmd.add_option("--cluster-name", o.cluster_name, "name of the --kubeconfig cluster")
      ->capture_default_str();
  cmd.add_option("--cluster", o.clusters, "member cluster NAME=KUBECONFIG (repeatable)");
  cmd.add_option("--hub", o.hub,
                 "a fleet's hub NAME=KUBECONFIG: its SparkApplications that a propagation "
                 "policy governs go to the --cluster members");
  cmd.add_option("--hub-policy-group", o.hub_policy_group,
                 "API group of the hub's PropagationPolicies (policy.karmada.io or "
                 "policy.one.alibabacloud.com)")
      ->check(CLI::IsMember({"policy.karmada.io", "policy.one.alibabacloud.com"}))
      ->capture_default_str();
  cmd.add_option("--hub-cluster-objects", o.hub_cluster_objects,
                 "read the members' labels and taints from the hub's Karmada Cluster objects "
                 "(cluster.karmada.io/v1alpha1); false for a hub without them")
      ->capture_default_str();
  cmd.add_option("--scheduler-name", o.scheduler_name, "spec.schedulerName of pods to place")
      ->capture_default_str();
  cmd.add_option("--qps", o.qps, "API requests per second per cluster")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd.add_option("--burst", o.burst, "API request burst per cluster")
      ->check(kPositive)
      ->capture_default_str();
  cmd.add_option("--stale-after", o.stale_after, "seconds: no new placements on the node")
      ->check(kPositive)
      ->capture_default_str();
  cmd.add_option("--degrade-after", o.degrade_after,
                 "seconds: the node's batch counts as zero and is removed from its status")
      ->check(kPositive)
      ->capture_default_str();
  cmd.add_option("--update-time-threshold", o.update_time_threshold,
                 "seconds: re-publish a node's batch resources at least this often")
      ->check(kPositive)
      ->capture_default_str();
  cmd.add_option("--resource-diff-threshold", o.resource_diff_threshold,
                 "publish when batch cpu or memory moved by more than this fraction")
      ->capture_default_str();
  cmd.add_option("--slo-config", o.slo_config,
                 "NAMESPACE/NAME of the ack-slo-config whose colocation-config "
                 "updateTimeThresholdSeconds and resourceDiffThreshold (per nodeConfigs "
                 "entry too) override the two flags above; \"\" for none")
      ->capture_default_str();
  cmd.add_option("--queues-file", o.queues_file,
                 "elastic quota tree: the scenario format's queues (and policy)");
  cmd.add_option(
      "--policy-file", o.policy_file,
      "the scheduling policy: a scenario's policy object (queueing, "
      "driverStartTimeoutSeconds, reservationTtlSeconds, reclaimHoldSeconds, gpuBinPack); the "
      "flags "
      "below override its fields when given");
  cmd.add_flag("--leader-elect", o.leader_elect,
               "run as one of several replicas: only the holder of the Lease schedules");
  cmd.add_option("--leader-elect-lease", o.lease, "NAMESPACE/NAME of the Lease")
      ->capture_default_str();
  cmd.add_option("--leader-elect-identity", o.identity,
                 "this replica's name in the Lease (default: $POD_NAME or the host name, "
                 "plus a random suffix)");
  cmd.add_option("--leader-elect-lease-duration", o.lease_duration,
                 "seconds a candidate waits on an unrenewed Lease before taking it")
      ->capture_default_str();
  cmd.add_option("--leader-elect-renew-deadline", o.renew_deadline,
                 "seconds the leader keeps trying to renew before it gives up leading")
      ->capture_default_str();
  cmd.add_option("--leader-elect-retry-period", o.retry_period,
                 "seconds between tries to acquire or renew")
      ->capture_default_str();
  cmd.add_option("--quota-tree-cluster", o.quota_tree_cluster,
                 "cluster whose ElasticQuotaTree is the quota tree (default: the first; "
                 "not watched with --queues-file)");
  // Given, each overrides the policy file's field (live_config).
  auto given = [&o](const char* flag) {
    return [&o, flag](const std::string&) { o.policy_flags_given.insert(flag); };
  };
  cmd.add_option("--policy", o.policy, "queueing: blocking | nonblocking")
      ->check(CLI::IsMember({"blocking", "nonblocking"}))
      ->each(given("--policy"))
      ->capture_default_str();
  cmd.add_option("--driver-start-timeout", o.driver_start_timeout,
                 "seconds before an admitted job whose driver is not running is reclaimed")
      ->check(kPositive)
      ->each(given("--driver-start-timeout"))
      ->capture_default_str();
  cmd.add_option("--reservation-ttl", o.reservation_ttl, "seconds executor room stays reserved")
      ->check(kPositive)
      ->each(given("--reservation-ttl"))
      ->capture_default_str();
  cmd.add_option("--reclaim-hold", o.reclaim_hold,
                 "seconds a node must have had an evicted pod's batch room free, without a "
                 "break, before that pod's job is placed there again (0: as soon as it has it)")
      ->check(kNonNegative)
      ->each(given("--reclaim-hold"))
      ->capture_default_str();
  cmd.add_option("--tick-ms", o.tick_ms, "scheduling pass interval")
      ->check(kPositive)
      ->capture_default_str();
  cmd.add_option("--log-level", o.log_level, "trace|debug|info|warn|error")
      ->check(kLogLevel)
      ->capture_default_str();
  cmd.add_option("--log-format", o.log_format,
                 "text, or json (one object per line: time, level, msg)")
      ->check(kLogFormat)
      ->capture_default_str();
  cmd.add_option("--webhook-listen", o.webhook.listen,
                 "HTTPS address of the colocation webhook (POST /mutate-pod); empty: none");
  cmd.add_option("--webhook-cert-dir", o.webhook.cert_dir,
                 "directory with tls.crt and tls.key (e.g. a mounted cert-manager Secret)");
  cmd.add_option("--webhook-secret", o.webhook.secret,
                 "NAMESPACE/NAME of a Secret the scheduler keeps its own CA and certificate in");
  cmd.add_option("--webhook-service", o.webhook.service,
                 "NAMESPACE/NAME of the webhook's Service (the certificate's DNS names)")
      ->capture_default_str();
  cmd.add_option("--webhook-configuration", o.webhook.configuration,
                 "MutatingWebhookConfiguration whose caBundle the scheduler keeps")
      ->capture_default_str();
  cmd.add_option("--webhook-cluster", o.webhook.cluster,
                 "cluster whose Secret holds the webhook's certificates and whose pods "
                 "/mutate-pod reviews (default: the first member); each cluster's own are "
                 "at /mutate-pod/<cluster>");
  cmd.add_option("--webhook-dns-name", o.webhook.dns_names,
                 "more DNS names for the webhook's certificate: the host of the "
                 "clientConfig.url other clusters call it at (repeatable; with "
                 "--webhook-secret)");
  cmd.add_option("--webhook-assign-scheduler", o.webhook_assign_scheduler,
                 "give a pod the webhook makes a batch pod --scheduler-name when it names no "
                 "scheduler or default-scheduler (false: leave spec.schedulerName alone)")
      ->capture_default_str();
  cmd.add_flag("--check-config", o.check_config,
               "validate the flags and the files they name, print \"config OK\" (exit 0) "
               "or every error (exit 2), without starting");
}

}  // namespace gleaner::scheduler
