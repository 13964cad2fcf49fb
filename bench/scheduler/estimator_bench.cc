// gleaner-scheduler answering Karmada's scheduler-estimator over gRPC on loopback, with a
// member cluster of 1,000 and 5,000 nodes reported (nodes of 8 to 24 batch CPUs): the time
// karmada-scheduler waits for MaxAvailableComponentSets of a Spark application (1 driver +
// 10 executors, 1 CPU / 2 GiB each: thousands of whole sets to count) and for
// MaxAvailableReplicas of one pod, measured at the client (a generated C++ stub), calls
// one after another and from 8 clients at once. Beside it: karmada-scheduler's default
// --scheduler-estimator-timeout (3 s), which bounds the answer for all members together.
//
//   estimator_bench [CALLS]   (default 200 calls per row)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "bench/bench_stats.h"
#include "common/quantity.h"
#include "kube_wire.pb.h"
#include "scheduler/estimator/estimator_server.h"
#include "service.grpc.pb.h"
#include "test/scheduler/live/live_fixture.h"

namespace {

using namespace gleaner;
namespace pb = ::github::com::karmada_io::karmada::pkg::estimator::pb;
namespace karmada = ::github::com::karmada_io::karmada::pkg::estimator::service;
using Steady = std::chrono::steady_clock;

using gleaner::kGi;
constexpr double kKarmadaTimeoutMs = 3000;

std::string quantity(const std::string& text) {
  gleaner::kubewire::Quantity q;
  q.set_string(text);
  return q.SerializeAsString();
}

void requirements(pb::ComponentReplicaRequirements* r) {
  r->set_priorityclassname("koord-batch");
  (*r->mutable_resourcerequestbytes())["cpu"] = quantity("1");
  (*r->mutable_resourcerequestbytes())["memory"] = quantity("2Gi");
}

struct Row {
  std::string call;
  int nodes = 0;
  int clients = 0;
  int answer = 0;
  double p50 = 0;
  double p99 = 0;
};

Row measure(karmada::Estimator::Stub& stub, const std::string& call, int nodes, int clients,
            int calls) {
  std::mutex mu;
  std::vector<double> ms;
  Row row{call, nodes, clients};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      std::vector<double> mine;
      for (int i = 0; i < calls / clients; ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
        const auto t0 = Steady::now();
        int answer = -2;
        if (call == "MaxAvailableComponentSets") {
          pb::MaxAvailableComponentSetsRequest req;
          req.set_cluster("member-1");
          auto* driver = req.add_components();
          driver->set_name("driver");
          driver->set_replicas(1);
          requirements(driver->mutable_replicarequirements());
          auto* exec = req.add_components();
          exec->set_name("executor");
          exec->set_replicas(10);
          requirements(exec->mutable_replicarequirements());
          pb::MaxAvailableComponentSetsResponse resp;
          if (stub.MaxAvailableComponentSets(&ctx, req, &resp).ok()) answer = resp.maxsets();
        } else {
          pb::MaxAvailableReplicasRequest req;
          req.set_cluster("member-1");
          auto* r = req.mutable_replicarequirements();
          r->set_priorityclassname("koord-batch");
          (*r->mutable_resourcerequestbytes())["cpu"] = quantity("1");
          (*r->mutable_resourcerequestbytes())["memory"] = quantity("2Gi");
          pb::MaxAvailableReplicasResponse resp;
          if (stub.MaxAvailableReplicas(&ctx, req, &resp).ok()) answer = resp.maxreplicas();
        }
        mine.push_back(std::chrono::duration<double, std::milli>(Steady::now() - t0).count());
        std::lock_guard lock(mu);
        row.answer = answer;
      }
      std::lock_guard lock(mu);
      ms.insert(ms.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads)
    t.join();
  row.p50 = bench::percentile(ms, 0.5);
  row.p99 = bench::percentile(ms, 0.99);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::max(8, std::atoi(argv[1])) : 200;
  std::vector<Row> rows;
  for (int nodes : {1000, 5000}) {
    SystemClock clock;
    scheduler::server::LiveMetrics metrics;
    auto live = scheduler::gang::GangScheduler::create({}, {}, clock, metrics);
    if (!live) return std::fprintf(stderr, "%s\n", live.error().message.c_str()), 1;
    for (int i = 0; i < nodes; ++i) {
      auto r = scheduler::live_testing::node_report("node-" + std::to_string(i), 1,
                                                    8000 + (i % 17) * 1000, 64 * kGi, "member-1");
      if ((*live)->apply_report(r)) return std::fprintf(stderr, "report refused\n"), 1;
    }
    scheduler::estimator::EstimatorOptions options;
    options.listen = "127.0.0.1:0";
    auto server = scheduler::estimator::EstimatorServer::start(options, **live, metrics);
    if (!server) return std::fprintf(stderr, "%s\n", server.error().message.c_str()), 1;
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string((*server)->port()),
                                       grpc::InsecureChannelCredentials());
    auto stub = karmada::Estimator::NewStub(channel);
    for (const char* call : {"MaxAvailableComponentSets", "MaxAvailableReplicas"}) {
      for (int clients : {1, 8})
        rows.push_back(measure(*stub, call, nodes, clients, calls));
    }
    (*server)->stop();
  }
  std::printf(
      "| call | nodes | clients | answer | p50 ms | p99 ms | Karmada's timeout ms | "
      "p99 / timeout |\n|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows) {
    std::printf("| %s | %d | %d | %d | %.2f | %.2f | %.0f | %.4f |\n", r.call.c_str(), r.nodes,
                r.clients, r.answer, r.p50, r.p99, kKarmadaTimeoutMs, r.p99 / kKarmadaTimeoutMs);
  }
  std::printf(
      "\nanswer: sets of 1 driver + 10 executors, or single pods (1 CPU / 2 GiB) that fit; "
      "%d calls per row.\n",
      calls);
  return 0;
}
