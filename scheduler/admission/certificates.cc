#include "scheduler/admission/certificates.h"

#include <algorithm>
#include <ctime>
#include <memory>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/file_io.h"

namespace gleaner::scheduler::admission {

namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using PKey = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

Error ssl_error(const std::string& what) {
  char buf[256] = "unknown error";
  if (const unsigned long e = ERR_get_error(); e != 0) ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return make_error(ErrorCode::kInternal, what + ": " + buf);
}

Result<std::string> bio_text(BIO* bio) {
  BUF_MEM* mem = nullptr;
  BIO_get_mem_ptr(bio, &mem);
  if (mem == nullptr) return make_error(ErrorCode::kInternal, "OpenSSL: empty buffer");
  return std::string(mem->data, mem->length);
}

Result<std::string> key_pem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return ssl_error("writing a private key");
  return bio_text(bio.get());
}

Result<std::string> cert_pem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return ssl_error("writing a certificate");
  return bio_text(bio.get());
}

Result<Cert> parse_cert(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return make_error(ErrorCode::kParse, "not a PEM certificate");
  return cert;
}

Result<PKey> parse_key(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  PKey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return make_error(ErrorCode::kParse, "not a PEM private key");
  return key;
}

Status add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return ssl_error("certificate extension " + value);
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) return ssl_error("adding extension " + value);
  return ok_status();
}

// A certificate for `key` with `subject_cn`, valid from now - 1h for `lifetime`,
// its serial random; signed by `signer` (itself when null).
Result<Cert> new_cert(EVP_PKEY* key, const std::string& subject_cn, X509* issuer, EVP_PKEY* signer,
                      CertTime now, std::chrono::seconds lifetime,
                      const std::vector<std::pair<int, std::string>>& extensions) {
  Cert cert(X509_new());
  if (!cert) return ssl_error("X509_new");
  X509_set_version(cert.get(), 2);  // v3
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof(serial)) != 1) return ssl_error("random serial");
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  ASN1_INTEGER* asn = BN_to_ASN1_INTEGER(bn, nullptr);
  BN_free(bn);
  X509_set_serialNumber(cert.get(), asn);
  ASN1_INTEGER_free(asn);
  const time_t start = std::chrono::system_clock::to_time_t(now - std::chrono::hours(1));
  const time_t end = std::chrono::system_clock::to_time_t(now + lifetime);
  if (ASN1_TIME_set(X509_getm_notBefore(cert.get()), start) == nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(cert.get()), end) == nullptr)
    return ssl_error("validity");
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(subject_cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509_set_pubkey(cert.get(), key);
  for (const auto& [nid, value] : extensions) {
    if (Status s = add_extension(cert.get(), issuer != nullptr ? issuer : cert.get(), nid, value);
        !s)
      return s.error();
  }
  if (X509_sign(cert.get(), signer != nullptr ? signer : key, EVP_sha256()) == 0)
    return ssl_error("signing");
  return cert;
}

Result<KeyPair> pem_pair(X509* cert, EVP_PKEY* key) {
  auto c = cert_pem(cert);
  if (!c) return c.error();
  auto k = key_pem(key);
  if (!k) return k.error();
  return KeyPair{*c, *k};
}

