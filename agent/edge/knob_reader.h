#pragma once
// The edge where the agent reads the kernel: the QoS strategies' reader over the real (or a
// fake) cgroup and resctrl trees, which reads what a pass declares into a KnobSnapshot.
// Reads only. Nothing under agent/qos or agent/step may include this module's headers or the
// cgroup and resctrl I/O headers (test/layering enforces it).

#include "agent/qos/qos_types.h"
#include "cgroup/cgroup_fs.h"
#include "resctrl/resctrl_fs.h"

namespace gleaner::agent::edge {

using qos::KnobReads;
using qos::KnobSnapshot;
using qos::QosReader;

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

}  // namespace gleaner::agent::edge
