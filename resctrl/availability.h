#pragma once
// Whether resctrl can be used on this node, told apart for operators: mounted; not mounted
// though the CPU has RDT allocation (the agent mounts it, as koordlet does); no RDT on this
// CPU; or a kernel built without resctrl (no /sys/fs/resctrl at all).

#include <string>
#include <string_view>

#include "common/result.h"

namespace gleaner::resctrl {

enum class Availability { kMounted, kNotMounted, kNoCpuSupport, kNoKernelSupport };

// `root_exists`: the mount point exists (the kernel has resctrl); `mounted`: a resctrl
// filesystem is there; `cpuinfo`: /proc/cpuinfo (flags rdt_a, cat_l3, mba).
Availability classify(bool root_exists, bool mounted, std::string_view cpuinfo);
const char* describe(Availability availability);

// mount -t resctrl resctrl <root>.
Status mount_resctrl(const std::string& root);

}  // namespace gleaner::resctrl