CertTime to_time(const ASN1_TIME* t) {
  struct tm tm {};
  ASN1_TIME_to_tm(t, &tm);
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace

Result<KeyPair> make_ca(const std::string& common_name, CertTime now,
                        std::chrono::seconds lifetime) {
  PKey key(EVP_EC_gen("P-256"));
  if (!key) return ssl_error("generating a CA key");
  auto cert = new_cert(key.get(), common_name, nullptr, nullptr, now, lifetime,
                       {{NID_basic_constraints, "critical,CA:TRUE"},
                        {NID_key_usage, "critical,keyCertSign,cRLSign"},
                        {NID_subject_key_identifier, "hash"}});
  if (!cert) return cert.error();
  return pem_pair(cert->get(), key.get());
}

Result<KeyPair> make_serving_cert(const KeyPair& ca, const std::vector<std::string>& dns_names,
                                  CertTime now, std::chrono::seconds lifetime) {
  if (dns_names.empty()) return make_error(ErrorCode::kInvalidArgument, "no DNS names to certify");
  auto ca_cert = parse_cert(ca.cert_pem);
  if (!ca_cert) return make_error(ErrorCode::kParse, "CA certificate: " + ca_cert.error().message);
  auto ca_key = parse_key(ca.key_pem);
  if (!ca_key) return make_error(ErrorCode::kParse, "CA key: " + ca_key.error().message);
  PKey key(EVP_EC_gen("P-256"));
  if (!key) return ssl_error("generating a serving key");
  std::string san;
  for (const auto& n : dns_names)
    san += (san.empty() ? "DNS:" : ",DNS:") + n;
  auto cert = new_cert(key.get(), dns_names.front(), ca_cert->get(), ca_key->get(), now, lifetime,
                       {{NID_basic_constraints, "critical,CA:FALSE"},
                        {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                        {NID_ext_key_usage, "serverAuth"},
                        {NID_authority_key_identifier, "keyid"},
                        {NID_subject_alt_name, san}});
  if (!cert) return cert.error();
  return pem_pair(cert->get(), key.get());
}

Result<CertInfo> read_cert(const std::string& pem) {
  auto cert = parse_cert(pem);
  if (!cert) return cert.error();
  CertInfo info;
  info.not_before = to_time(X509_get0_notBefore(cert->get()));
  info.not_after = to_time(X509_get0_notAfter(cert->get()));
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert->get(), NID_subject_alt_name, nullptr, nullptr));
  if (names != nullptr) {
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
      const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
      if (n->type != GEN_DNS) continue;
      const ASN1_STRING* s = n->d.dNSName;
      info.dns_names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                  static_cast<size_t>(ASN1_STRING_length(s)));
    }
    GENERAL_NAMES_free(names);
  }
  return info;
}

Status check_serving_pair(const KeyPair& pair, const std::vector<std::string>& dns_names,
                          CertTime now, std::chrono::seconds margin) {
  auto cert = parse_cert(pair.cert_pem);
  if (!cert) return make_error(ErrorCode::kParse, "tls.crt: " + cert.error().message);
  auto key = parse_key(pair.key_pem);
  if (!key) return make_error(ErrorCode::kParse, "tls.key: " + key.error().message);
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    ERR_clear_error();
    return make_error(ErrorCode::kInvalidArgument, "tls.key does not match tls.crt");
  }
  auto info = read_cert(pair.cert_pem);
  if (!info) return info.error();
  for (const auto& n : dns_names) {
    if (std::find(info->dns_names.begin(), info->dns_names.end(), n) == info->dns_names.end())
      return make_error(ErrorCode::kInvalidArgument, "the certificate does not name " + n);
  }
  if (now < info->not_before)
    return make_error(ErrorCode::kInvalidArgument, "the certificate is not valid yet");
  if (info->not_after - margin <= now) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the certificate expires within the renewal margin");
  }
  return ok_status();
}

Result<KeyPair> read_key_pair_dir(const std::string& dir, CertTime now) {
  auto cert = read_file(join_path(dir, "tls.crt"));
  if (!cert) return cert.error();
  auto key = read_file(join_path(dir, "tls.key"));
  if (!key) return key.error();
  KeyPair pair{*cert, *key};
  if (Status s = check_serving_pair(pair, {}, now, std::chrono::seconds(0)); !s)
    return make_error(s.error().code, dir + ": " + s.error().message);
  return pair;
}

bool signed_by(const std::string& cert_pem_text, const std::string& ca_pem) {
  auto cert = parse_cert(cert_pem_text);
  auto ca = parse_cert(ca_pem);
  if (!cert || !ca) return false;
  EVP_PKEY* ca_key = X509_get0_pubkey(ca->get());
  const bool ok = ca_key != nullptr && X509_verify(cert->get(), ca_key) == 1;
  ERR_clear_error();
  return ok;
}

}  // namespace gleaner::scheduler::admission
