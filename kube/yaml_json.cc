#include "kube/yaml_json.h"

#include <memory>
#include <optional>
#include <vector>

#include <yaml.h>

#include "common/json_util.h"

namespace gleaner::kube {
namespace {

Json plain_scalar(const std::string& text, bool plain) {
  if (!plain) return text;
  if (text.empty() || text == "~" || text == "null") return nullptr;
  if (text == "true") return true;
  if (text == "false") return false;
  if (text.find_first_not_of("-0123456789.eE+") == std::string::npos) {
    Json number = Json::parse(text, nullptr, false);
    if (!number.is_discarded() && number.is_number()) return number;
  }
  return text;
}

}  // namespace

Result<std::vector<Json>> yaml_documents_to_json(std::string_view text, std::string_view where) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    return make_error(ErrorCode::kInternal, "libyaml: cannot initialise a parser");
  }
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> guard(&parser, yaml_parser_delete);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
  // A stack of open containers; a mapping holds its pending key in `key`.
  struct Frame {
    Json value;
    std::string key;
    bool have_key = false;
  };
  std::vector<Frame> stack;
  std::vector<Json> documents;
  Json root;
  bool done = false;
  auto fail = [&](const std::string& why, size_t line) {
    return make_error(ErrorCode::kParse,
                      std::string(where) + ":" + std::to_string(line + 1) + ": " + why);
  };
  while (!done) {
    yaml_event_t event;
    if (!yaml_parser_parse(&parser, &event)) {
      return fail(parser.problem ? parser.problem : "malformed YAML", parser.problem_mark.line);
    }
    std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> event_guard(&event, yaml_event_delete);
    const size_t line = event.start_mark.line;
    std::optional<Json> finished;
    switch (event.type) {
      case YAML_STREAM_END_EVENT:
        done = true;
        break;
      case YAML_DOCUMENT_END_EVENT:
        documents.push_back(std::move(root));
        root = Json();
        break;
      case YAML_ALIAS_EVENT:
        return fail("YAML aliases are not supported", line);
      case YAML_MAPPING_START_EVENT:
        stack.push_back({Json::object()});
        break;
      case YAML_SEQUENCE_START_EVENT:
        stack.push_back({Json::array()});
        break;
      case YAML_MAPPING_END_EVENT:
      case YAML_SEQUENCE_END_EVENT:
        finished = std::move(stack.back().value);
        stack.pop_back();
        break;
      case YAML_SCALAR_EVENT: {
        std::string value(reinterpret_cast<const char*>(event.data.scalar.value),
                          event.data.scalar.length);
        const bool plain = event.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        if (!stack.empty() && stack.back().value.is_object() && !stack.back().have_key) {
          stack.back().key = std::move(value);
          stack.back().have_key = true;
        } else {
          finished = plain_scalar(value, plain);
        }
        break;
      }
      default:
        break;
    }
    if (!finished) continue;
    if (stack.empty()) {
      root = std::move(*finished);
    } else if (stack.back().value.is_array()) {
      stack.back().value.push_back(std::move(*finished));
    } else {
      stack.back().value[stack.back().key] = std::move(*finished);
      stack.back().have_key = false;
    }
  }
  return documents;
}

Result<Json> yaml_to_json(std::string_view text, std::string_view where) {
  auto documents = yaml_documents_to_json(text, where);
  if (!documents) return documents.error();
  return documents->empty() ? Json() : std::move(documents->front());
}

}  // namespace gleaner::kube
