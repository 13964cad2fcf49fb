#pragma once
// The record form of the strategies' memory (the `agent` object of a snapshot file): the
// field checks every strategy's load and the step record share, each error naming the
// file and the field.

#include <cstdint>
#include <string>

#include "common/json_util.h"
#include "common/result.h"

namespace gleaner::agent::qos {

Error record_field_error(const std::string& where, const std::string& field,
                         const std::string& what);
// A non-negative finite number at `field`.
Result<double> record_number(const Json& value, const std::string& where, const std::string& field);
// A Kubernetes quantity at `field`, in milli-units.
Result<int64_t> record_milli(const Json& value, const std::string& where, const std::string& field);
// "secondsAgo" at `field` as the monotonic moment `now_s` minus it.
Result<double> record_moment(const Json& value, const std::string& where, const std::string& field,
                             double now_s);

}  // namespace gleaner::agent::qos
