#pragma once
// How to reach the API server: in-cluster (the ServiceAccount mounted into the pod) or a
// kubeconfig file, chosen by flags. Plain http:// servers are accepted for loopback tests.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "kube/http_client.h"

namespace gleaner::kube {

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

struct KubeConfig {
  net::HttpUrl endpoint;
  TlsOptions tls;
  std::string token;       // a fixed bearer token
  std::string token_file;  // or a file, re-read when it changes (token rotation)
  double qps = 20;         // client-side rate limit (requests per second, 0 = off)
  int burst = 40;
  std::chrono::milliseconds timeout{10000};  // per request (watches: per read)
  std::size_t max_response_bytes = 64u << 20;
};

// The flags both binaries expose (--kubeconfig, --kube-context, --kube-api-qps, ...).
struct KubeFlags {
  std::string kubeconfig;  // empty: $KUBECONFIG, else in-cluster
  std::string context;     // empty: the kubeconfig's current-context
  double qps = 20;
  int burst = 40;
  int timeout_ms = 10000;
  std::size_t max_response_bytes = 64u << 20;
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
std::optional<std::string> process_env(const std::string& name);

Result<KubeConfig> in_cluster_config(const EnvLookup& env,
                                     const std::string& service_account_dir = kServiceAccountDir);
// `base_dir` resolves relative certificate and token paths, as kubectl does.
Result<KubeConfig> kubeconfig_from_text(std::string_view text, std::string_view where,
                                        std::string_view context = {},
                                        std::string_view base_dir = {});
Result<KubeConfig> load_kubeconfig(const std::string& path, std::string_view context = {});
// Flags first, then $KUBECONFIG, then in-cluster.
Result<KubeConfig> resolve_config(const KubeFlags& flags, const EnvLookup& env);

// Standard base64 (kubeconfig *-data fields).
Result<std::string> base64_decode(std::string_view text);
std::string base64_encode(std::string_view bytes);

}  // namespace gleaner::kube
