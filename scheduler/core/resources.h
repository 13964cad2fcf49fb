#pragma once
// The two batch resources the scheduler accounts: kubernetes.io/batch-cpu in millicores
// and kubernetes.io/batch-memory in bytes. Plain integers keep the arithmetic exact.

#include <cstdint>
#include <string>

namespace gleaner::scheduler {

struct Resources {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;

  Resources& operator+=(const Resources& o) {
    cpu_milli += o.cpu_milli;
    memory_bytes += o.memory_bytes;
    return *this;
  }
  Resources& operator-=(const Resources& o) {
    cpu_milli -= o.cpu_milli;
    memory_bytes -= o.memory_bytes;
    return *this;
  }
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  friend Resources operator*(Resources a, int64_t n) {
    a.cpu_milli *= n;
    a.memory_bytes *= n;
    return a;
  }
  friend bool operator==(const Resources&, const Resources&) = default;

  // Component-wise <=: this request fits into `room`.
  [[nodiscard]] bool fits_in(const Resources& room) const {
    return cpu_milli <= room.cpu_milli && memory_bytes <= room.memory_bytes;
  }
  // How many copies of this (non-zero) request fit into `room`.
  [[nodiscard]] int64_t copies_in(const Resources& room) const {
    int64_t n = INT64_MAX;
    if (cpu_milli > 0) n = room.cpu_milli < 0 ? 0 : room.cpu_milli / cpu_milli;
    if (memory_bytes > 0) {
      int64_t m = room.memory_bytes < 0 ? 0 : room.memory_bytes / memory_bytes;
      n = m < n ? m : n;
    }
    return n;
  }
  [[nodiscard]] std::string to_string() const {
    return "cpu=" + std::to_string(cpu_milli) + "m memory=" + std::to_string(memory_bytes);
  }
};

}  // namespace gleaner::scheduler
