#pragma once
// Streams NodeReports to the scheduler: JSON over HTTP/1.1 POST, keep-alive, bearer
// token, optional TLS. Runs as a coroutine on an io_context owned by the composition
// root, so sampling threads only ever hand over a value (submit) and never wait on I/O.
//
// Memory stays bounded however long the scheduler is away: there is one slot holding
// the latest submitted report, and a newer report replaces an unsent older one (the
// scheduler only cares about the current state of the node).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "reporter/client/send_policy.h"
#include "reporter/wire/node_report.h"

// Forward declaration keeps Asio and Beast out of every includer.
namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace gleaner::reporter {

struct ReportClientOptions {
  std::string scheduler_url;  // http://host:port/path or https://...
  std::string token_file;     // empty: no Authorization header
  std::string ca_file;        // https only; empty: the system trust store
  SendThresholds thresholds;
  BackoffPolicy backoff;
  // Bounds connect + write + read of one request: a stalled scheduler costs this much.
  std::chrono::milliseconds request_timeout{std::chrono::seconds(5)};
  // Responses larger than this are treated as garbage.
  size_t max_response_bytes = 64 * 1024;
};

struct ReportClientStats {
  uint64_t submitted = 0;
  uint64_t superseded = 0;  // submitted but replaced by a newer one before it was sent
  uint64_t sends_ok = 0;
  uint64_t sends_failed = 0;
  uint64_t heartbeats = 0;   // successful sends whose reason was the heartbeat
  uint64_t connections = 0;  // TCP connections opened (keep-alive keeps this low)
  int consecutive_failures = 0;
  uint64_t last_sent_sequence = 0;
  size_t pending_reports = 0;  // 0 or 1, by construction
  std::string last_error;
};

class ReportClient {
 public:
  // Fails on a malformed URL or a CA file that exists but is unusable (a missing one is
  // waited for: reports fail until it appears). `clock` must outlive the client.
  static Result<std::unique_ptr<ReportClient>> create(boost::asio::io_context& io,
                                                      const Clock& clock,
                                                      ReportClientOptions options);
  ~ReportClient();
  ReportClient(const ReportClient&) = delete;
  ReportClient& operator=(const ReportClient&) = delete;

  // Starts the send loop on the io_context (it runs once the root runs the context).
  void start();
  // Thread-safe and cheap: stores the report as the latest state and wakes the loop.
  void submit(NodeReport report);
  // Thread-safe; the loop ends and the connection closes on the io_context's thread.
  void stop();
  [[nodiscard]] ReportClientStats stats() const;

  struct Impl;

 private:
  explicit ReportClient(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace gleaner::reporter
