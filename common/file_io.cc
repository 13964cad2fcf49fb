#include "common/file_io.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gleaner {
namespace {

constexpr size_t kChunk = 4096;
constexpr size_t kMaxFileSize =
    size_t{16} * 1024 * 1024;  // cgroup files are tiny; cap runaway reads

Result<std::string> read_fd(int fd, const std::string& path) {
  std::string out;
  std::array<char, kChunk> buf{};
  off_t offset = 0;
  while (true) {
    ssize_t n = ::pread(fd, buf.data(), buf.size(), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_error(errno, "read " + path);
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
    offset += n;
    if (out.size() > kMaxFileSize) return make_error(ErrorCode::kIo, "file too large: " + path);
  }
  return out;
}

Status write_with_flags(const std::string& path, std::string_view value, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return errno_error(errno, "open " + path);
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n < 0) return errno_error(err, "write " + path);
  if (static_cast<size_t>(n) != value.size()) {
    return make_error(ErrorCode::kIo, "short write to " + path);
  }
  return ok_status();
}

}  // namespace

Result<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error(errno, "open " + path);
  auto result = read_fd(fd, path);
  ::close(fd);
  return result;
}

Status write_file(const std::string& path, std::string_view value) {
  return write_with_flags(path, value, O_WRONLY | O_TRUNC);
}

Status append_file(const std::string& path, std::string_view value) {
  return write_with_flags(path, value, O_WRONLY | O_APPEND);
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<std::vector<std::string>> list_directories(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return errno_error(errno, "opendir " + path);
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe): own DIR*
    std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    bool dir_entry = entry->d_type == DT_DIR;
    if (entry->d_type == DT_UNKNOWN) dir_entry = is_directory(join_path(path, name));
    if (dir_entry) names.push_back(std::move(name));
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

std::string join_path(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  std::string out(a);
  while (out.size() > 1 && out.back() == '/')
    out.pop_back();
  while (!b.empty() && b.front() == '/')
    b.remove_prefix(1);
  if (out != "/") out.push_back('/');
  out.append(b);
  return out;
}

Result<OpenFile> OpenFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error(errno, "open " + path);
  OpenFile file;
  file.fd_ = fd;
  file.path_ = path;
  return file;
}

OpenFile::OpenFile(OpenFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

OpenFile& OpenFile::operator=(OpenFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

OpenFile::~OpenFile() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::string> OpenFile::read() const {
  if (fd_ < 0) return make_error(ErrorCode::kInternal, "read of a closed file");
  return read_fd(fd_, path_);
}

}  // namespace gleaner
