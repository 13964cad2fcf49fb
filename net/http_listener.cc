#include "net/http_listener.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <list>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include "net/beast_names.h"

namespace gleaner::net {

using namespace net::beast_names;

namespace {

// Accept failures (out of file descriptors: EMFILE/ENFILE) are not retried at once: the
// pending connection stays in the backlog and accept would fail again in a tight loop,
// starving the process (an agent that cannot open cgroup files cannot re-assert them).
constexpr auto kAcceptBackoffMin = std::chrono::milliseconds(50);
constexpr auto kAcceptBackoffMax = std::chrono::seconds(1);
constexpr auto kWarnEvery = std::chrono::seconds(60);

}  // namespace

struct HttpListener::Impl {
  Impl(asio::io_context& io, std::string w, OnConnection c)
      : strand(asio::make_strand(io)),
        acceptor(strand),
        what(std::move(w)),
        on_connection(std::move(c)) {}

  asio::strand<asio::io_context::executor_type> strand;
  tcp::acceptor acceptor;
  std::string what;
  OnConnection on_connection;
  std::list<std::weak_ptr<Connection>> sessions;  // oldest first; touched on the strand only
  uint16_t bound_port = 0;

  size_t max_connections = HttpListener::kDefaultMaxConnections;
  std::atomic<uint64_t> accept_errors{0};
  std::atomic<uint64_t> capacity_reached{0};
  std::atomic<uint64_t> idle_closed{0};
  std::chrono::steady_clock::time_point last_cap_warning{};
  uint64_t unreported_idle_closed = 0;
  std::atomic<size_t> open_connections{0};
  bool at_capacity = false;  // touched on the strand only
  std::chrono::steady_clock::time_point last_warning{};
  uint64_t unreported = 0;  // failures since the last warning

  // The connection to close at the cap, oldest first: one waiting between requests, else one
  // reading its first request for the grace or more; end() when none may go.
  std::list<std::weak_ptr<Connection>>::iterator closable() {
    const auto now = std::chrono::steady_clock::now();
    auto reading = sessions.end();
    for (auto it = sessions.begin(); it != sessions.end(); ++it) {
      auto s = it->lock();
      if (!s) continue;
      if (s->phase() == ConnectionPhase::kWaiting) return it;
      if (reading == sessions.end() && s->phase() == ConnectionPhase::kReading &&
          now - s->accepted() >= kFirstRequestGrace) {
        reading = it;
      }
    }
    return reading;
  }

  bool make_room() {
    if (auto it = closable(); it != sessions.end()) {
      auto s = it->lock();
      error_code ignored;
      s->socket().shutdown(tcp::socket::shutdown_both, ignored);
      s->socket().close(ignored);
      sessions.erase(it);
      ++idle_closed;
      ++unreported_idle_closed;
      const auto now = std::chrono::steady_clock::now();
      if (now - last_cap_warning >= kWarnEvery) {
        spdlog::warn(
            "{} port {}: {} open connections (the cap); closed {} idle or slow connection(s) "
            "to admit new ones since the last warning",
            what, bound_port, max_connections, unreported_idle_closed);
        last_cap_warning = now;
        unreported_idle_closed = 0;
      }
      return true;
    }
    return false;
  }

  static asio::awaitable<void> pause(std::shared_ptr<Impl> self, std::chrono::milliseconds d) {
    asio::steady_timer timer(self->strand);
    timer.expires_after(d);
    error_code ignored;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }

  static asio::awaitable<void> accept_loop(std::shared_ptr<Impl> self) {
    auto backoff = std::chrono::milliseconds(0);
    for (;;) {
      if (!self->acceptor.is_open()) co_return;
      // At the cap, new connections wait in the kernel's backlog until one closes.
      self->sessions.remove_if([](const auto& w) { return w.expired(); });
      self->open_connections = self->sessions.size();
      if (self->sessions.size() >= self->max_connections) {
        if (!self->at_capacity) ++self->capacity_reached;
        self->at_capacity = true;
        // Room for the next one: an idle or slow connection goes (its session sees the
        // socket closed and ends; HttpListener says which). Otherwise the next one waits in
        // the backlog.
        if (!self->make_room()) {
          co_await pause(self, kAcceptBackoffMin);
          continue;
        }
      }
      self->at_capacity = false;
      error_code ec;
      tcp::socket socket(self->strand);
      co_await self->acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
      if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) co_return;
      if (ec) {
        ++self->accept_errors;
        ++self->unreported;
        const auto now = std::chrono::steady_clock::now();
        if (now - self->last_warning >= kWarnEvery) {
          spdlog::warn(
              "{} port {}: accept failed ({} time(s) since the last warning): {}; "
              "backing off",
              self->what, self->bound_port, self->unreported, ec.message());
          self->last_warning = now;
          self->unreported = 0;
        }
        backoff =
            std::clamp(backoff * 2, kAcceptBackoffMin,
                       std::chrono::duration_cast<std::chrono::milliseconds>(kAcceptBackoffMax));
        co_await pause(self, backoff);
        continue;
      }
      backoff = std::chrono::milliseconds(0);
      socket.set_option(tcp::no_delay(true), ec);
      auto stream = std::make_shared<Connection>(std::move(socket));
      self->sessions.push_back(stream);
      self->open_connections = self->sessions.size();
      self->on_connection(std::move(stream));
    }
  }
};

Result<std::shared_ptr<HttpListener>> HttpListener::listen(asio::io_context& io,
                                                           std::string_view address,
                                                           std::string_view what,
                                                           OnConnection on_connection,
                                                           size_t max_connections) {
  auto addr = parse_listen_address(address, what);
  if (!addr) return addr.error();
  error_code ec;
  auto ip = asio::ip::make_address(addr->host, ec);
  if (ec) return listen_address_error(what, address, "host must be an IP address: " + ec.message());
  auto impl = std::make_shared<Impl>(io, std::string(what), std::move(on_connection));
  tcp::endpoint endpoint(ip, addr->port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return listen_address_error(what, address, "cannot listen: " + ec.message());
  impl->bound_port = impl->acceptor.local_endpoint().port();
  rlimit files{};
  size_t cap = max_connections;
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
    cap = std::min<size_t>(cap, std::max<size_t>(8, files.rlim_cur / 2));
  impl->max_connections = std::max<size_t>(cap, 1);
  asio::co_spawn(impl->strand, Impl::accept_loop(impl), asio::detached);
  return std::shared_ptr<HttpListener>(new HttpListener(std::move(impl)));
}

uint16_t HttpListener::port() const {
  return impl_->bound_port;
}

size_t HttpListener::max_connections() const {
  return impl_->max_connections;
}

uint64_t HttpListener::accept_errors() const {
  return impl_->accept_errors.load();
}

HttpListener::Stats HttpListener::stats() const {
  return Stats{impl_->open_connections.load(), impl_->max_connections, impl_->accept_errors.load(),
               impl_->capacity_reached.load(), impl_->idle_closed.load()};
}

void HttpListener::stop() {
  asio::post(impl_->strand, [impl = impl_] {
    error_code ignored;
    impl->acceptor.close(ignored);
    for (auto& w : impl->sessions) {
      if (auto s = w.lock()) s->socket().close(ignored);
    }
    impl->sessions.clear();
  });
}

}  // namespace gleaner::net
