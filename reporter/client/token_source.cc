#include "reporter/client/token_source.h"

#include <cerrno>

#include <sys/stat.h>

#include "common/file_io.h"

namespace gleaner::reporter {

Result<std::string> TokenSource::current() {
  if (path_.empty()) return std::string();
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    loaded_ = false;
    return errno_error(errno, "token file " + path_);
  }
  bool unchanged = loaded_ && st.st_ino == inode_ && st.st_size == size_ &&
                   st.st_mtim.tv_sec == mtime_.tv_sec && st.st_mtim.tv_nsec == mtime_.tv_nsec;
  if (unchanged) return token_;
  auto text = read_file(path_);
  if (!text) {
    loaded_ = false;
    return text.error();
  }
  std::string token = *text;
  const char* ws = " \t\r\n";
  size_t begin = token.find_first_not_of(ws);
  if (begin == std::string::npos) {
    loaded_ = false;
    return make_error(ErrorCode::kInvalidArgument, "token file " + path_ + " is empty");
  }
  token = token.substr(begin, token.find_last_not_of(ws) - begin + 1);
  token_ = std::move(token);
  loaded_ = true;
  inode_ = st.st_ino;
  size_ = st.st_size;
  mtime_ = st.st_mtim;
  return token_;
}

}  // namespace gleaner::reporter
