#include "scheduler/cli/run_options.h"

#include <cstdlib>
#include <iostream>
#include <random>
#include <set>

#include <unistd.h>

#include "common/cli_main.h"
#include "common/file_io.h"
#include "net/listen_address.h"
#include "scheduler/admission/certificates.h"
#include "scheduler/kube/agent_tokens.h"
#include "scheduler/server/scheduler_port.h"

namespace gleaner::scheduler {

kube_glue::LeaderElectionOptions election_options(const RunOptions& o) {
  kube_glue::LeaderElectionOptions e;
  const auto slash = o.lease.find('/');
  if (slash != std::string::npos) {
    e.lease_namespace = o.lease.substr(0, slash);
    e.lease_name = o.lease.substr(slash + 1);
  }
  e.identity = o.identity;
  if (e.identity.empty()) {
    // Read at start-up, before any thread exists.
    const char* pod = std::getenv("POD_NAME");  // NOLINT(concurrency-mt-unsafe)
    char host[256] = "gleaner-scheduler";
    if (pod == nullptr) ::gethostname(host, sizeof(host) - 1);
    // A suffix per process: a restarted replica is a new candidate, not the old leader.
    e.identity =
        std::string(pod != nullptr ? pod : host) + "_" + std::to_string(std::random_device{}());
  }
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  e.lease_duration = ms(o.lease_duration);
  e.renew_deadline = ms(o.renew_deadline);
  e.retry_period = ms(o.retry_period);
  return e;
}

namespace {

Result<Json> read_json(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return parse_json(*text, path);
}

// A document of the scenario format, read by the simulator's parser; errors prefixed with
// the flag and the file.
Result<sim::Scenario> scenario_part(const Json& doc, const std::string& flag,
                                    const std::string& path) {
  auto s = sim::parse_scenario(doc);
  if (!s) return make_error(s.error().code, flag + ": " + path + ": " + s.error().message);
  if (s->until_seconds) {
    return make_error(
        ErrorCode::kInvalidArgument,
        flag + ": " + path + ": policy.untilSeconds: a simulation's clock, not run's");
  }
  return s;
}

}  // namespace

Result<LiveConfig> live_config(const RunOptions& o) {
  LiveConfig c;
  bool queues_policy = false;
  if (!o.queues_file.empty()) {
    const std::string& path = o.queues_file;
    auto doc = read_json(path);
    if (!doc) return make_error(doc.error().code, "--queues-file: " + doc.error().message);
    Json wrapped = doc->is_array() ? Json{{"queues", *doc}} : *doc;
    if (!wrapped.is_object()) {
      return make_error(ErrorCode::kParse,
                        "--queues-file: " + path + ": expected an array of queues or an object");
    }
    for (auto it = wrapped.begin(); it != wrapped.end(); ++it) {
      if (it.key() != "queues" && it.key() != "policy") {
        return make_error(ErrorCode::kParse,
                          "--queues-file: " + path + ": " + it.key() + ": unknown field");
      }
    }
    queues_policy = wrapped.contains("policy");
    auto s = scenario_part(wrapped, "--queues-file", path);
    if (!s) return s.error();
    c.queues = std::move(s->queues);
    c.policy = s->policy;
  }
  if (!o.policy_file.empty()) {
    const std::string& path = o.policy_file;
    if (queues_policy) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--policy-file: " + o.queues_file +
                            " (--queues-file) has a policy too; give it in one file");
    }
    auto doc = read_json(path);
    if (!doc) return make_error(doc.error().code, "--policy-file: " + doc.error().message);
    if (!doc->is_object()) {
      return make_error(ErrorCode::kParse,
                        "--policy-file: " + path + ": expected an object (a scenario's policy)");
    }
    auto s = scenario_part(Json{{"policy", *doc}}, "--policy-file", path);
    if (!s) return s.error();
    c.policy = s->policy;
  }
  auto given = [&](const char* flag) { return o.policy_flags_given.contains(flag); };
  if (given("--policy")) {
    c.policy.queueing =
        o.policy == "blocking" ? QueueingPolicy::kBlocking : QueueingPolicy::kNonBlocking;
  }
  if (given("--driver-start-timeout"))
    c.policy.driver_start_timeout_seconds = o.driver_start_timeout;
  if (given("--reservation-ttl")) c.policy.reservation_ttl_seconds = o.reservation_ttl;
  if (given("--reclaim-hold")) c.policy.reclaim_hold_seconds = o.reclaim_hold;
  return c;
}

