// The live scheduler end to end, in-process, on loopback:
//
// (a) Report ingestion. N agents each keep one HTTP/1.1 keep-alive connection to the
//     scheduler's report port (Boost.Beast server on one io_context thread, as in
//     `gleaner-scheduler run`) and POST NodeReports with a bearer token; T client threads
//     share the agents, each with one request in flight (closed loop). Printed: reports/s
//     accepted and the p50/p99/max latency of one POST as the agent sees it, beside the
//     target of "thousands of reports per second".
//
// (b) Pending -> bound. The Python test API server (test/apiserver/apiserver.py) stands in
//     for Kubernetes. Nodes report ample batch capacity; then G Spark applications (one
//     SparkApplication, one driver and E executor pods with schedulerName
//     gleaner-scheduler) are created one after another. Latency runs from the moment a
//     pod's create request is sent to the moment a watch of this benchmark sees
//     spec.nodeName set. The client-side API rate limit is off (--qps 0); the test API
//     server is single Python process, and its speed bounds these figures.
//
//   live_bench [--agents N] [--rounds R] [--clients T] [--apps G] [--executors E]
//              [--nodes K] [--skip-kube]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <unistd.h>

#include "bench/bench_cli.h"
#include "bench/bench_stats.h"
#include "common/quantity.h"
#include "kube/http_client.h"
#include "reporter/wire/node_report.h"
#include "scheduler/kube/cluster_link.h"
#include "scheduler/server/api_routes.h"
#include "scheduler/server/scheduler_port.h"
#include "test/kube/test_apiserver.h"
#include "test/scheduler/live/live_fixture.h"

