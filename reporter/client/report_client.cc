#include "reporter/client/report_client.h"

#include <mutex>
#include <optional>
#include <random>

#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/ssl.hpp>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "net/beast_names.h"
#include "net/token_source.h"
#include "net/url.h"

namespace gleaner::reporter {

using namespace net::beast_names;
namespace ssl = asio::ssl;

namespace {

Error net_error(const std::string& what, const error_code& ec) {
  ErrorCode code = ec == beast::error::timeout ? ErrorCode::kTimeout : ErrorCode::kUnavailable;
  return make_error(code, what + ": " + ec.message());
}

Error status_error(unsigned status, const std::string& body) {
  ErrorCode code = ErrorCode::kInvalidArgument;  // 4xx: the scheduler refused this report
  if (status == 401 || status == 403) code = ErrorCode::kPermission;
  if (status == 429) code = ErrorCode::kRetryLater;
  if (status >= 500) code = ErrorCode::kUnavailable;
  return make_error(
      code, "scheduler answered HTTP " + std::to_string(status) + ": " + body.substr(0, 200));
}

}  // namespace

struct ReportClient::Impl {
  Impl(asio::io_context& io, const Clock& c, ReportClientOptions o, net::HttpUrl ep)
      : clock(c),
        opts(std::move(o)),
        endpoint(std::move(ep)),
        strand(asio::make_strand(io)),
        wake(strand),
        resolver(strand),
        token("", opts.token_file),
        rng(std::random_device{}()) {}

  const Clock& clock;
  const ReportClientOptions opts;
  const net::HttpUrl endpoint;
  asio::strand<asio::io_context::executor_type> strand;
  asio::steady_timer wake;  // heartbeat, backoff and "new report" wake-ups
  tcp::resolver resolver;
  std::unique_ptr<ssl::context> tls_context;
  std::string ca_identity;  // device, inode, size and mtime of the CA file loaded
  // One of the two is open while a keep-alive connection exists.
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> secure;
  beast::flat_buffer buffer;
  net::TokenSource token;
  std::mt19937_64 rng;

  // Shared with submitting threads.
  mutable std::mutex mu;
  std::optional<NodeReport> latest;
  ReportClientStats stats;
  bool stopped = false;

  // Loop state, touched only on the strand.
  std::optional<NodeReport> last_sent;
  SteadyTime last_sent_at{};
  bool in_backoff = false;

  bool is_stopped() {
    std::lock_guard lock(mu);
    return stopped;
  }

  // Aborts pending operations but keeps the stream objects: the loop may be suspended
  // inside one of them and must wake up to an error, not to freed memory.
  void abort_connection() {
    error_code ignored;
    if (plain) plain->socket().close(ignored);
    if (secure) beast::get_lowest_layer(*secure).socket().close(ignored);
  }

  // Only from the loop itself, never while an operation on the stream is pending.
  void close_connection() {
    abort_connection();
    plain.reset();
    secure.reset();
    buffer.clear();
  }

  beast::tcp_stream& lowest() { return secure ? beast::get_lowest_layer(*secure) : *plain; }

  // The trusted CAs: the system store, or --scheduler-ca-file, re-read when the file
  // changes (a rotated CA; kubelet swaps a mounted ConfigMap's files) and until it first
  // exists. A file gone or unusable later keeps the CAs already loaded.
  Status refresh_trust() {
    if (tls_context && opts.ca_file.empty()) return ok_status();
    std::string identity;
    if (!opts.ca_file.empty()) {
      struct stat st {};
      if (::stat(opts.ca_file.c_str(), &st) != 0) {
        if (tls_context) return ok_status();
        return errno_error(errno, "CA file " + opts.ca_file);
      }
      identity = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                 std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                 std::to_string(st.st_mtim.tv_nsec);
      if (tls_context && identity == ca_identity) return ok_status();
    }
    auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
    ctx->set_verify_mode(ssl::verify_peer);
    error_code ec;
    if (opts.ca_file.empty()) {
      ctx->set_default_verify_paths(ec);
    } else {
      ctx->load_verify_file(opts.ca_file, ec);
    }
    if (ec) {
      Error e = make_error(ErrorCode::kInvalidArgument,
                           "CA file '" + opts.ca_file + "': " + ec.message());
      if (!tls_context) return e;
      spdlog::warn("report client: {}; keeping the CAs loaded before", e.message);
      ca_identity = identity;  // not re-read until it changes again
      return ok_status();
    }
    if (tls_context)
      spdlog::info("report client: {} changed; new connections trust it", opts.ca_file);
    tls_context = std::move(ctx);
    ca_identity = identity;
    return ok_status();
  }