Result<kube::KubeConfig> cluster_config(const std::string& path, const RunOptions& o) {
  auto cfg = kube::load_kubeconfig(path);
  if (!cfg) return cfg.error();
  cfg->qps = o.qps;
  cfg->burst = o.burst;
  return cfg;
}

std::string report_auth_mode(const RunOptions& o) {
  if (o.report_auth != "auto") return o.report_auth;
  if (!o.token_file.empty()) return "shared-token";
  return o.clusters.empty() && o.kubeconfig.empty() ? "none" : "token-review";
}

std::vector<std::string> report_auth_errors(const RunOptions& o) {
  std::vector<std::string> errors;
  auto add = [&](const std::string& flag, const std::string& message) {
    errors.push_back(flag + ": " + message);
  };
  const std::string auth = report_auth_mode(o);
  if (auth == "token-review") {
    if (o.clusters.empty() && o.kubeconfig.empty())
      add("--report-auth", "token-review needs a cluster (--kubeconfig or --cluster) to ask");
    if (!o.token_file.empty())
      add("--report-auth", "token-review does not use --token-file (the shared token)");
    if (kube_glue::service_account_user(o.agent_service_account).empty())
      add("--agent-service-account", "expected NAMESPACE/NAME, got " + o.agent_service_account);
    if (o.agent_audience.empty()) add("--agent-token-audience", "must not be empty");
  } else if (auth == "shared-token") {
    if (o.token_file.empty()) add("--report-auth", "shared-token needs --token-file");
  }
  return errors;
}

