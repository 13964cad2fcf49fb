#pragma once
// Starts test/apiserver/apiserver.py (the kube-apiserver and kubelet stand-in) for one
// test: port 0, the chosen port read from its "ready port=N" line under a deadline. The
// server exits when this object closes its stdin, and dies with the test process.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/json_util.h"
#include "kube/config.h"
#include "kube/http_client.h"
#include "test/support/eventually.h"
#include "test/support/spawn.h"

namespace gleaner::kube::testing {

class TestApiServer {
 public:
  static std::unique_ptr<TestApiServer> start(std::vector<std::string> extra = {}) {
    if (::access("/usr/bin/python3", X_OK) != 0) return nullptr;
    int out[2], in[2];
    if (::pipe(out) != 0 || ::pipe(in) != 0) return nullptr;
    std::vector<std::string> args = {"/usr/bin/python3",
                                     GLEANER_SOURCE_DIR "/test/apiserver/apiserver.py",
                                     "--port",
                                     "0",
                                     "--bookmark-interval",
                                     "0.2"};
    args.insert(args.end(), extra.begin(), extra.end());
    const pid_t pid = gleaner::testing::spawn_program(args, [&] {
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(in[0], STDIN_FILENO);
      ::close(out[0]);
      ::close(in[1]);
    });
    ::close(out[1]);
    ::close(in[0]);
    auto server = std::unique_ptr<TestApiServer>(new TestApiServer(pid, out[0], in[1]));
    if (!server->wait_ready(std::chrono::seconds(15))) return nullptr;
    return server;
  }

  ~TestApiServer() {
    ::close(stdin_);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    ::close(stdout_);
  }

  [[nodiscard]] uint16_t port() const { return port_; }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] KubeConfig config() const {
    KubeConfig c;
    c.endpoint = net::HttpUrl{"http", "127.0.0.1", port_};
    c.qps = 0;
    c.timeout = std::chrono::milliseconds(5000);
    return c;
  }

  // POST /_admin/<what>?<query>: the server's test controls.
  void admin(const std::string& what, const std::string& query = "") {
    raw("POST", "/_admin/" + what + (query.empty() ? "" : "?" + query));
  }
  Json admin_get(const std::string& what) {
    return Json::parse(raw("GET", "/_admin/" + what).body);
  }
  // Requests the server saw, filtered by method and path.
  int count_requests(const std::string& method, const std::string& path, bool watch) {
    int n = 0;
    for (const auto& r : admin_get("requests")) {
      // A request without a query string is logged with a null (or no) "query".
      const auto query = r.find("query");
      const bool is_watch =
          query != r.end() && query->is_object() && query->value("watch", "") == "true";
      if (r["method"] == method && r["path"] == path && is_watch == watch) ++n;
    }
    return n;
  }
  // Requests of a method and path (not watches) the server has answered with `code`.
  int count_answers(const std::string& method, const std::string& path, int code) {
    int n = 0;
    for (const auto& r : admin_get("requests"))
      if (r["method"] == method && r["path"] == path && r.value("code", 0) == code) ++n;
    return n;
  }
  HttpResponse raw(const std::string& method, const std::string& target,
                   const std::string& body = "",
                   const std::string& content_type = "application/json") {
    HttpConnection conn(net::HttpUrl{"http", "127.0.0.1", port_}, {});
    net::ClientRequest req{method, target, {{"Content-Type", content_type}}, body};
    auto resp = conn.request(req, {});
    return resp ? *resp : HttpResponse{};
  }

 private:
  TestApiServer(pid_t pid, int out, int in) : pid_(pid), stdout_(out), stdin_(in) {}

  bool wait_ready(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string line;
    while (line.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{stdout_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buf[64];
      const ssize_t n = ::read(stdout_, buf, sizeof buf);
      if (n <= 0) return false;
      line.append(buf, static_cast<size_t>(n));
    }
    if (!line.starts_with("ready port=")) return false;
    port_ = static_cast<uint16_t>(std::stoi(line.substr(11)));
    return true;
  }

  pid_t pid_;
  int stdout_;
  int stdin_;
  uint16_t port_ = 0;
};

using gleaner::testing::eventually;

}  // namespace gleaner::kube::testing
