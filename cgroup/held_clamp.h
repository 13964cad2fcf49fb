#pragma once
// The write executor's memory of the limits it clamped. The kernel refuses a child limit
// above its parent's (cgroup/hierarchy.h), so when a parent narrows (BE's CPU ceiling) the
// executor writes a child below what was asked and remembers the value asked for, to give
// it back once the parent widens again. It is the executor's only memory its writes depend
// on: a recorded pass carries it (agent/step/step_record.h) so that `gleaner-agent plan`
// replays the same writes as the executor that made the clamps.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cgroup/hierarchy.h"
#include "cgroup/resource.h"

namespace gleaner::cgroup {

// A cgroup whose limit was clamped under its parent's: the value asked for and the one it
// was clamped to (the value its file holds while the clamp stands).
struct HeldClamp {
  Resource resource = Resource::kCpuQuota;
  std::string cgroup;  // relative to the cgroup root
  std::string wish;
  std::string clamped_to;
  bool operator==(const HeldClamp&) const = default;
};

class HeldClamps {
 public:
  // The wishes of `resource` still standing, cgroup -> value asked for. A clamp whose
  // cgroup is gone, or holds anything but what it was clamped to (kubelet resized the
  // container), is dropped first: its wish must not be written back over theirs. `tree`:
  // the current values of the cgroups looked at; `exists` is asked about the others.
  std::map<std::string, std::string> standing(
      Resource resource, const std::map<std::string, LimitNode>& tree,
      const std::function<bool(const std::string&)>& exists);
  // Keeps the wishes fit_to_ancestors left in `held`, each with the value the plan leaves
  // its cgroup at (`fitted` where it changes, else its value in `tree`; a cgroup outside
  // `tree` keeps its clamp as it was).
  void keep(Resource resource, const std::map<std::string, std::string>& held,
            const std::map<std::string, FittedValue>& fitted,
            const std::map<std::string, LimitNode>& tree);

  [[nodiscard]] std::vector<HeldClamp> list() const;
  // Replaces every clamp by `clamps` (another executor's, as recorded).
  void adopt(const std::vector<HeldClamp>& clamps);
  void clear() { by_resource_.clear(); }

 private:
  struct Clamp {
    std::string wish;
    std::string clamped_to;
  };
  std::map<Resource, std::map<std::string, Clamp>> by_resource_;
};

}  // namespace gleaner::cgroup
