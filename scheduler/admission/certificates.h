#pragma once
// The webhook's TLS material, made with OpenSSL: a self-signed CA and a serving
// certificate it signs for the webhook Service's DNS names (ECDSA P-256, SHA-256), and
// the checks the certificate keeper needs (expiry, names covered, key matches).

#include <chrono>
#include <string>
#include <vector>

#include "common/result.h"

namespace gleaner::scheduler::admission {

struct KeyPair {
  std::string cert_pem;
  std::string key_pem;
};

using CertTime = std::chrono::system_clock::time_point;

// A CA certificate valid from `now` (less an hour, for clock skew) for `lifetime`.
Result<KeyPair> make_ca(const std::string& common_name, CertTime now,
                        std::chrono::seconds lifetime);
// A serving certificate (serverAuth) for `dns_names`, signed by `ca`.
Result<KeyPair> make_serving_cert(const KeyPair& ca, const std::vector<std::string>& dns_names,
                                  CertTime now, std::chrono::seconds lifetime);

struct CertInfo {
  CertTime not_before;
  CertTime not_after;
  std::vector<std::string> dns_names;
};
// The first certificate of a PEM text.
Result<CertInfo> read_cert(const std::string& cert_pem);
// Whether `pair` is a usable serving pair: the key matches the certificate, it names
// every one of `dns_names`, and it is valid now and for at least `margin` more;
// otherwise an error saying which check failed.
Status check_serving_pair(const KeyPair& pair, const std::vector<std::string>& dns_names,
                          CertTime now, std::chrono::seconds margin);
// tls.crt and tls.key of a directory (a mounted kubernetes.io/tls Secret), checked to be a
// matching pair valid now.
Result<KeyPair> read_key_pair_dir(const std::string& dir, CertTime now);
// Whether `cert_pem` was signed by the CA of `ca_pem`.
bool signed_by(const std::string& cert_pem, const std::string& ca_pem);

}  // namespace gleaner::scheduler::admission
