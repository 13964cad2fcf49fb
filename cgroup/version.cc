#include "cgroup/version.h"

#include <linux/magic.h>
#include <sys/statfs.h>

#include "common/file_io.h"

namespace gleaner::cgroup {
namespace {

// f_type of `path`, or 0 when it cannot be read.
long fs_magic(const std::string& path) {  // NOLINT(google-runtime-int): statfs's own type
  struct statfs st {};
  if (::statfs(path.c_str(), &st) != 0) return 0;
  return static_cast<long>(st.f_type);  // NOLINT(google-runtime-int)
}

bool has_v1_controllers(const std::string& root) {
  for (const char* controller : {"cpu", "cpuacct", "cpu,cpuacct", "memory", "cpuset"}) {
    if (is_directory(join_path(root, controller))) return true;
  }
  return false;
}

}  // namespace

const char* to_string(CgroupVersion version) {
  switch (version) {
    case CgroupVersion::kV1:
      return "v1";
    case CgroupVersion::kV2:
      return "v2";
    case CgroupVersion::kHybrid:
      return "hybrid";
  }
  return "unknown";
}

Result<CgroupVersion> parse_version(std::string_view text) {
  if (text == "v1" || text == "1") return CgroupVersion::kV1;
  if (text == "v2" || text == "2") return CgroupVersion::kV2;
  if (text == "hybrid") return CgroupVersion::kHybrid;
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown cgroup version \"" + std::string(text) + "\" (v1, v2 or hybrid)");
}

Result<CgroupVersion> detect_version(const std::string& root, std::optional<CgroupVersion> forced) {
  if (forced) return *forced;
  if (!is_directory(root)) {
    return make_error(ErrorCode::kNotFound, "cgroup root " + root + " is not a directory");
  }
  const std::string unified = join_path(root, "unified");
  long magic = fs_magic(root);  // NOLINT(google-runtime-int)
  if (magic == CGROUP2_SUPER_MAGIC) return CgroupVersion::kV2;
  if (magic == TMPFS_MAGIC && has_v1_controllers(root)) {
    return fs_magic(unified) == CGROUP2_SUPER_MAGIC ? CgroupVersion::kHybrid : CgroupVersion::kV1;
  }
  // A plain directory: judge by layout.
  if (path_exists(join_path(root, "cgroup.controllers"))) return CgroupVersion::kV2;
  if (has_v1_controllers(root)) {
    return path_exists(join_path(unified, "cgroup.controllers")) ? CgroupVersion::kHybrid
                                                                 : CgroupVersion::kV1;
  }
  return make_error(ErrorCode::kUnsupported,
                    "cannot tell the cgroup version of " + root +
                        ": no cgroup.controllers and no controller directories (use "
                        "--cgroup-version)");
}

}  // namespace gleaner::cgroup
