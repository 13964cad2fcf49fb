#include "resctrl/availability.h"

#include <cerrno>
#include <sstream>

#include <sys/mount.h>

namespace gleaner::resctrl {
namespace {

// Whether any "flags" line of /proc/cpuinfo names an RDT allocation feature.
bool cpu_has_rdt_allocation(std::string_view cpuinfo) {
  std::istringstream lines{std::string(cpuinfo)};
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(
        line.substr(line.find(':') == std::string::npos ? line.size() : line.find(':') + 1));
    for (std::string w; words >> w;) {
      if (w == "rdt_a" || w == "cat_l3" || w == "mba") return true;
    }
  }
  return false;
}

}  // namespace

Availability classify(bool root_exists, bool mounted, std::string_view cpuinfo) {
  if (mounted) return Availability::kMounted;
  if (!root_exists) return Availability::kNoKernelSupport;
  return cpu_has_rdt_allocation(cpuinfo) ? Availability::kNotMounted : Availability::kNoCpuSupport;
}

const char* describe(Availability availability) {
  switch (availability) {
    case Availability::kMounted:
      return "mounted";
    case Availability::kNotMounted:
      return "not mounted (the CPU has RDT allocation)";
    case Availability::kNoCpuSupport:
      return "no RDT allocation on this CPU";
    case Availability::kNoKernelSupport:
      return "not in this kernel (no resctrl mount point)";
  }
  return "unknown";
}

Status mount_resctrl(const std::string& root) {
  if (::mount("resctrl", root.c_str(), "resctrl", 0, nullptr) != 0) {
    return errno_error(errno, "mount -t resctrl resctrl " + root);
  }
  return ok_status();
}

}  // namespace gleaner::resctrl
