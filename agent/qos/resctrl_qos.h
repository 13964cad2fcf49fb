#pragma once
// Resctrl QoS (resource-qos-config resctrlQOS per class): control groups LSR (LSE and LSR
// pods), LS and BE; per class an L3 way mask from catRangeStartPercent..EndPercent and an
// MBA value from mbaPercent, for every cache / MBA domain id the hardware reports (ids
// need not be contiguous); and every task of every container of a pod placed in its
// class's group. Nothing at all where resctrl is absent.

#include <string>
#include <vector>

#include "agent/qos/qos_types.h"
#include "resctrl/resctrl_fs.h"

namespace gleaner::agent::qos {

inline constexpr const char* kGroupLSR = "LSR";
inline constexpr const char* kGroupLS = "LS";
inline constexpr const char* kGroupBE = "BE";

Plan plan_resctrl(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                  const config::ResourceQoSStrategy& qos, QosReader& reader);

// A resctrl action as `plan` prints it: the file (or group directory) and the value.
struct ResctrlFileWrite {
  std::string path;
  std::string value;
  std::string reason;
};
ResctrlFileWrite describe(const resctrl::ResctrlFs& fs, const ResctrlAction& action);

struct ResctrlApplyReport {
  int written = 0;
  std::vector<Error> failed;
};

// Applies resctrl actions: creates missing groups, writes only schemata lines whose parsed
// values differ, appends task ids. A task that exited meanwhile is routine (ESRCH).
class ResctrlExecutor {
 public:
  explicit ResctrlExecutor(const resctrl::ResctrlFs& fs, bool dry_run = false)
      : fs_(fs), dry_run_(dry_run) {}
  ResctrlApplyReport apply(const std::vector<ResctrlAction>& actions) const;

 private:
  const resctrl::ResctrlFs& fs_;
  bool dry_run_;
};

}  // namespace gleaner::agent::qos
