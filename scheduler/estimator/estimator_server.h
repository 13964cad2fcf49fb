#pragma once
// gleaner-scheduler as Karmada's scheduler-estimator (--estimator-listen): the gRPC service
// karmada-scheduler asks, per member cluster, how many replicas or whole component sets
// fit; one process answers for every member it has reports from (the request names the
// cluster). Plain gRPC by default, as karmada-scheduler dials without
// --scheduler-estimator-ca-file; TLS with a certificate directory (tls.crt, tls.key,
// re-read by gRPC every minute, so a renewed Secret is served without a restart).
// docs/karmada-estimator.md.

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "scheduler/estimator/request_decode.h"
#include "scheduler/gang/gang_scheduler.h"
#include "scheduler/server/live_metrics.h"

namespace grpc {
class Server;
}

namespace gleaner::scheduler::estimator {

class EstimatorService;

struct EstimatorOptions {
  std::string listen;        // host:port; port 0 picks a free one
  std::string tls_cert_dir;  // empty: plain gRPC
  DecodePolicy decode;
};

class EstimatorServer {
 public:
  static Result<std::unique_ptr<EstimatorServer>> start(const EstimatorOptions& options,
                                                        const gang::GangScheduler& live,
                                                        server::LiveMetrics& metrics);
  ~EstimatorServer();
  EstimatorServer(const EstimatorServer&) = delete;
  EstimatorServer& operator=(const EstimatorServer&) = delete;

  [[nodiscard]] int port() const { return port_; }
  // Finishes the calls in flight (at most 2 s) and stops listening.
  void stop();

 private:
  EstimatorServer() = default;
  std::unique_ptr<EstimatorService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace gleaner::scheduler::estimator
