#include "scheduler/estimator/estimator_server.h"

#include <chrono>

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <spdlog/spdlog.h>

#include "common/file_io.h"
#include "service.grpc.pb.h"

namespace gleaner::scheduler::estimator {

namespace karmada = ::github::com::karmada_io::karmada::pkg::estimator::service;

class EstimatorService final : public karmada::Estimator::Service {
 public:
  EstimatorService(const gang::GangScheduler& live, server::LiveMetrics& metrics,
                   DecodePolicy policy)
      : live_(live), metrics_(metrics), policy_(std::move(policy)) {}

  grpc::Status MaxAvailableReplicas(grpc::ServerContext* /*context*/,
                                    const pb::MaxAvailableReplicasRequest* request,
                                    pb::MaxAvailableReplicasResponse* response) override {
    const auto started = std::chrono::steady_clock::now();
    return answer("MaxAvailableReplicas", started, decode(*request, policy_),
                  [&](int32_t n) { response->set_maxreplicas(n); });
  }

  grpc::Status MaxAvailableComponentSets(grpc::ServerContext* /*context*/,
                                         const pb::MaxAvailableComponentSetsRequest* request,
                                         pb::MaxAvailableComponentSetsResponse* response) override {
    const auto started = std::chrono::steady_clock::now();
    return answer("MaxAvailableComponentSets", started, decode(*request, policy_),
                  [&](int32_t n) { response->set_maxsets(n); });
  }

  grpc::Status GetUnschedulableReplicas(grpc::ServerContext* /*context*/,
                                        const pb::UnschedulableReplicasRequest* request,
                                        pb::UnschedulableReplicasResponse* response) override {
    const auto started = std::chrono::steady_clock::now();
    if (request->unschedulablethreshold() < 0) {
      finish("GetUnschedulableReplicas", "invalid", started);
      return {grpc::StatusCode::INVALID_ARGUMENT, "unschedulableThreshold: negative"};
    }
    const auto& r = request->resource();
    response->set_unschedulablereplicas(
        live_.unschedulable_pods(request->cluster(), r.namespace_(), r.name(),
                                 static_cast<double>(request->unschedulablethreshold()) / 1e9));
    finish("GetUnschedulableReplicas", "answered", started);
    return grpc::Status::OK;
  }

 private:
  template <typename Set>
  grpc::Status answer(const char* method, std::chrono::steady_clock::time_point started,
                      const Result<Decoded>& decoded, Set set) {
    if (!decoded) {
      finish(method, "invalid", started);
      return {grpc::StatusCode::INVALID_ARGUMENT, decoded.error().message};
    }
    if (!decoded->no_opinion.empty()) {
      spdlog::debug("estimator {} for cluster {}: no opinion ({})", method, decoded->cluster,
                    decoded->no_opinion);
      set(-1);
      finish(method, "no_opinion", started);
      return grpc::Status::OK;
    }
    auto n = live_.estimate_sets(decoded->cluster, decoded->set, decoded->assumed);
    set(n ? *n : -1);
    finish(method, n ? "answered" : "no_opinion", started);
    return grpc::Status::OK;
  }

  void finish(const char* method, const char* outcome,
              std::chrono::steady_clock::time_point started) {
    metrics_.estimator_call(
        method, outcome,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }

  const gang::GangScheduler& live_;
  server::LiveMetrics& metrics_;
  DecodePolicy policy_;
};

Result<std::unique_ptr<EstimatorServer>> EstimatorServer::start(const EstimatorOptions& options,
                                                                const gang::GangScheduler& live,
                                                                server::LiveMetrics& metrics) {
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!options.tls_cert_dir.empty()) {
    const std::string cert = join_path(options.tls_cert_dir, "tls.crt");
    const std::string key = join_path(options.tls_cert_dir, "tls.key");
    for (const auto& f : {cert, key}) {
      if (!path_exists(f)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "--estimator-tls-cert-dir: " + f + " not found");
      }
    }
    auto provider =
        std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(key, cert, 60);
    grpc::experimental::TlsServerCredentialsOptions tls(provider);
    tls.watch_identity_key_cert_pairs();
    credentials = grpc::experimental::TlsServerCredentials(tls);
  }
  std::unique_ptr<EstimatorServer> out(new EstimatorServer());
  out->service_ = std::make_unique<EstimatorService>(live, metrics, options.decode);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, credentials, &out->port_);
  builder.RegisterService(out->service_.get());
  out->server_ = builder.BuildAndStart();
  if (!out->server_ || out->port_ == 0) {
    return make_error(ErrorCode::kUnavailable,
                      "--estimator-listen " + options.listen + ": cannot listen there");
  }
  spdlog::info("gleaner-scheduler: Karmada estimator on port {} ({})", out->port_,
               options.tls_cert_dir.empty() ? "plain gRPC" : "TLS");
  return out;
}

EstimatorServer::~EstimatorServer() {
  stop();
}

void EstimatorServer::stop() {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_.reset();
}

}  // namespace gleaner::scheduler::estimator
