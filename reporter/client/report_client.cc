#include "reporter/client/report_client.h"

#include <mutex>
#include <optional>
#include <random>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "net/beast_names.h"
#include "net/client_connection.h"
#include "net/token_source.h"
#include "net/url.h"

namespace gleaner::reporter {

using namespace net::beast_names;

namespace {

Error status_error(int status, const std::string& body) {
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
        conn(strand, endpoint),
        token("", opts.token_file),
        rng(std::random_device{}()) {}

  const Clock& clock;
  const ReportClientOptions opts;
  const net::HttpUrl endpoint;
  asio::strand<asio::io_context::executor_type> strand;
  asio::steady_timer wake;     // heartbeat, backoff and "new report" wake-ups
  net::ClientConnection conn;  // keep-alive, on the strand
  std::string ca_identity;     // device, inode, size and mtime of the CA file loaded
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

  // The trusted CAs: the system store, or --scheduler-ca-file, re-read when the file
  // changes (a rotated CA; kubelet swaps a mounted ConfigMap's files) and until it first
  // exists. A file gone or unusable later keeps the CAs already loaded.
  Status refresh_trust() {
    if (conn.has_tls() && opts.ca_file.empty()) return ok_status();
    std::string identity;
    if (!opts.ca_file.empty()) {
      struct stat st {};
      if (::stat(opts.ca_file.c_str(), &st) != 0) {
        if (conn.has_tls()) return ok_status();
        return errno_error(errno, "CA file " + opts.ca_file);
      }
      identity = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                 std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                 std::to_string(st.st_mtim.tv_nsec);
      if (conn.has_tls() && identity == ca_identity) return ok_status();
    }
    net::TlsOptions trust;
    trust.ca_file = opts.ca_file;
    auto ctx = net::client_tls_context(trust);
    if (!ctx) {
      if (!conn.has_tls()) return ctx.error();
      spdlog::warn("report client: {}; keeping the CAs loaded before", ctx.error().message);
      ca_identity = identity;  // not re-read until it changes again
      return ok_status();
    }
    if (conn.has_tls())
      spdlog::info("report client: {} changed; new connections trust it", opts.ca_file);
    conn.set_tls(std::move(*ctx), true);
    ca_identity = identity;
    return ok_status();
  }

  asio::awaitable<Status> send_once(const NodeReport& report) {
    auto bearer = token.get();
    if (!bearer) co_return bearer.error();
    if (endpoint.tls() && !conn.connected()) {
      if (Status trust = refresh_trust(); !trust) co_return trust.error();
    }
    net::ClientRequest req;
    req.method = "POST";
    // The scheduler URL's path prefixes every target; what follows it (a trailing slash,
    // a query) is the request's own.
    req.target = endpoint.target.substr(conn.path_prefix().size());
    req.headers = {{"User-Agent", "gleaner-agent"}, {"Content-Type", "application/json"}};
    if (!bearer->empty()) req.headers.emplace_back("Authorization", "Bearer " + *bearer);
    req.body = to_json_text(report);
    net::HttpLimits limits;
    limits.timeout = opts.request_timeout;
    limits.max_body_bytes = opts.max_response_bytes;
    limits.max_header_bytes = 16 * 1024;
    auto res =
        co_await conn.request(req, limits, std::chrono::steady_clock::now() + limits.timeout);
    if (!res) co_return res.error();
    if (res->status / 100 != 2) co_return status_error(res->status, res->body);
    co_return ok_status();
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
    conn.close();
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
    impl->conn.abort();
  });
}

ReportClientStats ReportClient::stats() const {
  std::lock_guard lock(impl_->mu);
  ReportClientStats stats = impl_->stats;
  stats.connections = impl_->conn.connections_opened();
  return stats;
}

}  // namespace gleaner::reporter
