#pragma once
// ls_bench's LS service: a small HTTP/1.1 server (plain sockets, a thread per connection)
// doing a fixed amount of work per request, a pointer chase through a 1 MiB table, so a
// request takes longer when BE work evicts the table from the caches or shares the core.

#include <cstdint>
#include <vector>

namespace gleaner::bench::ls {

// A single cycle through every entry of the table in a fixed pseudo-random order.
std::vector<uint32_t> service_table();

// How many steps of the chase take `work_us` of CPU on this machine with nothing else
// running (the median of several timed batches).
int64_t calibrate_iterations(const std::vector<uint32_t>& table, int work_us);

// Accepts on `listener` forever; each request (up to its blank line) costs `iterations`
// steps and is answered "200 ok".
[[noreturn]] void serve(int listener, const std::vector<uint32_t>& table, int64_t iterations);

}  // namespace gleaner::bench::ls
