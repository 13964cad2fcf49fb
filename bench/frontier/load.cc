#include "bench/frontier/load.h"

#include <atomic>
#include <stdexcept>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

namespace gleaner::bench::frontier {
namespace {
using Clock = std::chrono::steady_clock;

int connect_loopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads until one complete response is at the front of `buf`; returns its length, or 0
// when the connection broke or the bytes are not a response.
size_t read_response(int fd, const Protocol& protocol, std::string& buf) {
  char chunk[16384];
  for (;;) {
    auto end = protocol.response_end(buf);
    if (!end) return 0;
    if (*end > 0) return *end;
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) return 0;
    buf.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace

LoadResult generate(const Protocol& protocol, uint16_t port, const LoadOptions& options) {
  const int conns = std::max(1, options.connections);
  std::vector<LoadResult> per(static_cast<size_t>(conns));
  std::vector<std::thread> threads;
  std::atomic<bool> no_fifo{false};
  std::atomic<bool> no_connect{false};
  // A connection's period at `offset_s` into the run (longer in the low steps).
  auto period_at = [&](double offset_s) {
    const bool low = options.steps && static_cast<int64_t>(offset_s / 2.0) % 2 == 0;
    return conns / (low ? options.rate / 4 : options.rate);
  };
  auto as_duration = [](double seconds) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };
  const auto t0 = Clock::now() + std::chrono::milliseconds(50);
  const auto end = t0 + options.duration;
  threads.reserve(static_cast<size_t>(conns));
  for (int c = 0; c < conns; ++c) {
    threads.emplace_back([&, c] {
      LoadResult& out = per[static_cast<size_t>(c)];
      if (options.fifo) {
        sched_param fifo{};
        fifo.sched_priority = 1;
        if (::sched_setscheduler(0, SCHED_FIFO, &fifo) != 0) {
          no_fifo = true;
          return;
        }
      }
      int fd = connect_loopback(port);
      if (fd < 0) {
        no_connect = true;
        return;
      }
      std::string buf;
      const uint64_t seed = options.seed * 1000003 + static_cast<uint64_t>(c);
      double offset_s = period_at(0) * c / conns;  // phases staggered
      for (uint64_t n = 0;; ++n, offset_s += period_at(offset_s)) {
        const auto at = t0 + as_duration(offset_s);
        if (at >= end || (options.stop != nullptr && options.stop->load())) break;
        ++out.scheduled;
        const auto now = Clock::now();
        if (now < at) {
          std::this_thread::sleep_until(at);
        } else if (now - at > as_duration(period_at(offset_s))) {
          ++out.late;
        }
        if (!send_all(fd, protocol.request(n, seed))) {
          ++out.failed;
          break;
        }
        ++out.sent;
        const size_t len = read_response(fd, protocol, buf);
        if (len == 0) {
          ++out.failed;
          break;
        }
        if (protocol.failed(std::string_view(buf).substr(0, len))) ++out.failed;
        buf.erase(0, len);
        out.latencies_ms.push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - at).count());
      }
      ::close(fd);
    });
  }
  for (auto& t : threads)
    t.join();
  if (no_fifo) {
    throw std::runtime_error(
        "SCHED_FIFO for the load generator refused (needs root or CAP_SYS_NICE; or --client "
        "normal)");
  }
  if (no_connect) throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
  LoadResult all;
  for (auto& r : per) {
    all.latencies_ms.insert(all.latencies_ms.end(), r.latencies_ms.begin(), r.latencies_ms.end());
    all.sent += r.sent;
    all.scheduled += r.scheduled;
    all.failed += r.failed;
    all.late += r.late;
  }
  return all;
}

void preload(const Protocol& protocol, uint16_t port) {
  const uint64_t keys = protocol.preload_keys();
  if (keys == 0) return;
  int fd = connect_loopback(port);
  if (fd < 0) throw std::runtime_error("preload: cannot connect to port " + std::to_string(port));
  constexpr uint64_t kBatch = 1000;
  std::string buf;
  for (uint64_t from = 0; from < keys; from += kBatch) {
    if (!send_all(fd, protocol.preload(from, kBatch))) {
      ::close(fd);
      throw std::runtime_error("preload: the connection broke");
    }
    for (uint64_t i = from; i < std::min(keys, from + kBatch); ++i) {
      const size_t len = read_response(fd, protocol, buf);
      if (len == 0 || protocol.failed(std::string_view(buf).substr(0, len))) {
        ::close(fd);
        throw std::runtime_error("preload: unexpected reply " + buf.substr(0, 80));
      }
      buf.erase(0, len);
    }
  }
  ::close(fd);
}

}  // namespace gleaner::bench::frontier
