#pragma once
// Typed expected errors. Environment failures (a cgroup that vanished, a file this
// kernel does not offer, an unreachable kubelet) are values, not exceptions: callers
// decide whether an error is routine or worth a log line.

#include <string>
#include <utility>
#include <variant>

namespace gleaner {

enum class ErrorCode {
  kNotFound,         // file, cgroup, pod or object is gone (often routine: a pod was deleted)
  kUnsupported,      // this kernel / platform does not offer the feature
  kInvalidArgument,  // a value outside its allowed range
  kParse,            // malformed input: JSON, quantity, kernel file format
  kIo,               // any other I/O failure
  kPermission,       // EACCES / EPERM
  kTimeout,
  kUnavailable,  // remote peer down or refusing; retry later
  kConflict,     // optimistic-concurrency conflict (HTTP 409)
  kRetryLater,   // the peer asked us to retry (HTTP 429)
  kInternal,
};

const char* to_string(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;

  // The message with its code: "not-found: /sys/fs/cgroup/cpu/x: No such file".
  [[nodiscard]] std::string describe() const;
};

Error make_error(ErrorCode code, std::string message);
// Input refused at a field: kInvalidArgument, "<where>: <what>" (where: a path such as
// "spec.placement.clusterAffinity" or "nodes[2].batch.cpu").
Error invalid_field(const std::string& where, const std::string& what);
// Maps an errno value to a code and appends strerror to the message.
Error errno_error(int err, const std::string& what);

// Result<T>: either a T or an Error. Deliberately tiny: C++20 has no std::expected.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  [[nodiscard]] const Error& error() const { return std::get<1>(v_); }
  T value_or(T fallback) const { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Error> v_;
};

struct Unit {};
using Status = Result<Unit>;
inline Status ok_status() {
  return Unit{};
}

}  // namespace gleaner
