#include "common/result.h"

#include <cerrno>
#include <cstring>

namespace gleaner {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNotFound:
      return "not-found";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kInvalidArgument:
      return "invalid-argument";
    case ErrorCode::kParse:
      return "parse";
    case ErrorCode::kIo:
      return "io";
    case ErrorCode::kPermission:
      return "permission";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kRetryLater:
      return "retry-later";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Error::describe() const {
  return std::string(to_string(code)) + ": " + message;
}

Error make_error(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

Error invalid_field(const std::string& where, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, where + ": " + what);
}

Error errno_error(int err, const std::string& what) {
  ErrorCode code = ErrorCode::kIo;
  switch (err) {
    case ENOENT:
    case ENODEV:  // cgroup removed while a descriptor was open
    case ESRCH:   // task exited before it could be moved
      code = ErrorCode::kNotFound;
      break;
    case EACCES:
    case EPERM:
      code = ErrorCode::kPermission;
      break;
    case EINVAL:
    case ERANGE:
      code = ErrorCode::kInvalidArgument;
      break;
    case EOPNOTSUPP:
      code = ErrorCode::kUnsupported;
      break;
    default:
      break;
  }
  return Error{code, what + ": " + std::strerror(err)};  // NOLINT(concurrency-mt-unsafe)
}

}  // namespace gleaner
