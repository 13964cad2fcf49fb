#pragma once
// The bearer token, read from a file (a projected service-account token or a mounted
// secret). Such files are replaced in place by the kubelet, so the token is re-read
// whenever the file's identity, size or modification time changes.

#include <ctime>
#include <string>

#include "common/result.h"

namespace gleaner::reporter {

class TokenSource {
 public:
  // An empty path means "no authentication": current() yields "".
  explicit TokenSource(std::string path) : path_(std::move(path)) {}

  // The token with surrounding whitespace removed. An unreadable or empty file is an
  // error; the last good token is not reused, since sending a revoked one only hides it.
  Result<std::string> current();

 private:
  std::string path_;
  std::string token_;
  bool loaded_ = false;
  unsigned long long inode_ = 0;
  long long size_ = -1;
  timespec mtime_{};
};

}  // namespace gleaner::reporter
