#pragma once
// What the scheduler accounts per pod and per node: kubernetes.io/batch-cpu in millicores,
// kubernetes.io/batch-memory in bytes, and nvidia.com/gpu (whole devices; a training job's
// roles ask for them, and a node offers the GPUs of its allocatable). Plain integers keep
// the arithmetic exact.

#include <cstdint>
#include <string>

namespace gleaner::scheduler {

inline constexpr const char* kResourceGpu = "nvidia.com/gpu";

// A quota's ceiling on GPUs when it names none: a queue limits only what it names, as a
// ResourceQuota or ElasticQuotaTree does (large enough that sums of it never overflow).
inline constexpr int64_t kGpusUnlimited = INT64_MAX / 4;
// An amount this large stands for no limit (a max that names no cpu, memory or GPUs):
// shown as "unlimited", never as its internal number.
inline constexpr bool is_unlimited(int64_t amount) {
  return amount >= kGpusUnlimited;
}

struct Resources {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int64_t gpus = 0;

  Resources& operator+=(const Resources& o) {
    cpu_milli += o.cpu_milli;
    memory_bytes += o.memory_bytes;
    gpus += o.gpus;
    return *this;
  }
  Resources& operator-=(const Resources& o) {
    cpu_milli -= o.cpu_milli;
    memory_bytes -= o.memory_bytes;
    gpus -= o.gpus;
    return *this;
  }
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  friend Resources operator*(Resources a, int64_t n) {
    a.cpu_milli *= n;
    a.memory_bytes *= n;
    a.gpus *= n;
    return a;
  }
  friend bool operator==(const Resources&, const Resources&) = default;

  // Component-wise <=: this request fits into `room`.
  [[nodiscard]] bool fits_in(const Resources& room) const {
    return cpu_milli <= room.cpu_milli && memory_bytes <= room.memory_bytes && gpus <= room.gpus;
  }
  // How many copies of this (non-zero) request fit into `room`.
  [[nodiscard]] int64_t copies_in(const Resources& room) const {
    int64_t n = INT64_MAX;
    auto bound = [&n](int64_t want, int64_t have) {
      if (want <= 0) return;
      const int64_t k = have < 0 ? 0 : have / want;
      n = k < n ? k : n;
    };
    bound(cpu_milli, room.cpu_milli);
    bound(memory_bytes, room.memory_bytes);
    bound(gpus, room.gpus);
    return n;
  }
  // Any component below zero.
  [[nodiscard]] bool any_negative() const { return cpu_milli < 0 || memory_bytes < 0 || gpus < 0; }
  [[nodiscard]] std::string to_string() const {
    auto amount = [](int64_t v, const char* unit) {
      return is_unlimited(v) ? std::string("unlimited") : std::to_string(v) + unit;
    };
    std::string s = "cpu=" + amount(cpu_milli, "m") + " memory=" + amount(memory_bytes, "");
    if (gpus != 0) s += std::string(" ") + kResourceGpu + "=" + amount(gpus, "");
    return s;
  }
};

}  // namespace gleaner::scheduler
