#include "kube/watch_event.h"

namespace gleaner::kube {

const char* to_string(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "?";
}

int WatchEvent::status_code() const {
  if (type != WatchEventType::kError) return 0;
  auto it = object.find("code");
  return it != object.end() && it->is_number_integer() ? it->get<int>() : 0;
}

Result<WatchEvent> decode_watch_event(std::string_view line) {
  auto json = parse_json(line, "watch event");
  if (!json) return json.error();
  auto fail = [](const std::string& why) {
    return make_error(ErrorCode::kParse, "watch event: " + why);
  };
  if (!json->is_object()) return fail("expected an object, got " + std::string(json->type_name()));
  auto type = json->find("type");
  if (type == json->end() || !type->is_string()) return fail("missing string field \"type\"");
  WatchEvent ev;
  const auto& t = type->get_ref<const std::string&>();
  if (t == "ADDED") {
    ev.type = WatchEventType::kAdded;
  } else if (t == "MODIFIED") {
    ev.type = WatchEventType::kModified;
  } else if (t == "DELETED") {
    ev.type = WatchEventType::kDeleted;
  } else if (t == "BOOKMARK") {
    ev.type = WatchEventType::kBookmark;
  } else if (t == "ERROR") {
    ev.type = WatchEventType::kError;
  } else {
    return fail("unknown event type \"" + t + "\"");
  }
  auto object = json->find("object");
  if (object == json->end() || !object->is_object()) return fail(t + " event without an object");
  ev.object = std::move(*object);
  if (ev.type == WatchEventType::kError) return ev;
  const Json* rv = find_path(ev.object, "metadata/resourceVersion");
  if (rv == nullptr || !rv->is_string() || rv->get_ref<const std::string&>().empty()) {
    return fail(t + " event object has no metadata.resourceVersion");
  }
  ev.resource_version = rv->get<std::string>();
  if (ev.type != WatchEventType::kBookmark) {
    const Json* name = find_path(ev.object, "metadata/name");
    if (name == nullptr || !name->is_string())
      return fail(t + " event object has no metadata.name");
  }
  return ev;
}

Status LineBuffer::append(std::string_view bytes) {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  buf_.append(bytes);
  // Only the unfinished tail can grow without bound; complete lines are handed out next.
  const size_t newline = buf_.rfind('\n');
  const size_t start = newline == std::string::npos || newline < pos_ ? pos_ : newline + 1;
  if (buf_.size() - start > max_line_) {
    return make_error(ErrorCode::kIo, "watch event larger than " + std::to_string(max_line_) +
                                          " bytes; dropping the stream");
  }
  return ok_status();
}

std::optional<std::string> LineBuffer::next_line() {
  while (true) {
    const size_t newline = buf_.find('\n', pos_);
    if (newline == std::string::npos) {
      if (pos_ > 0) {  // compact, so the buffer holds one partial line at most
        buf_.erase(0, pos_);
        pos_ = 0;
      }
      return std::nullopt;
    }
    std::string line = buf_.substr(pos_, newline - pos_);
    pos_ = newline + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) return line;
  }
}

}  // namespace gleaner::kube
