#pragma once
// A tiny HTTP/1.1 server on 127.0.0.1 for the report client tests. It records every
// request and answers according to its mode: a normal scheduler, one that sends
// garbage, one that stalls, or one that is down (not listening at all).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace gleaner::reporter::testing {

class LoopbackHttpServer {
 public:
  enum class Mode { kOk, kGarbage, kStall, kUnauthorized };

  struct Request {
    std::string request_line;
    std::string authorization;
    std::string body;
  };

  LoopbackHttpServer() { listen_on(0); }
  ~LoopbackHttpServer() {
    go_down();
    stopping_ = true;
    if (acceptor_.joinable()) acceptor_.join();
  }

  [[nodiscard]] uint16_t port() const { return port_; }
  [[nodiscard]] std::string url() const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/v1/reports";
  }
  void set_mode(Mode m) {
    std::lock_guard lock(mu_);
    mode_ = m;
    cv_.notify_all();
  }

  // Stops listening and drops open connections: connects are refused until go_up().
  void go_down() {
    stop_accepting_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    std::vector<std::thread> conns;
    {
      std::lock_guard lock(mu_);
      for (int fd : open_fds_)
        ::shutdown(fd, SHUT_RDWR);
      conns.swap(conn_threads_);
      cv_.notify_all();
    }
    for (auto& t : conns)
      t.join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
  }
  void go_up() { listen_on(port_); }

  std::vector<Request> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  int connections() const { return connections_; }

  // Waits until `pred(requests)` holds or the deadline passes; returns the last verdict.
  bool wait_for(const std::function<bool(const std::vector<Request>&)>& pred,
                std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return pred(requests_); });
  }

 private:
  void listen_on(uint16_t port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 16) != 0) {
      throw std::runtime_error(std::string("loopback server: ") + std::strerror(errno));
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    stop_accepting_ = false;
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  void accept_loop() {
    while (!stop_accepting_) {
      pollfd p{listen_fd_, POLLIN, 0};
      // The timeout only bounds how quickly go_down() is noticed.
      if (::poll(&p, 1, 20) <= 0) continue;
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      ++connections_;
      std::lock_guard lock(mu_);
      open_fds_.push_back(fd);
      conn_threads_.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    std::string buf;
    char chunk[4096];
    for (;;) {
      size_t header_end;
      while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) return finish(fd);
        buf.append(chunk, static_cast<size_t>(n));
      }
      std::string head = buf.substr(0, header_end);
      size_t length = 0;
      Request req;
      req.request_line = head.substr(0, head.find("\r\n"));
      size_t pos = 0;
      while ((pos = head.find("\r\n", pos)) != std::string::npos) {
        pos += 2;
        std::string line = head.substr(pos, head.find("\r\n", pos) - pos);
        std::string lower = line;
        for (auto& c : lower)
          c = static_cast<char>(std::tolower(c));
        if (lower.rfind("content-length:", 0) == 0) length = std::stoul(line.substr(15));
        if (lower.rfind("authorization:", 0) == 0) req.authorization = line.substr(15);
      }
      buf.erase(0, header_end + 4);
      while (buf.size() < length) {
        ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) return finish(fd);
        buf.append(chunk, static_cast<size_t>(n));
      }
      req.body = buf.substr(0, length);
      buf.erase(0, length);
      Mode mode;
      {
        std::lock_guard lock(mu_);
        requests_.push_back(req);
        mode = mode_;
        cv_.notify_all();
      }
      std::string reply;
      switch (mode) {
        case Mode::kOk:
          reply =
              "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}";
          break;
        case Mode::kUnauthorized:
          reply = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 3\r\n\r\nno\n";
          break;
        case Mode::kGarbage:
          reply = "\x01\x02 this is not HTTP \r\n\r\n\xff\xfe";
          break;
        case Mode::kStall: {
          // Hold the request unanswered until the client gives up (closes) or we go down.
          while (::recv(fd, chunk, sizeof chunk, 0) > 0) {
          }
          return finish(fd);
        }
      }
      if (::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) return finish(fd);
      if (mode == Mode::kGarbage) return finish(fd);
    }
  }

  void finish(int fd) {
    std::lock_guard lock(mu_);
    std::erase(open_fds_, fd);
    ::close(fd);
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_accepting_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Mode mode_ = Mode::kOk;
  std::vector<Request> requests_;
  std::vector<int> open_fds_;
  std::vector<std::thread> conn_threads_;
};

}  // namespace gleaner::reporter::testing
