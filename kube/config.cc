#include "kube/config.h"

#include <cstdlib>

#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include "common/file_io.h"
#include "common/json_util.h"
#include "kube/yaml_json.h"

namespace gleaner::kube {
namespace {

std::string resolve_path(std::string_view path, std::string_view base_dir) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return std::string(path);
  return std::string(base_dir) + "/" + std::string(path);
}

// kubeconfig lists entries as [{name: x, cluster|user|context: {...}}].
const Json* find_named(const Json& root, const char* list, const char* field,
                       const std::string& name) {
  auto it = root.find(list);
  if (it == root.end() || !it->is_array()) return nullptr;
  for (const auto& entry : *it) {
    if (entry.is_object() && entry.value("name", "") == name && entry.contains(field) &&
        entry[field].is_object()) {
      return &entry[field];
    }
  }
  return nullptr;
}

std::string string_field(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::optional<std::string> process_env(const std::string& name) {
  // The programs never call setenv, so reading the environment from any thread is safe.
  const char* value = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe)
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::string base64_encode(std::string_view bytes) {
  // EVP_EncodeBlock writes 4 characters per 3 bytes (the last group padded) and a NUL.
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  // EVP_DecodeBlock reads '=' anywhere as zero bits and wants whole groups of 4: the text
  // is checked here first (line breaks and spaces skipped, as kubeconfigs and PEM-like
  // values wrap them; padding only at the end, and optional, as base64url tokens omit it).
  std::string packed;
  packed.reserve(text.size() + 2);
  size_t padding = 0;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == ' ') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    const bool alphabet = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                          (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!alphabet || padding > 0) {
      const auto byte = static_cast<unsigned char>(c);
      return make_error(ErrorCode::kParse,
                        byte > 0x20 && byte < 0x7f
                            ? "base64: unexpected character '" + std::string(1, c) + "'"
                            : fmt::format("base64: unexpected byte 0x{:02x}", byte));
    }
    packed += c;
  }
  if (packed.size() % 4 == 1) return make_error(ErrorCode::kParse, "base64: truncated input");
  if (padding > 0 && (packed.size() + padding) % 4 != 0)
    return make_error(ErrorCode::kParse, "base64: padding does not complete a group of 4");
  const size_t missing = (4 - packed.size() % 4) % 4;
  packed.append(missing, '=');
  std::string out(packed.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(packed.data()),
                                static_cast<int>(packed.size()));
  if (n < 0) return make_error(ErrorCode::kParse, "base64: not decodable");
  // EVP_DecodeBlock counts the padding's zero bytes too.
  out.resize(static_cast<size_t>(n) - missing);
  return out;
}

Result<KubeConfig> in_cluster_config(const EnvLookup& env, const std::string& sa_dir) {
  auto host = env("KUBERNETES_SERVICE_HOST");
  auto port = env("KUBERNETES_SERVICE_PORT");
  if (!host || !port || host->empty() || port->empty()) {
    return make_error(ErrorCode::kUnavailable,
                      "not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are unset "
                      "(pass --kubeconfig outside a pod)");
  }
  const bool v6 = host->find(':') != std::string::npos;
  auto endpoint = net::parse_http_url("https://" + (v6 ? "[" + *host + "]" : *host) + ":" + *port,
                                      "in-cluster API server URL");
  if (!endpoint) return endpoint.error();
  KubeConfig config;
  config.endpoint = *endpoint;
  config.token_file = sa_dir + "/token";
  config.tls.ca_file = sa_dir + "/ca.crt";
  // Fail now, with the path, rather than on the first request.
  if (auto token = read_file(config.token_file); !token) return token.error();
  if (auto ca = read_file(config.tls.ca_file); !ca) return ca.error();
  return config;
}

