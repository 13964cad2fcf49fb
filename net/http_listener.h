#pragma once
// The TCP side of the small Boost.Beast HTTP servers both binaries run (the agent's
// /metrics port, the scheduler's API and webhook ports): the listener that accepts
// connections for them.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>  // before Boost.Asio's awaitable.hpp, which uses std::exchange

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "common/result.h"
#include "net/listen_address.h"
#include "net/listener_stats.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace gleaner::net {

// What an accepted connection is doing, for its listener's choice at the cap.
enum class ConnectionPhase : uint8_t {
  kReading,  // from accept, through a TLS handshake, until its first request is read whole
  kWaiting,  // answered a request: waiting for the next (keep-alive) or draining
  kServing,  // a request read whole is being answered
};

// One accepted connection: a tcp_stream that tells its listener what it is doing. Sessions
// that never say count as reading their first request since they were accepted.
class Connection : public boost::beast::tcp_stream {
 public:
  using boost::beast::tcp_stream::tcp_stream;
  void serving() { phase_ = ConnectionPhase::kServing; }
  void waiting() { phase_ = ConnectionPhase::kWaiting; }
  [[nodiscard]] ConnectionPhase phase() const { return phase_; }
  [[nodiscard]] std::chrono::steady_clock::time_point accepted() const { return accepted_; }

 private:
  std::atomic<ConnectionPhase> phase_{ConnectionPhase::kReading};
  const std::chrono::steady_clock::time_point accepted_ = std::chrono::steady_clock::now();
};

// At the cap, a connection still reading its first request is closed to admit a new one only
// once it has had this long: a client in a burst completes its TLS handshake and sends its
// request within it (a burst of 300 reviews on 2 CPUs: well under a second), a silent or
// trickling one (slowloris) is past it.
inline constexpr std::chrono::seconds kFirstRequestGrace{2};

// The TCP side of a small Beast HTTP server, shared by the agent's metrics server and the
// scheduler's HTTP and webhook ports: binds and listens at once (a taken port fails at start-up),
// accepts on a strand of the composition root's io_context (TCP_NODELAY: keep-alive
// answers are not held back; a cap on open connections; accept failures back off), hands
// each connection to `on_connection` on that strand
// (which runs its own session coroutine on the stream's executor), and keeps weak
// references to the connections so stop() can close them. At the cap, one connection is
// closed to admit the new one (logged once a minute with a count): the one accepted longest
// ago among those waiting between keep-alive requests, else among those still reading
// their first request (a TLS handshake, a header or a body) for kFirstRequestGrace or more.
// A flood of silent or trickling connections can hold every slot but never starve a health
// probe or a review; a burst of real requests is not cut off mid-handshake; only while
// every connection is serving a request, or reading one it has just begun, do new ones
// wait in the kernel's backlog.
class HttpListener {
 public:
  using Stream = Connection;
  using OnConnection = std::function<void(std::shared_ptr<Stream>)>;

  static Result<std::shared_ptr<HttpListener>> listen(
      boost::asio::io_context& io, std::string_view address, std::string_view what,
      OnConnection on_connection, size_t max_connections = kDefaultMaxConnections);
  [[nodiscard]] size_t max_connections() const;
  // Does not stop: its owner calls stop() (its last reference may go while the
  // io_context is being destroyed, when nothing can be posted any more).
  ~HttpListener() = default;
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Open connections at most, by default: beyond it new ones wait in the kernel's backlog
  // (each costs a file descriptor and a coroutine; a flood of idle ones must not exhaust
  // the descriptors the process's real work needs). Never more than half the process's
  // descriptor limit (RLIMIT_NOFILE), whatever is asked.
  static constexpr size_t kDefaultMaxConnections = kDefaultMaxHttpConnections;

  [[nodiscard]] uint16_t port() const;
  // accept() failures so far (out of descriptors, mostly); each is followed by a pause
  // (50 ms doubling to 1 s) and logged at most once a minute with a count.
  [[nodiscard]] uint64_t accept_errors() const;
  // For /metrics: how full the listener is, and how often it was out of room.
  using Stats = ListenerStats;
  [[nodiscard]] Stats stats() const;
  // Thread-safe: stops accepting and closes open connections (on the strand).
  void stop();

  // The usual OnConnection: each connection runs `session(owner, stream)` (a coroutine)
  // on the stream's strand while `owner` lives. Weak, so that an owner holding its
  // listener does not keep itself alive through this callback.
  template <class Owner, class Session>
  static OnConnection spawn_sessions(const std::shared_ptr<Owner>& owner, Session session) {
    return [weak = std::weak_ptr<Owner>(owner), session](std::shared_ptr<Stream> stream) {
      if (auto self = weak.lock()) {
        auto executor = stream->get_executor();
        boost::asio::co_spawn(executor, session(std::move(self), std::move(stream)),
                              boost::asio::detached);
      }
    };
  }

  struct Impl;

 private:
  explicit HttpListener(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace gleaner::net
