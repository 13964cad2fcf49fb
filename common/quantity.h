#pragma once
// Kubernetes resource quantities ("500m", "2", "8Gi", "1e3", "128974848"), parsed exactly
// as apimachinery's resource.Quantity does for the values we use: decimal and binary SI
// suffixes and decimal exponents, rounded up (away from zero) to whole milli-units.
// Range: |value| < 2^63 milli-units, i.e. about 9.2e15 units (8 PiB of memory).

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace gleaner {

// Bytes in the binary suffixes "Mi" and "Gi".
inline constexpr int64_t kMi = int64_t{1} << 20;
inline constexpr int64_t kGi = int64_t{1} << 30;

class Quantity {
 public:
  Quantity() = default;

  // Rejects anything that is not a Kubernetes quantity, naming the offending text.
  static Result<Quantity> parse(std::string_view text);
  static Quantity from_milli(int64_t milli) { return Quantity(milli); }
  static Quantity from_value(int64_t value) { return Quantity(value * 1000); }

  // Milli-units (millicores for CPU). Exact for anything finer than 1m only after rounding up.
  [[nodiscard]] int64_t milli_value() const { return milli_; }
  // Whole units (bytes for memory, cores for CPU), rounded up like Quantity.Value().
  [[nodiscard]] int64_t value() const;

  // Canonical text: "2", "1500m", "8589934592".
  [[nodiscard]] std::string to_string() const;

  friend bool operator==(const Quantity&, const Quantity&) = default;
  friend auto operator<=>(const Quantity&, const Quantity&) = default;

 private:
  explicit Quantity(int64_t milli) : milli_(milli) {}
  int64_t milli_ = 0;
};

}  // namespace gleaner