std::vector<std::string> validate(const RunOptions& o) {
  std::vector<std::string> errors;
  auto add = [&](const std::string& flag, const std::string& message) {
    errors.push_back(flag + ": " + message);
  };
  if (auto l = net::parse_listen_address(o.listen); !l) add("--listen", l.error().message);
  if (!o.token_file.empty()) {
    auto token = read_file(o.token_file);
    if (!token) {
      add("--token-file", token.error().message);
    } else if (token->find_first_not_of(" \t\r\n") == std::string::npos) {
      add("--token-file", o.token_file + " is empty");
    }
  }
  for (const auto& e : report_auth_errors(o))
    errors.push_back(e);
  if (o.degrade_after < o.stale_after) add("--degrade-after", "must not be below --stale-after");
  if (!o.slo_config.empty()) {
    const auto slash = o.slo_config.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == o.slo_config.size())
      add("--slo-config", "expected NAMESPACE/NAME or \"\", got " + o.slo_config);
  }
  if (o.resource_diff_threshold < 0 || o.resource_diff_threshold >= 1) {
    add("--resource-diff-threshold", "must be in [0, 1)");
  }
  if (o.scheduler_name.empty()) add("--scheduler-name", "must not be empty");
  if (auto c = live_config(o); !c) {
    errors.push_back(c.error().message);
  } else if (auto tree = QuotaTree::build(c->queues); !tree) {
    add("--queues-file", o.queues_file + ": " + tree.error().message);
  }
  if (o.leader_elect) {
    if (o.clusters.empty() && o.kubeconfig.empty())
      add("--leader-elect", "needs a cluster (--kubeconfig or --cluster) to hold the Lease");
    if (o.lease.find('/') == std::string::npos || o.lease.front() == '/' || o.lease.back() == '/')
      add("--leader-elect-lease", "expected NAMESPACE/NAME, got " + o.lease);
    if (Status s = kube_glue::check_leader_election(election_options(o)); !s)
      add("--leader-elect", s.error().message);
  }
  if (!o.quota_tree_cluster.empty() && !o.queues_file.empty())
    add("--quota-tree-cluster", "not used with --queues-file (the file is the quota tree)");
  if (!o.tls_cert_dir.empty()) {
    if (auto pair = admission::read_key_pair_dir(o.tls_cert_dir, std::chrono::system_clock::now());
        !pair)
      add("--tls-cert-dir", pair.error().message);
  }
  for (const auto& e : webhook_flag_errors(o.webhook))
    errors.push_back(e);
  if (o.tls_from_webhook) {
    if (o.webhook.listen.empty())
      add("--tls-from-webhook", "needs the colocation webhook (--webhook-listen)");
    if (!o.tls_cert_dir.empty()) add("--tls-from-webhook", "give it or --tls-cert-dir, not both");
    if (o.report_service.find('/') == std::string::npos)
      add("--report-service", "expected NAMESPACE/NAME, got " + o.report_service);
  }
  if (!o.webhook.listen.empty()) {
    if (auto l = net::parse_listen_address(o.webhook.listen); !l)
      add("--webhook-listen", l.error().message);
    if (o.clusters.empty() && o.kubeconfig.empty())
      add("--webhook-listen", "needs a cluster (--kubeconfig or --cluster)");
    if (!o.webhook.cert_dir.empty()) {
      for (const char* f : {"tls.crt", "tls.key"}) {
        if (auto t = read_file(join_path(o.webhook.cert_dir, f)); !t)
          add("--webhook-cert-dir", t.error().message);
      }
    }
  }
  if (!o.estimator_listen.empty()) {
    if (auto l = net::parse_listen_address(o.estimator_listen); !l)
      add("--estimator-listen", l.error().message);
    if (!o.estimator_tls_cert_dir.empty()) {
      if (auto pair = admission::read_key_pair_dir(o.estimator_tls_cert_dir,
                                                   std::chrono::system_clock::now());
          !pair)
        add("--estimator-tls-cert-dir", pair.error().message);
    }
  } else if (!o.estimator_tls_cert_dir.empty()) {
    add("--estimator-tls-cert-dir", "needs --estimator-listen");
  }
  std::set<std::string> names;
  for (const auto& pair : o.clusters) {
    const auto eq = pair.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size()) {
      add("--cluster " + pair, "expected NAME=KUBECONFIG");
      continue;
    }
    if (!names.insert(pair.substr(0, eq)).second)
      add("--cluster " + pair, "duplicate cluster name");
    if (auto cfg = kube::load_kubeconfig(pair.substr(eq + 1)); !cfg) {
      add("--cluster " + pair, cfg.error().message);
    }
  }
  if (!o.hub.empty()) {
    const auto eq = o.hub.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == o.hub.size()) {
      add("--hub " + o.hub, "expected NAME=KUBECONFIG");
    } else {
      if (!names.insert(o.hub.substr(0, eq)).second)
        add("--hub " + o.hub, "the hub's name is also a member's");
      if (auto cfg = kube::load_kubeconfig(o.hub.substr(eq + 1)); !cfg)
        add("--hub " + o.hub, cfg.error().message);
    }
    if (o.clusters.empty()) add("--hub", "needs member clusters (--cluster NAME=KUBECONFIG)");
  }
  if (!o.kubeconfig.empty()) {
    if (!names.insert(o.cluster_name).second) {
      add("--kubeconfig", "cluster name " + o.cluster_name + " also given with --cluster");
    }
    if (auto cfg = kube::load_kubeconfig(o.kubeconfig); !cfg) {
      add("--kubeconfig", cfg.error().message);
    }
  }
  if (!o.quota_tree_cluster.empty() && names.count(o.quota_tree_cluster) == 0)
    add("--quota-tree-cluster", "no cluster named " + o.quota_tree_cluster);
  // The webhook serves the clusters where pods are made: a fleet's members, not its hub.
  const std::string hub_name = o.hub.substr(0, o.hub.find('='));
  if (!o.webhook.listen.empty() && !o.webhook.cluster.empty() &&
      (names.count(o.webhook.cluster) == 0 || o.webhook.cluster == hub_name))
    add("--webhook-cluster", "no member cluster named " + o.webhook.cluster);
  return errors;
}

estimator::EstimatorOptions estimator_options(const RunOptions& o) {
  estimator::EstimatorOptions e;
  auto address = net::parse_listen_address(o.estimator_listen);
  if (address) {
    const bool v6 = address->host.find(':') != std::string::npos;
    e.listen =
        (v6 ? "[" + address->host + "]" : address->host) + ":" + std::to_string(address->port);
  } else {
    e.listen = o.estimator_listen;  // validate() names it; gRPC refuses it again
  }
  e.tls_cert_dir = o.estimator_tls_cert_dir;
  e.decode.batch_classes = {o.estimator_batch_classes.begin(), o.estimator_batch_classes.end()};
  return e;
}

int check_config(const RunOptions& o) {
  const auto errors = validate(o);
  for (const auto& e : errors)
    std::cout << "gleaner-scheduler run: " << e << "\n";
  if (errors.empty()) std::cout << "config OK\n";
  return errors.empty() ? 0 : kExitUsage;
}

}  // namespace gleaner::scheduler
