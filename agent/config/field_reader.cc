#include "agent/config/field_reader.h"

#include <cmath>
#include <string>

#include "common/json_field.h"
#include "common/json_util.h"

namespace gleaner::agent::config {

Result<Json> parse_json_object(std::string_view text, const std::string& file) {
  auto json = parse_json(text, file);
  if (!json) return json.error();
  if (!json->is_object()) {
    return make_error(ErrorCode::kParse,
                      file + ": expected a JSON object, got " + json->type_name());
  }
  return json;
}

std::string FieldReader::join(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return path + "." + std::string(key);
}

std::string FieldReader::index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

void FieldReader::fail(const std::string& path, const std::string& why, ErrorCode code) {
  fail(make_error(code, path + ": " + why));
}

void FieldReader::fail(const Error& at_field) {
  if (failed_) return;
  failed_ = true;
  error_ = make_error(at_field.code, file_ + ": field " + at_field.message);
}

const Json* FieldReader::find(const Json& obj, const char* key) const {
  // Koordinator's Go decoder matches field names ignoring case ("CPUEvictTimeWindowSeconds"
  // in its own docs): so does this, the exact spelling first.
  return find_field(obj, key, FieldNames::kAnyCase);
}

const Json* FieldReader::object(const Json& obj, const std::string& path, const char* key) {
  const Json* v = find(obj, key);
  if (v != nullptr && !v->is_object()) {
    fail(join(path, key), std::string("expected an object, got ") + v->type_name(),
         ErrorCode::kParse);
    return nullptr;
  }
  return v;
}

const Json* FieldReader::array(const Json& obj, const std::string& path, const char* key) {
  const Json* v = find(obj, key);
  if (v != nullptr && !v->is_array()) {
    fail(join(path, key), std::string("expected an array, got ") + v->type_name(),
         ErrorCode::kParse);
    return nullptr;
  }
  return v;
}

void FieldReader::read_bool(const Json& obj, const std::string& path, const char* key, bool& out) {
  const Json* v = find(obj, key);
  if (v == nullptr) return;
  if (!v->is_boolean()) {
    return fail(join(path, key), std::string("expected a boolean, got ") + v->type_name(),
                ErrorCode::kParse);
  }
  out = v->get<bool>();
}

void FieldReader::read_int(const Json& obj, const std::string& path, const char* key,
                           std::optional<int64_t>& out, int64_t min, int64_t max) {
  const Json* v = find(obj, key);
  if (v == nullptr) return;
  // Koordinator's fields are Go int64s: a fractional or string value fails to decode.
  if (!v->is_number_integer() ||
      (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
    return fail(join(path, key), std::string("expected an integer, got ") + v->type_name(),
                ErrorCode::kParse);
  }
  int64_t n = v->get<int64_t>();
  if (n < min || n > max) {
    return fail(join(path, key),
                std::to_string(n) + " is out of range [" + std::to_string(min) + ", " +
                    std::to_string(max) + "]",
                ErrorCode::kInvalidArgument);
  }
  out = n;
}

void FieldReader::read_int(const Json& obj, const std::string& path, const char* key, int64_t& out,
                           int64_t min, int64_t max) {
  std::optional<int64_t> value;
  read_int(obj, path, key, value, min, max);
  if (value) out = *value;
}

void FieldReader::read_double(const Json& obj, const std::string& path, const char* key,
                              double& out, double min_exclusive, double max) {
  const Json* v = find(obj, key);
  if (v == nullptr) return;
  if (!v->is_number()) {
    return fail(join(path, key), std::string("expected a number, got ") + v->type_name(),
                ErrorCode::kParse);
  }
  double d = v->get<double>();
  if (!std::isfinite(d) || d <= min_exclusive || d > max) {
    return fail(join(path, key),
                std::to_string(d) + " is out of range (" + std::to_string(min_exclusive) + ", " +
                    std::to_string(max) + "]",
                ErrorCode::kInvalidArgument);
  }
  out = d;
}

std::optional<size_t> FieldReader::read_enum(const Json& obj, const std::string& path,
                                             const char* key,
                                             std::initializer_list<std::string_view> allowed) {
  const Json* v = find(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    fail(join(path, key), std::string("expected a string, got ") + v->type_name(),
         ErrorCode::kParse);
    return std::nullopt;
  }
  const auto& s = v->get_ref<const std::string&>();
  size_t i = 0;
  std::string names;
  for (auto name : allowed) {
    if (s == name) return i;
    names += (i == 0 ? "" : ", ") + std::string(name);
    ++i;
  }
  fail(join(path, key), "unknown value \"" + s + "\" (expected one of " + names + ")",
       ErrorCode::kInvalidArgument);
  return std::nullopt;
}

void FieldReader::read_string(const Json& obj, const std::string& path, const char* key,
                              std::string& out) {
  const Json* v = find(obj, key);
  if (v == nullptr) return;
  if (!v->is_string()) {
    return fail(join(path, key), std::string("expected a string, got ") + v->type_name(),
                ErrorCode::kParse);
  }
  out = v->get<std::string>();
}

}  // namespace gleaner::agent::config
