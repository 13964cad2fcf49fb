#include "net/token_source.h"

#include <cerrno>

#include <sys/stat.h>

#include "common/file_io.h"
#include "common/strings.h"

namespace gleaner::net {

Result<std::string> TokenSource::get() {
  std::lock_guard lock(mu_);
  if (file_.empty()) return token_;
  struct stat st {};
  if (::stat(file_.c_str(), &st) != 0) {
    identity_.clear();
    return errno_error(errno, "token file " + file_);
  }
  const std::string identity = std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
                               std::to_string(st.st_mtim.tv_sec) + "." +
                               std::to_string(st.st_mtim.tv_nsec);
  if (identity == identity_) return token_;
  identity_.clear();
  auto text = read_file(file_);
  if (!text) return text.error();
  std::string token(trim(*text));
  if (token.empty())
    return make_error(ErrorCode::kInvalidArgument, "token file " + file_ + " is empty");
  token_ = std::move(token);
  identity_ = identity;
  return token_;
}

void TokenSource::invalidate() {
  std::lock_guard lock(mu_);
  identity_.clear();
}

}  // namespace gleaner::net
