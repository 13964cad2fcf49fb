#pragma once
// The Kubernetes API server's and kubelet's HTTP client is the project's one client
// (net/http_client.h); these are its names in the kube namespace.

#include "net/http_client.h"

namespace gleaner::kube {

using net::HttpConnection;
using net::HttpLimits;
using HttpResponse = net::ClientResponse;
using net::HttpStream;
using net::TlsOptions;

}  // namespace gleaner::kube