Result<KubeConfig> kubeconfig_from_text(std::string_view text, std::string_view where,
                                        std::string_view context_name, std::string_view base_dir) {
  auto doc = yaml_to_json(text, where);
  if (!doc) return doc.error();
  const std::string w(where);
  auto fail = [&](const std::string& why) {
    return make_error(ErrorCode::kInvalidArgument, w + ": " + why);
  };
  if (!doc->is_object()) return fail("not a kubeconfig (expected a mapping)");
  std::string ctx_name(context_name);
  if (ctx_name.empty()) ctx_name = string_field(*doc, "current-context");
  if (ctx_name.empty()) return fail("no context given and no current-context set");
  const Json* ctx = find_named(*doc, "contexts", "context", ctx_name);
  if (ctx == nullptr) return fail("context \"" + ctx_name + "\" not found");
  const std::string cluster_name = string_field(*ctx, "cluster");
  const Json* cluster = find_named(*doc, "clusters", "cluster", cluster_name);
  if (cluster == nullptr) return fail("cluster \"" + cluster_name + "\" not found");

  KubeConfig config;
  const std::string server = string_field(*cluster, "server");
  if (server.empty()) return fail("cluster \"" + cluster_name + "\" has no server");
  auto endpoint = net::parse_http_url(server, "server URL");
  if (!endpoint) return fail(endpoint.error().message);
  config.endpoint = *endpoint;
  auto skip = cluster->find("insecure-skip-tls-verify");
  config.tls.verify = !(skip != cluster->end() && skip->is_boolean() && skip->get<bool>());
  config.tls.ca_file = resolve_path(string_field(*cluster, "certificate-authority"), base_dir);
  if (auto data = string_field(*cluster, "certificate-authority-data"); !data.empty()) {
    auto pem = base64_decode(data);
    if (!pem) return fail("certificate-authority-data: " + pem.error().message);
    config.tls.ca_pem = *pem;
  }

  const std::string user_name = string_field(*ctx, "user");
  if (user_name.empty()) return config;  // anonymous
  const Json* user = find_named(*doc, "users", "user", user_name);
  if (user == nullptr) return fail("user \"" + user_name + "\" not found");
  if (user->contains("exec") || user->contains("auth-provider")) {
    return fail("user \"" + user_name +
                "\" uses exec/auth-provider credentials, which are not "
                "supported; use a token, tokenFile or client certificate");
  }
  config.token = string_field(*user, "token");
  config.token_file = resolve_path(string_field(*user, "tokenFile"), base_dir);
  config.tls.client_cert_file = resolve_path(string_field(*user, "client-certificate"), base_dir);
  config.tls.client_key_file = resolve_path(string_field(*user, "client-key"), base_dir);
  for (auto [field, target] : {std::pair{"client-certificate-data", &config.tls.client_cert_pem},
                               std::pair{"client-key-data", &config.tls.client_key_pem}}) {
    if (auto data = string_field(*user, field); !data.empty()) {
      auto pem = base64_decode(data);
      if (!pem) return fail(std::string(field) + ": " + pem.error().message);
      *target = *pem;
    }
  }
  const bool has_cert = !config.tls.client_cert_file.empty() || !config.tls.client_cert_pem.empty();
  const bool has_key = !config.tls.client_key_file.empty() || !config.tls.client_key_pem.empty();
  if (has_cert != has_key)
    return fail("user \"" + user_name + "\" needs both a client certificate and key");
  return config;
}

Result<KubeConfig> load_kubeconfig(const std::string& path, std::string_view context) {
  auto text = read_file(path);
  if (!text) return text.error();
  const size_t slash = path.rfind('/');
  return kubeconfig_from_text(
      *text, path, context,
      slash == std::string::npos ? "." : std::string_view(path).substr(0, slash));
}

Result<KubeConfig> resolve_config(const KubeFlags& flags, const EnvLookup& env) {
  std::string path = flags.kubeconfig;
  if (path.empty()) {
    // $KUBECONFIG may list several files; like kubectl we take the first for the context.
    auto var = env("KUBECONFIG");
    if (var && !var->empty()) path = var->substr(0, var->find(':'));
  }
  auto config = path.empty() ? in_cluster_config(env) : load_kubeconfig(path, flags.context);
  if (!config) return config;
  config->qps = flags.qps;
  config->burst = flags.burst;
  config->timeout = std::chrono::milliseconds(flags.timeout_ms);
  config->max_response_bytes = flags.max_response_bytes;
  return config;
}

}  // namespace gleaner::kube
