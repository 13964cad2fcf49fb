#include "test/support/temp_tree.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

namespace gleaner::testing {
namespace fs = std::filesystem;

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe)
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/gleaner-test-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::operator/(const std::string& relative) const {
  return (fs::path(path_) / relative).string();
}

void TempDir::write(const std::string& relative, const std::string& content) const {
  fs::path p = fs::path(path_) / relative;
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

void TempDir::mkdir(const std::string& relative) const {
  fs::create_directories(fs::path(path_) / relative);
}

std::string TempDir::read(const std::string& relative) const {
  std::ifstream in(fs::path(path_) / relative, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string fixture_path(const std::string& relative) {
  return std::string(GLEANER_SOURCE_DIR) + "/test/fixtures/" + relative;
}

std::string read_fixture(const std::string& relative) {
  std::ifstream in(fixture_path(relative), std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace gleaner::testing
