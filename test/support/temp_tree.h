#pragma once
// Temporary directory trees for unit tests: fake cgroup, proc and resctrl roots.

#include <initializer_list>
#include <string>
#include <utility>

namespace gleaner::testing {

// A fresh directory under $TMPDIR, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  // Absolute path of `relative` inside the tree.
  [[nodiscard]] std::string operator/(const std::string& relative) const;
  // Creates parent directories as needed and writes `content` to `relative`.
  void write(const std::string& relative, const std::string& content) const;
  void mkdir(const std::string& relative) const;
  [[nodiscard]] std::string read(const std::string& relative) const;

 private:
  std::string path_;
};

// Source-tree path of a fixture under test/fixtures.
std::string fixture_path(const std::string& relative);
std::string read_fixture(const std::string& relative);

}  // namespace gleaner::testing
