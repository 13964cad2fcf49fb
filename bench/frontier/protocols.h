#pragma once
// The wire side of the real LS services the frontier benchmark drives: each request the
// load generator sends, and where each response ends in the bytes read back, for
// memcached's ASCII protocol, Redis's RESP and HTTP/1.1 with keep-alive. Pure: no I/O.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gleaner::bench::frontier {

class Protocol {
 public:
  virtual ~Protocol() = default;
  // The `n`-th request of a connection (a mix of reads and writes where the service has
  // both); deterministic in `n` and `seed`.
  [[nodiscard]] virtual std::string request(uint64_t n, uint64_t seed) const = 0;
  // Bytes of the first complete response at the front of `buf`; 0 while incomplete;
  // nullopt when the bytes are not a response the service sends for these requests (an
  // error reply counts as complete but failed: see `failed`).
  [[nodiscard]] virtual std::optional<size_t> response_end(std::string_view buf) const = 0;
  // Whether the complete response at the front of `buf` reports an error.
  [[nodiscard]] virtual bool failed(std::string_view response) const = 0;
  // Requests that fill the key space before a run (memcached and Redis); empty otherwise.
  [[nodiscard]] virtual std::string preload(uint64_t /*from*/, uint64_t /*count*/) const {
    return {};
  }
  [[nodiscard]] virtual uint64_t preload_keys() const { return 0; }
};

// memcached ASCII: 90% `get`, 10% `set` of 256-byte values over `keys` keys (enough that the
// values exceed the L2 cache). Responses: `VALUE ... END`, `END` (miss), `STORED`.
std::unique_ptr<Protocol> memcached_protocol(uint64_t keys = 200000);
// Redis RESP: 90% GET, 10% SET of 256-byte values over `keys` keys.
std::unique_ptr<Protocol> redis_protocol(uint64_t keys = 200000);
// HTTP/1.1 GET with keep-alive: `cpu_every`-th request to `/cpu` (a CPU-bound location),
// the others to `/static`; responses framed by Content-Length.
std::unique_ptr<Protocol> http_protocol(uint64_t cpu_every = 10);

}  // namespace gleaner::bench::frontier
