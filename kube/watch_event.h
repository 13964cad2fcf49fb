#pragma once
// Decoding of watch streams: the body is newline-delimited JSON, one
// {"type": ..., "object": ...} event per line (whatever the HTTP chunking). Pure functions
// over strings, so the decoder is unit-tested and fuzzed without a server.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/json_util.h"
#include "common/result.h"

namespace gleaner::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
const char* to_string(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  Json object;                   // the object, or a v1 Status for kError
  std::string resource_version;  // object.metadata.resourceVersion ("" for kError)

  // For kError: the Status code (410 means "resourceVersion too old: relist").
  [[nodiscard]] int status_code() const;
};

// One line of a watch stream. Malformed JSON, an unknown type, an event without an object,
// and an object without metadata.resourceVersion (and, but for a BOOKMARK, metadata.name)
// are kParse errors naming what was wrong; an ERROR event's Status needs no metadata.
Result<WatchEvent> decode_watch_event(std::string_view line);

// Splits the byte stream into lines. A line longer than `max_line` is an error (one event
// larger than the response cap), never an unbounded buffer.
class LineBuffer {
 public:
  explicit LineBuffer(std::size_t max_line) : max_line_(max_line) {}
  Status append(std::string_view bytes);
  // The next complete line without its newline; blank lines are skipped.
  std::optional<std::string> next_line();
  // Bytes of an unfinished line (non-zero when a stream ends mid-event).
  [[nodiscard]] std::size_t pending() const { return buf_.size() - pos_; }

 private:
  std::size_t max_line_;
  std::string buf_;
  std::size_t pos_ = 0;
};

}  // namespace gleaner::kube
