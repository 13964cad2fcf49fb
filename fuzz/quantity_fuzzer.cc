// libFuzzer target: Kubernetes quantity parsing must accept or reject any text with a
// message, and what it accepts must print and re-parse to the same value.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto q = gleaner::Quantity::parse(text);
  if (!q.ok()) {
    if (q.error().message.empty()) __builtin_trap();
    return 0;
  }
  (void)q->value();
  auto again = gleaner::Quantity::parse(q->to_string());
  if (!again.ok() || *again != *q) __builtin_trap();
  return 0;
}
