// libFuzzer target: the watch-stream line splitter and event decoder must turn any bytes
// into events or clear errors, never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kube/watch_event.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // Feed in uneven pieces, as chunked transfer would.
  gleaner::kube::LineBuffer lines(4096);
  size_t pos = 0;
  size_t step = 1;
  while (pos < bytes.size()) {
    const auto piece = bytes.substr(pos, step);
    pos += piece.size();
    step = step * 3 % 97 + 1;
    if (!lines.append(piece).ok()) return 0;
    while (auto line = lines.next_line()) {
      auto event = gleaner::kube::decode_watch_event(*line);
      if (event.ok()) {
        (void)event->status_code();
        (void)gleaner::kube::to_string(event->type);
      } else if (event.error().message.empty()) {
        __builtin_trap();  // every error must say what was wrong
      }
    }
  }
  return 0;
}
