#pragma once
// A bearer token, given as text or read from a file (a projected ServiceAccount token or
// a mounted secret). Such files are replaced in place (kubelet rotates projected tokens
// through a symlink), so the file is re-read whenever its inode, size or modification
// time changes, and after a server refused the token (invalidate()). Thread-safe.

#include <mutex>
#include <string>

#include "common/result.h"

namespace gleaner::net {

class TokenSource {
 public:
  // `file` empty: the token is `token` (empty: no authentication).
  TokenSource(std::string token, std::string file)
      : token_(std::move(token)), file_(std::move(file)) {}
  // The token with surrounding whitespace removed; "" when none is configured. An
  // unreadable or empty file is an error: the last good token is not reused, since
  // sending a revoked one only hides the problem.
  Result<std::string> get();
  // Read the file again at the next get().
  void invalidate();

 private:
  std::mutex mu_;
  std::string token_;
  std::string file_;
  std::string identity_;  // inode, size and mtime of the file last read ("" = read again)
};

}  // namespace gleaner::net
