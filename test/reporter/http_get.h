#pragma once
// A blocking HTTP/1.0-style GET over loopback for tests ("Connection: close").

#include <cstdint>
#include <optional>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test/support/net.h"

namespace gleaner::reporter::testing {

struct HttpResult {
  int status = 0;
  std::string headers;
  std::string body;
};

inline std::optional<HttpResult> http_get(uint16_t port, const std::string& target) {
  const int fd = gleaner::testing::connect_loopback(port);
  if (fd < 0) return std::nullopt;
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) < 0) {
    ::close(fd);
    return std::nullopt;
  }
  std::string raw;
  char buf[65536];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0)
    raw.append(buf, static_cast<size_t>(n));
  ::close(fd);
  size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos || raw.size() < 12) return std::nullopt;
  HttpResult r;
  r.status = std::stoi(raw.substr(9, 3));
  r.headers = raw.substr(0, end);
  r.body = raw.substr(end + 4);
  return r;
}

}  // namespace gleaner::reporter::testing
