#pragma once
// The value a decision hands the executor: no I/O here, so the decisions include this and
// never the executor.

#include <string>

#include "cgroup/resource.h"

namespace gleaner::cgroup {

// What a strategy wants: a logical value for a resource of a cgroup.
struct CgroupWrite {
  Resource resource;
  std::string cgroup;  // relative, e.g. "kubepods/besteffort"
  std::string value;   // logical value, e.g. quota "170000", "-1", cpuset "0-3"
  std::string reason;  // e.g. "cpu-suppress"
};

}  // namespace gleaner::cgroup
