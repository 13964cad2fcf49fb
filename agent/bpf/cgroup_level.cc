#include "agent/bpf/cgroup_level.h"

#include <cerrno>

#include <sys/stat.h>

namespace gleaner::agent::bpf {

Result<uint32_t> cgroup_level(const std::string& dir) {
  struct stat here {};
  if (::stat(dir.c_str(), &here) != 0) return errno_error(errno, "cgroup level of " + dir);
  // "dir/.." is resolved by the kernel from where "dir" really is, links followed.
  std::string path = dir;
  for (uint32_t level = 0; level <= kMaxCgroupLevel; ++level) {
    path += "/..";
    struct stat up {};
    if (::stat(path.c_str(), &up) != 0) return errno_error(errno, "cgroup level of " + dir);
    if (up.st_dev != here.st_dev || up.st_ino == here.st_ino) return level;
    here = up;
  }
  return make_error(ErrorCode::kInvalidArgument, "cgroup level of " + dir + ": more than " +
                                                     std::to_string(kMaxCgroupLevel) +
                                                     " levels below its mount's root");
}

}  // namespace gleaner::agent::bpf
