#include "bench/ls/ls_service.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <random>
#include <string>
#include <thread>

#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench_stats.h"

namespace gleaner::bench::ls {

namespace {

volatile uint32_t g_sink = 0;  // where the work ends, so the compiler keeps it
constexpr char kResponse[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

double thread_cpu_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// One request's work: `iterations` steps of a pointer chase through a 1 MiB table, each
// load's address the previous load's value, so a request takes longer when another task
// has evicted the table from the caches or shares the core.
uint32_t request_work(const std::vector<uint32_t>& table, uint32_t at, int64_t iterations) {
  for (int64_t i = 0; i < iterations; ++i)
    at = table[at];
  return at;
}

}  // namespace

// A single cycle through every entry in a fixed pseudo-random order (Sattolo's shuffle),
// so every chase visits the whole table whatever its starting point.
std::vector<uint32_t> service_table() {
  constexpr uint32_t kEntries = 1 << 18;
  std::vector<uint32_t> next(kEntries);
  for (uint32_t i = 0; i < kEntries; ++i)
    next[i] = i;
  std::mt19937 random(42);
  for (uint32_t i = kEntries - 1; i > 0; --i)
    std::swap(next[i], next[std::uniform_int_distribution<uint32_t>(0, i - 1)(random)]);
  return next;
}

// How many iterations of request_work take `work_us` of CPU on this machine with nothing
// else running: the median of several timed batches, measured before any run starts.
int64_t calibrate_iterations(const std::vector<uint32_t>& table, int work_us) {
  constexpr int64_t kBatch = 1 << 20;
  std::vector<double> per_us;
  uint32_t at = 0;
  for (int i = 0; i < 9; ++i) {
    const double start = thread_cpu_us();
    at = request_work(table, at, kBatch);
    per_us.push_back(static_cast<double>(kBatch) / std::max(1.0, thread_cpu_us() - start));
  }
  g_sink = at;
  return std::max<int64_t>(1, std::llround(median(per_us) * work_us));
}

// The service: a fixed amount of work per request (see request_work), a thread per
// connection.
[[noreturn]] void serve(int listener, const std::vector<uint32_t>& table, int64_t iterations) {
  for (;;) {
    int conn = ::accept(listener, nullptr, nullptr);
    if (conn < 0) continue;
    std::thread([conn, iterations, &table] {
      std::string buf;
      char chunk[4096];
      // Each connection's chase starts at its own place in the cycle.
      auto at = static_cast<uint32_t>((static_cast<size_t>(conn) * 7919U) % table.size());
      for (;;) {
        ssize_t n = ::read(conn, chunk, sizeof chunk);
        if (n <= 0) break;
        buf.append(chunk, static_cast<size_t>(n));
        size_t end;
        while ((end = buf.find("\r\n\r\n")) != std::string::npos) {
          buf.erase(0, end + 4);
          at = request_work(table, at, iterations);
          g_sink = at;
          if (::write(conn, kResponse, sizeof kResponse - 1) < 0) break;
        }
      }
      ::close(conn);
    }).detach();
  }
}

}  // namespace gleaner::bench::ls
