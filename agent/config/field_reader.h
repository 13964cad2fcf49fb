#pragma once
// Typed, range-checked reads of ack-slo-config fields. A reader belongs to one config
// key (file); it keeps the first error, which names the file and the field path, so a
// whole key can be rejected at once. Absent and null fields leave the target unchanged:
// that is what gives field-wise merging over defaults and over the cluster strategy.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/json_util.h"
#include "common/result.h"

namespace gleaner::agent::config {

// A ConfigMap key's value: JSON whose top level is an object, or an error naming `file`.
Result<Json> parse_json_object(std::string_view text, const std::string& file);

class FieldReader {
 public:
  explicit FieldReader(std::string file) : file_(std::move(file)) {}

  // The child object `key` of `obj`, or nullptr when absent/null (error if not an object).
  const Json* object(const Json& obj, const std::string& path, const char* key);
  const Json* array(const Json& obj, const std::string& path, const char* key);

  void read_bool(const Json& obj, const std::string& path, const char* key, bool& out);
  void read_int(const Json& obj, const std::string& path, const char* key, int64_t& out,
                int64_t min, int64_t max);
  void read_int(const Json& obj, const std::string& path, const char* key,
                std::optional<int64_t>& out, int64_t min, int64_t max);
  void read_percent(const Json& obj, const std::string& path, const char* key, int64_t& out) {
    read_int(obj, path, key, out, 0, 100);
  }
  void read_percent(const Json& obj, const std::string& path, const char* key,
                    std::optional<int64_t>& out) {
    read_int(obj, path, key, out, 0, 100);
  }
  void read_double(const Json& obj, const std::string& path, const char* key, double& out,
                   double min_exclusive, double max);
  // Accepts only one of `allowed`; returns the index read, or nullopt when absent.
  std::optional<size_t> read_enum(const Json& obj, const std::string& path, const char* key,
                                  std::initializer_list<std::string_view> allowed);
  void read_string(const Json& obj, const std::string& path, const char* key, std::string& out);

  // Records an error for `path` (already joined) unless one is recorded.
  void fail(const std::string& path, const std::string& why, ErrorCode code);
  // The same for an error of a reader elsewhere whose message begins with the field's path
  // ("<path>: <why>", as kube::LabelSelector::from_json's).
  void fail(const Error& at_field);

  [[nodiscard]] bool failed() const { return failed_; }
  [[nodiscard]] const Error& error() const { return error_; }
  [[nodiscard]] const std::string& file() const { return file_; }

  static std::string join(const std::string& path, std::string_view key);
  static std::string index(const std::string& path, size_t i);

 private:
  const Json* find(const Json& obj, const char* key) const;

  std::string file_;
  bool failed_ = false;
  Error error_;
};

}  // namespace gleaner::agent::config
