#include "common/json_util.h"

#include <cmath>
#include <limits>
#include <string>

namespace gleaner {

Result<Json> parse_json(std::string_view text, std::string_view where) {
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    // Re-parse with exceptions only on the error path to get nlohmann's byte position.
    try {
      Json discarded = Json::parse(text);
      (void)discarded;
    } catch (const Json::exception& e) {  // parse_error, and out_of_range for huge numbers
      return make_error(ErrorCode::kParse, std::string(where) + ": " + e.what());
    }
    return make_error(ErrorCode::kParse, std::string(where) + ": malformed JSON");
  }
  return value;
}

Result<Quantity> quantity_from_json(const Json& value, std::string_view where) {
  if (value.is_string()) {
    auto q = Quantity::parse(value.get_ref<const std::string&>());
    if (!q) return make_error(ErrorCode::kParse, std::string(where) + ": " + q.error().message);
    return q;
  }
  if (value.is_number_integer()) {
    // Whole units become milli-units: anything past int64 / 1000 (or an unsigned beyond
    // int64) would wrap.
    constexpr int64_t kMaxUnits = std::numeric_limits<int64_t>::max() / 1000;
    const bool fits = value.is_number_unsigned()
                          ? value.get<uint64_t>() <= kMaxUnits
                          : value.get<int64_t>() >= -kMaxUnits && value.get<int64_t>() <= kMaxUnits;
    if (!fits) return make_error(ErrorCode::kParse, std::string(where) + ": number out of range");
    return Quantity::from_value(value.get<int64_t>());
  }
  if (value.is_number_float()) {
    double d = value.get<double>();
    if (!std::isfinite(d) || std::fabs(d) > 9e15) {
      return make_error(ErrorCode::kParse, std::string(where) + ": number out of range");
    }
    return Quantity::from_milli(static_cast<int64_t>(std::ceil(d * 1000.0)));
  }
  return make_error(
      ErrorCode::kParse,
      std::string(where) + ": expected a quantity (string or number), got " + value.type_name());
}

const Json* find_path(const Json& root, std::string_view dotted_path) {
  const Json* node = &root;
  while (!dotted_path.empty()) {
    size_t slash = dotted_path.find('/');
    std::string key(dotted_path.substr(0, slash));
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
    dotted_path =
        slash == std::string_view::npos ? std::string_view{} : dotted_path.substr(slash + 1);
  }
  return node;
}

std::string dump_json(const Json& value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

std::string string_at(const Json& root, std::string_view path, std::string fallback) {
  const Json* v = find_path(root, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::move(fallback);
}

const Json& object_or_empty(const std::shared_ptr<const Json>& kept) {
  static const Json empty = Json::object();
  return kept && kept->is_object() ? *kept : empty;
}

}  // namespace gleaner
