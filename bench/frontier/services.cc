#include "bench/frontier/services.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test/support/net.h"

namespace gleaner::bench::frontier {
namespace {

const char* binary_of(ServiceKind kind) {
  switch (kind) {
    case ServiceKind::kMemcached:
      return "/usr/bin/memcached";
    case ServiceKind::kRedis:
      return "/usr/bin/redis-server";
    case ServiceKind::kNginx:
      return "/usr/sbin/nginx";
  }
  return "";
}

const char* package_of(ServiceKind kind) {
  switch (kind) {
    case ServiceKind::kMemcached:
      return "memcached";
    case ServiceKind::kRedis:
      return "redis-server";
    case ServiceKind::kNginx:
      return "nginx-light";
  }
  return "";
}

bool accepts(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string read_log(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Text that compresses like a web page: words of 3 to 9 letters from a vocabulary of 512,
// in a fixed pseudo-random order. Deflate has real work to do on it, without the long
// match chains of a text made of a handful of words.
std::string page_text(size_t bytes) {
  uint64_t x = 88172645463325252ULL;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::vector<std::string> words(512);
  for (auto& w : words) {
    const size_t len = 3 + next() % 7;
    for (size_t i = 0; i < len; ++i)
      w += static_cast<char>('a' + next() % 26);
  }
  std::string out;
  while (out.size() < bytes) {
    out += words[next() % words.size()];
    out += next() % 12 == 0 ? '\n' : ' ';
  }
  out.resize(bytes);
  return out;
}

// Creates (or replaces) a file with `text`; throws when it cannot.
void create_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string nginx_config(const std::string& dir, uint16_t port) {
  create_file(dir + "/www/static", page_text(4096));
  create_file(dir + "/www/cpu", page_text(size_t{128} * 1024));
  std::ostringstream c;
  c << "daemon off;\nmaster_process off;\nworker_processes 1;\n"
    << "pid " << dir << "/nginx.pid;\nerror_log " << dir << "/error.log warn;\n"
    << "events { worker_connections 512; }\n"
    << "http {\n  access_log off;\n  keepalive_requests 100000000;\n  keepalive_timeout 600s;\n"
    << "  client_body_temp_path " << dir << "/tmp/body;\n  proxy_temp_path " << dir
    << "/tmp/proxy;\n  fastcgi_temp_path " << dir << "/tmp/fastcgi;\n  uwsgi_temp_path " << dir
    << "/tmp/uwsgi;\n  scgi_temp_path " << dir << "/tmp/scgi;\n"
    << "  server {\n    listen 127.0.0.1:" << port << ";\n    root " << dir << "/www;\n"
    << "    location = /static { default_type text/plain; gzip off; }\n"
    << "    location = /cpu { default_type text/plain; gzip on; gzip_comp_level 6;\n"
    << "      gzip_types *; gzip_min_length 0; gzip_http_version 1.0; }\n"
    << "  }\n}\n";
  std::string path = dir + "/nginx.conf";
  create_file(path, c.str());
  std::error_code ec;
  std::filesystem::create_directories(dir + "/tmp", ec);
  return path;
}

std::vector<std::string> service_argv(ServiceKind kind, uint16_t port, const std::string& dir) {
  const std::string p = std::to_string(port);
  switch (kind) {
    case ServiceKind::kMemcached:
      return {binary_of(kind), "-u", "root", "-l", "127.0.0.1", "-p", p, "-U", "0", "-t", "2", "-m",
              "1024",          "-c", "1024"};
    case ServiceKind::kRedis:
      return {binary_of(kind),
              "--port",
              p,
              "--bind",
              "127.0.0.1",
              "--save",
              "",
              "--appendonly",
              "no",
              "--daemonize",
              "no",
              "--protected-mode",
              "no",
              "--dir",
              dir};
    case ServiceKind::kNginx:
      return {binary_of(kind),        "-p", dir + "/", "-e", dir + "/error.log", "-c",
              nginx_config(dir, port)};
  }
  return {};
}

}  // namespace

const char* to_string(ServiceKind kind) {
  switch (kind) {
    case ServiceKind::kMemcached:
      return "memcached";
    case ServiceKind::kRedis:
      return "redis";
    case ServiceKind::kNginx:
      return "nginx";
  }
  return "unknown";
}

std::optional<ServiceKind> parse_service(const std::string& name) {
  for (auto kind : {ServiceKind::kMemcached, ServiceKind::kRedis, ServiceKind::kNginx})
    if (name == to_string(kind)) return kind;
  return std::nullopt;
}

std::string missing_binary(ServiceKind kind) {
  if (::access(binary_of(kind), X_OK) == 0) return "";
  return std::string(binary_of(kind)) + " not found (Debian package " + package_of(kind) +
         "; scripts/install-deps.sh)";
}

LsService::LsService(ServiceKind kind, testing::ScratchCgroups& scratch, const std::string& cgroup,
                     const std::string& workdir)
    : kind_(kind), scratch_(scratch), port_(testing::free_loopback_port()) {
  if (auto missing = missing_binary(kind); !missing.empty()) throw std::runtime_error(missing);
  std::error_code ec;
  std::filesystem::create_directories(workdir + "/www", ec);
  const std::string log = workdir + "/" + to_string(kind) + ".log";
  pid_ = scratch.spawn_exec(cgroup, service_argv(kind, port_, workdir), log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!accepts(port_)) {
    if (::kill(pid_, 0) != 0 || std::chrono::steady_clock::now() >= deadline) {
      scratch_.kill_child(pid_);
      pid_ = -1;
      throw std::runtime_error(std::string(to_string(kind)) + " did not start on port " +
                               std::to_string(port_) + ": " + read_log(log) +
                               read_log(workdir + "/error.log"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  switch (kind) {
    case ServiceKind::kMemcached:
      protocol_ = memcached_protocol();
      break;
    case ServiceKind::kRedis:
      protocol_ = redis_protocol();
      break;
    case ServiceKind::kNginx:
      protocol_ = http_protocol();
      break;
  }
}

LsService::~LsService() {
  if (pid_ > 0) scratch_.kill_child(pid_);
}

const char* to_string(BeMix mix) {
  return mix == BeMix::kCpu ? "cpu" : "memory";
}

std::optional<BeMix> parse_be_mix(const std::string& name) {
  if (name == "cpu") return BeMix::kCpu;
  if (name == "memory") return BeMix::kMemory;
  return std::nullopt;
}

std::vector<std::string> stress_ng_argv(BeMix mix, int cpus) {
  const std::string n = std::to_string(std::max(1, cpus));
  if (mix == BeMix::kCpu) return {"/usr/bin/stress-ng", "--quiet", "--cpu", n};
  // One worker of each kind per two CPUs (at least one): cache thrashing, memory
  // bandwidth, and page faulting over 256 MiB.
  const std::string half = std::to_string(std::max(1, cpus / 2));
  return {"/usr/bin/stress-ng", "--quiet", "--cache", half, "--stream", half, "--vm", half,
          "--vm-bytes",         "256M"};
}

}  // namespace gleaner::bench::frontier