namespace {

using gleaner::bench::numbered;
using gleaner::bench::percentile;

using namespace gleaner;
using namespace gleaner::scheduler;
using Steady = std::chrono::steady_clock;

using gleaner::kGi;

struct Args {
  int agents = 1000;
  int rounds = 20;
  int clients = 4;
  int apps = 100;
  int executors = 9;
  int nodes = 50;
  bool skip_kube = false;
};

double ms_between(Steady::time_point a, Steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// A report of one node whose batch CPU is `cpu_milli` (96 GiB of batch memory).
reporter::NodeReport report_of(const std::string& node, uint64_t sequence, int64_t cpu_milli,
                               const std::string& cluster) {
  return scheduler::live_testing::node_report(node, sequence, cpu_milli, 96 * kGi, cluster);
}

using scheduler::live_testing::IoThread;
using scheduler::live_testing::small_spark_application;
using scheduler::live_testing::spark_operator_pod;

int ingestion(const Args& a) {
  char token_path[] = "/tmp/gleaner-live-bench-token.XXXXXX";
  const int fd = ::mkstemp(token_path);
  if (fd < 0) return std::perror("mkstemp"), 1;
  ::close(fd);
  std::ofstream(token_path) << "bench-token\n";

  SystemClock clock;
  server::LiveMetrics metrics;
  auto live = gang::GangScheduler::create({}, {}, clock, metrics);  // reports only
  if (!live) return std::fprintf(stderr, "%s\n", live.error().message.c_str()), 1;
  server::ReportValidator validator(token_path, 1 << 20);
  server::ApiRoutes routes(validator, **live, metrics);
  IoThread io;
  auto http = server::SchedulerPort::create(io.io(), "127.0.0.1:0", routes);
  if (!http) return std::fprintf(stderr, "%s\n", http.error().message.c_str()), 1;
  const net::HttpUrl endpoint{"http", "127.0.0.1", (*http)->port()};

  // Bodies are serialized before the clock starts: the agents' own JSON cost is theirs.
  std::vector<std::vector<std::string>> bodies(static_cast<size_t>(a.agents));
  for (int i = 0; i < a.agents; ++i) {
    for (int r = 0; r < a.rounds; ++r) {
      // Batch moves a little every report, so each one changes the node in the core.
      bodies[static_cast<size_t>(i)].push_back(reporter::to_json_text(report_of(
          numbered("node-", i), static_cast<uint64_t>(r) + 1, 20000 + (r % 5) * 100, "")));
    }
  }
  std::atomic<int> failures{0};
  std::mutex mu;
  std::vector<double> latencies;
  const auto start = Steady::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < a.clients; ++c) {
    threads.emplace_back([&, c] {
      // One keep-alive connection per agent, as each agent holds its own.
      std::map<int, std::unique_ptr<kube::HttpConnection>> conns;
      std::vector<double> mine;
      for (int r = 0; r < a.rounds; ++r) {
        for (int i = c; i < a.agents; i += a.clients) {
          auto& conn = conns[i];
          if (!conn) conn = std::make_unique<kube::HttpConnection>(endpoint, kube::TlsOptions{});
          net::ClientRequest req{
              "POST",
              "/api/v1/reports",
              {{"Content-Type", "application/json"}, {"Authorization", "Bearer bench-token"}},
              bodies[static_cast<size_t>(i)][static_cast<size_t>(r)]};
          const auto t0 = Steady::now();
          auto resp = conn->request(req, {});
          mine.push_back(ms_between(t0, Steady::now()));
          if (!resp || resp->status != 200) ++failures;
        }
      }
      std::lock_guard lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads)
    t.join();
  const double seconds = ms_between(start, Steady::now()) / 1000.0;
  (*http)->stop();
  ::unlink(token_path);

  const auto total = static_cast<double>(latencies.size());
  std::printf("## Report ingestion (loopback, keep-alive, bearer token)\n\n");
  std::printf(
      "%d agents, %d reports each, %d client threads, one request in flight each; "
      "server: one io_context thread\n\n",
      a.agents, a.rounds, a.clients);
  std::printf("| reports | failed | seconds | reports/s | p50 ms | p99 ms | max ms | target |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
  std::printf("| %.0f | %d | %.2f | %.0f | %.3f | %.3f | %.3f | thousands of reports/s |\n\n",
              total, failures.load(), seconds, total / seconds, percentile(latencies, 0.5),
              percentile(latencies, 0.99), percentile(latencies, 1.0));
  return failures.load() == 0 ? 0 : 1;
}

int pending_to_bound(const Args& a) {
  auto api = kube::testing::TestApiServer::start();
  if (!api) {
    std::printf(
        "## Pending -> bound\n\nskipped: cannot start test/apiserver/apiserver.py "
        "with /usr/bin/python3\n\n");
    return 0;
  }
  SystemClock clock;
  kube::KubeClient client(api->config(), clock);
  for (int n = 0; n < a.nodes; ++n) {
    Json node{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", numbered("n", n)}}}};
    if (auto r = client.create(kube::nodes_path(), node); !r) {
      return std::fprintf(stderr, "create node: %s\n", r.error().message.c_str()), 1;
    }
  }
  server::LiveMetrics metrics;
  gang::GangOptions options;
  options.clusters = {"c1"};
  options.staleness = StalenessPolicy{3600, 7200};  // one report per node is enough here
  auto live = gang::GangScheduler::create(options, {}, clock, metrics);
  if (!live) return std::fprintf(stderr, "%s\n", live.error().message.c_str()), 1;
  kube_glue::ClusterLinkOptions lo;
  lo.name = "c1";
  lo.config = api->config();  // qps 0: no client-side rate limit
  kube_glue::ClusterLink link(lo, std::make_unique<kube_glue::MemberRole>(), clock, **live,
                              metrics);
  // When the live loop decides each bind (before the API call), to split the latency.
  std::mutex mu;
  std::map<std::string, Steady::time_point> created, decided, bound;
  (*live)->set_sinks(
      [&](gang::Action x) {
        if (x.kind == gang::ActionKind::kBind) {
          std::lock_guard lock(mu);
          decided.emplace(x.name, Steady::now());
        }
        link.enqueue(std::move(x));
      },
      [&](const gang::NodeBatch& b) { link.publish(b); });
  link.start();
  if (!link.wait_for_sync(std::chrono::seconds(10))) {
    return std::fprintf(stderr, "cluster link did not sync\n"), 1;
  }
  for (int n = 0; n < a.nodes; ++n)
    (void)(*live)->apply_report(report_of(numbered("n", n), 1, 32000, "c1"));

  // Bound times as a watch sees them.
  auto seen = [&](const Json& pod) {
    const std::string node = pod["spec"].value("nodeName", "");
    if (node.empty()) return;
    std::lock_guard lock(mu);
    bound.emplace(pod["metadata"].value("name", ""), Steady::now());
  };
  kube::KubeClient watch_client(api->config(), clock);
  kube::InformerOptions io;
  io.path = kube::pods_path("");
  kube::Informer watch(watch_client, io,
                       {seen, [&](const Json&, const Json& pod) { seen(pod); }, nullptr});
  watch.start();
  (void)watch.wait_for_sync(std::chrono::seconds(10));

  std::atomic<bool> stop{false};
  std::thread ticker([&] {  // the composition root's scheduling timer, 50 ms
    while (!stop) {
      (*live)->tick();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });

  const int pods = a.apps * (1 + a.executors);
  const auto start = Steady::now();
  for (int g = 0; g < a.apps; ++g) {
    const std::string app = numbered("app-", g);
    (void)client.create(kube::spark_applications_path("default"),
                        small_spark_application(app, a.executors));
    for (int p = 0; p <= a.executors; ++p) {
      const std::string name = p == 0 ? app + "-driver" : app + "-exec-" + std::to_string(p);
      {
        std::lock_guard lock(mu);
        created[name] = Steady::now();
      }
      if (auto r = client.create(kube::pods_path("default"),
                                 spark_operator_pod(app, name, p == 0 ? "driver" : "executor"));
          !r) {
        std::fprintf(stderr, "create pod %s: %s\n", name.c_str(), r.error().message.c_str());
      }
    }
  }
  const double create_seconds = ms_between(start, Steady::now()) / 1000.0;
  const auto deadline = Steady::now() + std::chrono::seconds(120);
  while (Steady::now() < deadline) {
    {
      std::lock_guard lock(mu);
      if (static_cast<int>(bound.size()) >= pods) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double all_seconds = ms_between(start, Steady::now()) / 1000.0;
  stop = true;
  ticker.join();
  watch.stop();
  link.stop();
  (*live)->set_sinks(nullptr, nullptr);

  std::vector<double> all, drivers, executors, to_decision, to_watch;
  {
    std::lock_guard lock(mu);
    for (const auto& [name, t] : bound) {
      auto c = created.find(name);
      if (c == created.end()) continue;
      const double ms = ms_between(c->second, t);
      all.push_back(ms);
      (name.ends_with("-driver") ? drivers : executors).push_back(ms);
      if (auto d = decided.find(name); d != decided.end()) {
        to_decision.push_back(ms_between(c->second, d->second));
        to_watch.push_back(ms_between(d->second, t));
      }
    }
  }
  std::printf("## Pending -> bound (test API server)\n\n");
  std::printf(
      "%d Spark applications of 1 driver + %d executors on %d nodes of 32 batch "
      "cores; created one after another; scheduling pass every 50 ms; no client-side "
      "rate limit. The test API server is one Python process: its speed bounds "
      "these figures (creation, watch delivery and binding all go through it).\n\n",
      a.apps, a.executors, a.nodes);
  std::printf(
      "| pods | bound | create s | all bound s | pods bound/s | p50 ms | p99 ms | "
      "max ms |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  std::printf("| %d | %zu | %.2f | %.2f | %.0f | %.1f | %.1f | %.1f |\n\n", pods, all.size(),
              create_seconds, all_seconds, static_cast<double>(all.size()) / all_seconds,
              percentile(all, 0.5), percentile(all, 0.99), percentile(all, 1.0));
  std::printf("| latency of | count | p50 ms | p99 ms |\n| --- | ---: | ---: | ---: |\n");
  std::printf("| drivers | %zu | %.1f | %.1f |\n", drivers.size(), percentile(drivers, 0.5),
              percentile(drivers, 0.99));
  std::printf("| executors | %zu | %.1f | %.1f |\n", executors.size(), percentile(executors, 0.5),
              percentile(executors, 0.99));
  std::printf("| create sent -> bind decided | %zu | %.1f | %.1f |\n", to_decision.size(),
              percentile(to_decision, 0.5), percentile(to_decision, 0.99));
  std::printf("| bind decided -> bound seen | %zu | %.1f | %.1f |\n\n", to_watch.size(),
              percentile(to_watch, 0.5), percentile(to_watch, 0.99));
  return static_cast<int>(all.size()) == pods ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"live_bench: report ingestion over HTTP and pending -> bound latency"};
  gleaner::bench::positive_option(app, "--agents", a.agents, "agents reporting");
  gleaner::bench::positive_option(app, "--rounds", a.rounds, "reports per agent");
  gleaner::bench::positive_option(app, "--clients", a.clients, "client threads");
  gleaner::bench::positive_option(app, "--apps", a.apps, "Spark applications");
  gleaner::bench::non_negative_option(app, "--executors", a.executors, "executors per application");
  gleaner::bench::positive_option(app, "--nodes", a.nodes, "nodes in the test API server");
  app.add_flag("--skip-kube", a.skip_kube, "only the ingestion part");
  if (auto exit_code = gleaner::bench::parse_command_line(app, argc, argv)) return *exit_code;
  int rc = ingestion(a);
  if (!a.skip_kube) rc |= pending_to_bound(a);
  return rc;
}
