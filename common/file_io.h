#pragma once
// Small, typed file I/O for kernel pseudo-files (cgroupfs, procfs, resctrl).

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gleaner {

// Reads a whole (small) file. ENOENT/ENODEV map to ErrorCode::kNotFound.
Result<std::string> read_file(const std::string& path);
// Writes `value` with a single write(2), as the kernel expects for cgroup knobs.
Status write_file(const std::string& path, std::string_view value);
// Appends (O_APPEND) one value, e.g. a task id to a resctrl `tasks` file.
Status append_file(const std::string& path, std::string_view value);
bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
// Names of the sub-directories of `path`, sorted.
Result<std::vector<std::string>> list_directories(const std::string& path);
// Joins path pieces with exactly one '/' between them.
std::string join_path(std::string_view a, std::string_view b);

// A file kept open and re-read with pread(2) from offset 0: the cheap way to sample
// cgroup statistics every tick without open/close churn.
class OpenFile {
 public:
  OpenFile() = default;
  static Result<OpenFile> open(const std::string& path);
  OpenFile(OpenFile&& other) noexcept;
  OpenFile& operator=(OpenFile&& other) noexcept;
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile();

  // Reads the whole current content. A removed cgroup yields kNotFound (ENODEV).
  Result<std::string> read() const;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] bool is_open() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace gleaner
