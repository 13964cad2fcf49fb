#pragma once
// kubelet's /pods endpoint: the pods bound to this node as the kubelet sees them (faster
// and cheaper than asking the API server). HTTPS on 10250 with the ServiceAccount token,
// kubelet's serving certificate verified against a CA (the token grants read access to
// every node's kubelet: it must not go to whoever answers on the port), or the read-only
// HTTP port. The last good list is kept: a failed call or a
// sudden empty list (a restarting kubelet) must not look like "all pods are gone".

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/json_util.h"
#include "common/result.h"
#include "kube/config.h"
#include "kube/http_client.h"
#include "net/token_source.h"

namespace gleaner::kube {

struct KubeletOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 10250;
  bool https = true;       // false: the read-only port (usually 10255), no token
  bool verify_tls = true;  // false only on request (a self-signed kubelet certificate)
  std::string ca_file;     // with verify_tls; empty: the system trust store
  std::string token;
  std::string token_file = std::string(kServiceAccountDir) + "/token";
  std::chrono::milliseconds timeout{5000};
  std::size_t max_response_bytes = 64u << 20;
  // An empty list after a non-empty one is believed only after this many answers in a row.
  int empty_confirmations = 3;
};

struct KubeletPods {
  std::vector<Json> pods;
  bool stale = false;       // the last good list, because the latest call failed or was doubtful
  std::string last_error;   // why it is stale
  SteadyTime fetched_at{};  // when `pods` was fetched
};

class KubeletClient {
 public:
  KubeletClient(KubeletOptions options, const Clock& clock);
  ~KubeletClient();

  // One GET /pods, no memory.
  Result<std::vector<Json>> fetch();
  // fetch(), falling back to the last good list (stale=true). An error only while no good
  // list has been seen yet.
  Result<KubeletPods> pods();

 private:
  KubeletOptions options_;
  const Clock& clock_;
  net::TokenSource token_;
  std::unique_ptr<HttpConnection> conn_;
  KubeletPods last_good_;
  bool have_good_ = false;
  int empty_streak_ = 0;
};

}  // namespace gleaner::kube
