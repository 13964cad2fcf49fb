#pragma once
// QosReader over the real (or a fake) cgroup and resctrl trees: reads what a pass declares
// into a KnobSnapshot. Reads only.

#include "agent/qos/qos_types.h"
#include "cgroup/cgroup_fs.h"
#include "resctrl/resctrl_fs.h"

namespace gleaner::agent::qos {

class FsQosReader : public QosReader {
 public:
  // `resctrl` may be null: no resctrl on this node (or not asked for).
  FsQosReader(cgroup::CgroupFs& fs, const resctrl::ResctrlFs* resctrl)
      : fs_(fs), resctrl_(resctrl) {}

  KnobSnapshot read(const KnobReads& reads) override;

 private:
  cgroup::CgroupFs& fs_;
  const resctrl::ResctrlFs* resctrl_;
};

}  // namespace gleaner::agent::qos
