#pragma once
// Time as an injected dependency: decisions take a clock, tests drive a fake one.

#include <chrono>

namespace gleaner {

using SteadyTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  [[nodiscard]] virtual SteadyTime now() const = 0;
  [[nodiscard]] virtual WallTime wall_now() const = 0;
};

class SystemClock final : public Clock {
 public:
  [[nodiscard]] SteadyTime now() const override { return std::chrono::steady_clock::now(); }
  [[nodiscard]] WallTime wall_now() const override { return std::chrono::system_clock::now(); }
};

// Moves only when told to.
class FakeClock final : public Clock {
 public:
  [[nodiscard]] SteadyTime now() const override { return steady_; }
  [[nodiscard]] WallTime wall_now() const override { return wall_; }
  void advance(std::chrono::nanoseconds by) {
    steady_ += by;
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(by);
  }

 private:
  SteadyTime steady_{std::chrono::hours(1)};
  WallTime wall_{std::chrono::hours(24 * 365 * 50)};
};

}  // namespace gleaner