  asio::awaitable<Status> connect() {
    error_code ec;
    if (endpoint.tls()) {
      if (Status trust = refresh_trust(); !trust) co_return trust.error();
    }
    auto results = co_await resolver.async_resolve(endpoint.host, std::to_string(endpoint.port),
                                                   asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return net_error("resolve " + endpoint.host, ec);
    if (endpoint.tls()) {
      secure = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(strand, *tls_context);
      if (!SSL_set_tlsext_host_name(secure->native_handle(), endpoint.host.c_str())) {
        co_return make_error(ErrorCode::kInternal, "cannot set TLS SNI for " + endpoint.host);
      }
      secure->set_verify_callback(ssl::host_name_verification(endpoint.host));
    } else {
      plain = std::make_unique<beast::tcp_stream>(strand);
    }
    lowest().expires_after(opts.request_timeout);
    co_await lowest().async_connect(results, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return net_error("connect " + endpoint.host_header(), ec);
    if (secure) {
      co_await secure->async_handshake(ssl::stream_base::client,
                                       asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return net_error("TLS handshake with " + endpoint.host_header(), ec);
    }
    std::lock_guard lock(mu);
    ++stats.connections;
    co_return ok_status();
  }

  template <typename Stream>
  asio::awaitable<Status> exchange(Stream& stream, const http::request<http::string_body>& req) {
    error_code ec;
    co_await http::async_write(stream, req, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return net_error("send report", ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(opts.max_response_bytes);
    parser.header_limit(16 * 1024);
    co_await http::async_read(stream, buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return net_error("read scheduler response", ec);
    const auto& res = parser.get();
    if (!res.keep_alive()) close_connection();
    if (res.result_int() / 100 != 2) co_return status_error(res.result_int(), res.body());
    co_return ok_status();
  }

  asio::awaitable<Status> send_once(const NodeReport& report) {
    auto bearer = token.get();
    if (!bearer) co_return bearer.error();
    http::request<http::string_body> req{http::verb::post, endpoint.target, 11};
    req.set(http::field::host, endpoint.host_header());
    req.set(http::field::user_agent, "gleaner-agent");
    req.set(http::field::content_type, "application/json");
    if (!bearer->empty()) req.set(http::field::authorization, "Bearer " + *bearer);
    req.keep_alive(true);
    req.body() = to_json_text(report);
    req.prepare_payload();

    // A reused keep-alive connection may have been closed by the server while idle; that
    // is not a failure of the scheduler, so such an attempt is retried once on a fresh one.
    for (int attempt = 0; attempt < 2; ++attempt) {
      bool reused = plain || secure;
      if (!reused) {
        Status c = co_await connect();
        if (!c) {
          close_connection();
          co_return c;
        }
      }
      lowest().expires_after(opts.request_timeout);
      // Not a conditional expression: g++ 12 mis-destroys temporaries of co_await in ?:.
      Status s = ok_status();
      if (secure) {
        s = co_await exchange(*secure, req);
      } else {
        s = co_await exchange(*plain, req);
      }
      if (s) {
        if (plain || secure) lowest().expires_never();
        co_return s;
      }
      bool transport_failure = s.error().code == ErrorCode::kUnavailable;
      close_connection();
      if (!(reused && transport_failure)) co_return s;
    }
    co_return make_error(ErrorCode::kUnavailable, "connection closed by scheduler");
  }

  // Waits until `deadline` or until submit()/stop() cancels the timer.
  asio::awaitable<void> wait_until(asio::steady_timer::time_point deadline) {
    error_code ec;
    wake.expires_at(deadline);
    co_await wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }

  void record(const Status& result, const NodeReport& report, SendReason reason) {
    std::lock_guard lock(mu);
    if (result) {
      if (stats.consecutive_failures > 0) {
        spdlog::info("reporter: scheduler reachable again after {} failed sends",
                     stats.consecutive_failures);
      }
      ++stats.sends_ok;
      if (reason == SendReason::kHeartbeat) ++stats.heartbeats;
      stats.consecutive_failures = 0;
      stats.last_sent_sequence = report.sequence;
      if (latest && latest->sequence == report.sequence) {
        latest.reset();  // nothing newer arrived while sending
      }
      stats.pending_reports = latest ? 1 : 0;
      return;
    }
    std::string message = result.error().describe();
    if (stats.consecutive_failures == 0 || message != stats.last_error) {
      spdlog::warn("reporter: sending node report failed: {}", message);
    }
    ++stats.sends_failed;
    ++stats.consecutive_failures;
    stats.last_error = std::move(message);
  }

  static asio::awaitable<void> run(std::shared_ptr<Impl> self) {
    try {
      co_await self->loop();
    } catch (const std::exception& e) {
      spdlog::error("reporter: report loop ended: {}", e.what());
    }
  }

  asio::awaitable<void> loop() {
    using std::chrono::steady_clock;
    while (!is_stopped()) {
      std::optional<NodeReport> candidate;
      {
        std::lock_guard lock(mu);
        // The unsent latest report, or (for heartbeats) the last one acknowledged.
        candidate = latest ? latest : last_sent;
      }
      if (!candidate) {
        co_await wait_until(steady_clock::time_point::max());
        continue;
      }
      SteadyTime now = clock.now();
      SendReason reason = should_send(last_sent, last_sent_at, *candidate, now, opts.thresholds);
      if (reason == SendReason::kNone) {
        auto due = last_sent_at + opts.thresholds.heartbeat - now;
        co_await wait_until(steady_clock::now() +
                            std::chrono::duration_cast<steady_clock::duration>(due));
        continue;
      }
      Status result = co_await send_once(*candidate);
      if (is_stopped()) break;
      record(result, *candidate, reason);
      if (result) {
        last_sent = std::move(candidate);
        last_sent_at = clock.now();
        continue;
      }
      int failures = 0;
      {
        std::lock_guard lock(mu);
        failures = stats.consecutive_failures;
      }
      double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
      // Newer reports do not cut the backoff short: they only replace the pending one.
      in_backoff = true;
      co_await wait_until(steady_clock::now() + backoff_delay(opts.backoff, failures, u));
      in_backoff = false;
    }
    close_connection();
  }

  void poke() {
    asio::post(strand, [this] {
      if (!in_backoff) wake.cancel();
    });
  }
};

Result<std::unique_ptr<ReportClient>> ReportClient::create(asio::io_context& io, const Clock& clock,
                                                           ReportClientOptions options) {
  auto endpoint = net::parse_http_url(options.scheduler_url, "scheduler URL");
  if (!endpoint) return endpoint.error();
  const bool tls = endpoint->tls();
  auto impl = std::make_shared<Impl>(io, clock, std::move(options), std::move(*endpoint));
  if (tls) {
    // A CA file that is not there yet (a ConfigMap published after the agent started) is
    // waited for; one that is there but unusable is a configuration error.
    Status trust = impl->refresh_trust();
    if (!trust && trust.error().code != ErrorCode::kNotFound) return trust.error();
    if (!trust) spdlog::warn("report client: {}; reports wait for it", trust.error().message);
  }
  return std::unique_ptr<ReportClient>(new ReportClient(std::move(impl)));
}

ReportClient::ReportClient(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

ReportClient::~ReportClient() {
  stop();
}

void ReportClient::start() {
  asio::co_spawn(impl_->strand, Impl::run(impl_), asio::detached);
}

void ReportClient::submit(NodeReport report) {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopped) return;
    ++impl_->stats.submitted;
    if (impl_->latest) ++impl_->stats.superseded;
    impl_->latest = std::move(report);
    impl_->stats.pending_reports = 1;
  }
  impl_->poke();
}

void ReportClient::stop() {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  // Keep the Impl alive until the posted handler has run.
  asio::post(impl_->strand, [impl = impl_] {
    impl->wake.cancel();
    impl->resolver.cancel();
    impl->abort_connection();
  });
}

ReportClientStats ReportClient::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

}  // namespace gleaner::reporter
