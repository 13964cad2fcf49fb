#include "agent/qos/record_fields.h"

#include <cmath>

namespace gleaner::agent::qos {

Error record_field_error(const std::string& where, const std::string& field,
                         const std::string& what) {
  return make_error(ErrorCode::kParse, where + ": " + field + ": " + what);
}

Result<double> record_number(const Json& value, const std::string& where,
                             const std::string& field) {
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
    return record_field_error(where, field, "expected a non-negative number");
  }
  return value.get<double>();
}

Result<int64_t> record_milli(const Json& value, const std::string& where,
                             const std::string& field) {
  auto q = quantity_from_json(value, where + ": " + field);
  if (!q) return q.error();
  return q->milli_value();
}

Result<double> record_moment(const Json& value, const std::string& where, const std::string& field,
                             double now_s) {
  auto seconds = record_number(value, where, field);
  if (!seconds) return seconds.error();
  return now_s - *seconds;
}

}  // namespace gleaner::agent::qos
