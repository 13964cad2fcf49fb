#pragma once
// The kernel's hierarchy rules for limits, as the write executor must obey them. Some
// knobs refuse a child value beyond its ancestors' (the write fails with EINVAL or EBUSY
// and nothing changes), so narrowing a parent is only possible once every descendant
// fits under the new value, including descendants no strategy asked about (a container a
// batch limit gave a CFS quota, a pod's sandbox). The executor gathers the subtree, this
// pure step decides the value every cgroup in it must hold, and remembers what a clamped
// cgroup wanted so it gets that back when its ancestor widens again.
//
// Rules, per cgroup version (docs/qos.md has the table):
//   v1 cpu.cfs_quota_us: a limited child's quota/period may not exceed that of its nearest
//      limited ancestor (kernel/sched/core.c, tg_cfs_schedulable_down: -EINVAL). An
//      unlimited child inherits the ancestor's limit. v2 cpu.max takes the minimum instead.
//   v1 cpuset.cpus: a child's CPUs must be a subset of its parent's (kernel/cgroup/cpuset.c,
//      validate_change: -EBUSY), and a cgroup with tasks may not be left without CPUs.
//      v2 intersects with the parent's effective CPUs instead.

#include <cstdint>
#include <map>
#include <string>

#include "cgroup/resource.h"
#include "cgroup/version.h"

namespace gleaner::cgroup {

enum class HierarchyRule {
  kNone,               // the kernel takes any child value (or bounds it silently)
  kQuotaWithinParent,  // v1 CFS quota, normalised to each cgroup's period
  kCpusWithinParent,   // v1 cpuset.cpus
};

HierarchyRule hierarchy_rule(Resource resource, CgroupVersion version);

// One cgroup of a gathered subtree: its current logical value (quota "-1" or "29100",
// cpu list "0-3") and, for quotas, its CFS period.
struct LimitNode {
  std::string value;
  int64_t period_us = 0;
};

struct FittedValue {
  enum class Kind {
    kRequested,  // a strategy asked for exactly this value
    kClamped,    // a strategy's (or an earlier) wish cut to what an ancestor allows
    kReleased,   // an ancestor widened: a clamped cgroup gets (closer to) its wish back
  };
  std::string value;
  Kind kind = Kind::kRequested;
};

// `tree`: every cgroup of the subtrees concerned and all their ancestors (relative paths,
// "" for the root), with current values. `requests`: what strategies ask (cgroup -> value).
// `held`: what earlier clamps kept from cgroups, updated in place (a cgroup that fits its
// wish again leaves it; cgroups absent from `tree` are left alone).
// Returns the value every cgroup of `tree` must hold after the plan where it differs from
// its current value. Pure.
std::map<std::string, FittedValue> fit_to_ancestors(
    HierarchyRule rule, const std::map<std::string, LimitNode>& tree,
    const std::map<std::string, std::string>& requests, std::map<std::string, std::string>& held);

// The parent of a relative cgroup path ("" for a top-level cgroup and for the root).
std::string parent_cgroup(const std::string& cgroup);

}  // namespace gleaner::cgroup
