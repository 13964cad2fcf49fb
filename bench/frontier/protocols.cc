#include "bench/frontier/protocols.h"

#include <charconv>

namespace gleaner::bench::frontier {
namespace {

// A key chosen from the request number, spread over the key space.
uint64_t key_of(uint64_t n, uint64_t seed, uint64_t keys) {
  uint64_t x = (n + 1) * 0x9E3779B97F4A7C15ULL ^ seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  return x % keys;
}

std::string key_name(uint64_t k) {
  std::string name = "k";
  name += std::to_string(k);
  return name;
}

const std::string& value_256() {
  static const std::string v(256, 'v');
  return v;
}

// The number at the front of `s` (digits only); nullopt without one.
std::optional<uint64_t> leading_number(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return v;
}

// memcached and Redis: 90% reads and 10% writes of 256-byte values over `keys` keys; a
// preload writes every key once.
class KeyValue : public Protocol {
 public:
  explicit KeyValue(uint64_t keys) : keys_(keys) {}
  [[nodiscard]] std::string request(uint64_t n, uint64_t seed) const override {
    const std::string key = key_name(key_of(n, seed, keys_));
    return n % 10 == 9 ? set(key) : get(key);
  }
  [[nodiscard]] std::string preload(uint64_t from, uint64_t count) const override {
    std::string out;
    for (uint64_t k = from; k < from + count && k < keys_; ++k)
      out += set(key_name(k));
    return out;
  }
  [[nodiscard]] uint64_t preload_keys() const override { return keys_; }

 private:
  [[nodiscard]] virtual std::string get(const std::string& key) const = 0;
  [[nodiscard]] virtual std::string set(const std::string& key) const = 0;
  uint64_t keys_;
};

class Memcached final : public KeyValue {
 public:
  using KeyValue::KeyValue;
  [[nodiscard]] std::optional<size_t> response_end(std::string_view buf) const override {
    const size_t line = buf.find("\r\n");
    if (line == std::string_view::npos) return 0;
    const std::string_view first = buf.substr(0, line);
    if (first == "END" || first == "STORED" || first == "NOT_STORED" || first == "ERROR" ||
        first.starts_with("SERVER_ERROR") || first.starts_with("CLIENT_ERROR")) {
      return line + 2;
    }
    if (!first.starts_with("VALUE ")) return std::nullopt;
    // VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n
    const size_t last_space = first.rfind(' ');
    auto bytes = leading_number(first.substr(last_space + 1));
    if (!bytes) return std::nullopt;
    const size_t end = line + 2 + *bytes + 2 + 5;
    if (buf.size() < end) return 0;
    if (buf.substr(end - 5, 5) != "END\r\n") return std::nullopt;
    return end;
  }
  [[nodiscard]] bool failed(std::string_view response) const override {
    return response.starts_with("ERROR") || response.starts_with("SERVER_ERROR") ||
           response.starts_with("CLIENT_ERROR") || response.starts_with("NOT_STORED");
  }

 private:
  [[nodiscard]] std::string get(const std::string& key) const override {
    return "get " + key + "\r\n";
  }
  [[nodiscard]] std::string set(const std::string& key) const override {
    return "set " + key + " 0 0 256\r\n" + value_256() + "\r\n";
  }
};

class Redis final : public KeyValue {
 public:
  using KeyValue::KeyValue;
  [[nodiscard]] std::optional<size_t> response_end(std::string_view buf) const override {
    const size_t line = buf.find("\r\n");
    if (line == std::string_view::npos) return 0;
    if (buf.empty()) return 0;
    switch (buf[0]) {
      case '+':
      case '-':
      case ':':
        return line + 2;
      case '$': {
        if (buf.substr(1, line - 1) == "-1") return line + 2;  // nil
        auto bytes = leading_number(buf.substr(1, line - 1));
        if (!bytes) return std::nullopt;
        const size_t end = line + 2 + *bytes + 2;
        return buf.size() < end ? 0 : end;
      }
      default:
        return std::nullopt;
    }
  }
  [[nodiscard]] bool failed(std::string_view response) const override {
    return response.starts_with("-");
  }

 private:
  [[nodiscard]] std::string get(const std::string& key) const override {
    return std::string("*2\r\n$3\r\nGET\r\n$") + std::to_string(key.size()) + "\r\n" + key + "\r\n";
  }
  [[nodiscard]] std::string set(const std::string& key) const override {
    return std::string("*3\r\n$3\r\nSET\r\n$") + std::to_string(key.size()) + "\r\n" + key +
           "\r\n$256\r\n" + value_256() + "\r\n";
  }
};

class Http final : public Protocol {
 public:
  explicit Http(uint64_t cpu_every) : cpu_every_(cpu_every) {}
  [[nodiscard]] std::string request(uint64_t n, uint64_t /*seed*/) const override {
    const bool cpu = cpu_every_ > 0 && n % cpu_every_ == cpu_every_ - 1;
    return std::string("GET ") + (cpu ? "/cpu" : "/static") +
           " HTTP/1.1\r\nHost: ls\r\nAccept-Encoding: gzip\r\n\r\n";
  }
  [[nodiscard]] std::optional<size_t> response_end(std::string_view buf) const override {
    const size_t head = buf.find("\r\n\r\n");
    if (head == std::string_view::npos) {
      return buf.size() > 65536 ? std::nullopt : std::optional<size_t>(0);
    }
    if (!buf.starts_with("HTTP/1.")) return std::nullopt;
    const std::string_view headers = buf.substr(0, head);
    // A length (static files), or chunks (responses compressed on the fly, /cpu).
    size_t at = headers.find("\r\nContent-Length: ");
    if (at != std::string_view::npos) {
      auto length = leading_number(headers.substr(at + 18));
      if (!length) return std::nullopt;
      const size_t end = head + 4 + *length;
      return buf.size() < end ? 0 : end;
    }
    if (headers.find("\r\nTransfer-Encoding: chunked") == std::string_view::npos) {
      return std::nullopt;
    }
    // Chunked: size lines until the zero chunk.
    size_t pos = head + 4;
    for (;;) {
      const size_t line = buf.find("\r\n", pos);
      if (line == std::string_view::npos) return 0;
      uint64_t size = 0;
      auto [end, ec] = std::from_chars(buf.data() + pos, buf.data() + line, size, 16);
      if (ec != std::errc()) return std::nullopt;
      if (size == 0) {
        const size_t done = line + 4;  // the last chunk's CRLF, then the empty trailer line
        return buf.size() < done ? 0 : done;
      }
      pos = line + 2 + size + 2;
      if (buf.size() < pos) return 0;
    }
  }
  [[nodiscard]] bool failed(std::string_view response) const override {
    return !response.starts_with("HTTP/1.1 200");
  }

 private:
  uint64_t cpu_every_;
};

}  // namespace

std::unique_ptr<Protocol> memcached_protocol(uint64_t keys) {
  return std::make_unique<Memcached>(keys);
}
std::unique_ptr<Protocol> redis_protocol(uint64_t keys) {
  return std::make_unique<Redis>(keys);
}
std::unique_ptr<Protocol> http_protocol(uint64_t cpu_every) {
  return std::make_unique<Http>(cpu_every);
}

}  // namespace gleaner::bench::frontier
