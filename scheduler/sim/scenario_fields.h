#pragma once
// The scenario parsers' shared field readers: every error names the field's path
// ("jobs[2].executor.instances: ..."), and every object lists the keys it knows so that a
// typo is an error rather than a silent default. Internal to scheduler/sim.

#include <initializer_list>
#include <optional>
#include <string>

#include "common/json_fwd.h"
#include "common/result.h"
#include "scheduler/core/node_selector.h"
#include "scheduler/core/resources.h"

namespace gleaner::scheduler::sim::fields {

Status only_known(const Json& obj, const std::string& path,
                  std::initializer_list<const char*> known);
Result<std::string> get_string(const Json& obj, const std::string& path, const char* key,
                               bool required);
// Seconds and counts: non-negative integers (1e9 is plenty and keeps sums in range).
Result<std::optional<int64_t>> get_count(const Json& obj, const std::string& path, const char* key);
// cpu, memory and nvidia.com/gpu, each optional, plus the `extra` keys the caller reads
// itself. `unnamed` is what an object has of what it does not name (a quota's max: no
// limit).
Result<Resources> get_resources(const Json& obj, const std::string& path,
                                std::initializer_list<const char*> extra = {}, int64_t unnamed = 0);
Result<Labels> get_labels(const Json& obj, const std::string& path, const char* key);

}  // namespace gleaner::scheduler::sim::fields

#define GLEANER_TRY(var, expr)          \
  auto var##_r = (expr);                \
  if (!var##_r) return var##_r.error(); \
  auto var = std::move(var##_r).value() /* NOLINT(bugprone-macro-parentheses): a name */

#define GLEANER_CHECK(expr) \
  if (Status s_ = (expr); !s_) return s_.error()
