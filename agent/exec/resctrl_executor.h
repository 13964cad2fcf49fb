#pragma once
// The resctrl back end of the knob executor (agent/exec/knob_executor.h): carries out the
// actions of the resctrl QoS strategy (agent/qos/resctrl_qos.h) on the resctrl mount and
// keeps what it changed so that it can be undone.

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/qos/qos_types.h"
#include "common/json_fwd.h"
#include "common/result.h"
#include "resctrl/resctrl_fs.h"

namespace gleaner::agent::exec {

using qos::ResctrlAction;

// A resctrl action as `plan` prints it: the file (or group directory) and the value.
struct ResctrlFileWrite {
  std::string path;
  std::string value;
  std::string reason;
};
ResctrlFileWrite describe(const resctrl::ResctrlFs& fs, const ResctrlAction& action);

struct ResctrlApplyReport {
  int written = 0;
  std::vector<ResctrlFileWrite> changes;  // the `written` ones, as `plan` prints them
  std::vector<Error> failed;
  int unrecorded = 0;  // not taken: the record of what they change could not be persisted
};

// What the agent changed in resctrl, so that it can be undone: the groups it created
// (removing one moves its tasks back to the root group), the schemata lines it found in
// groups that existed before, and the tasks it placed in such groups.
struct ResctrlOriginals {
  std::set<std::string> created_groups;
  std::map<std::string, resctrl::Schemata> schemata;  // group -> resource -> values found
  std::map<std::string, std::set<int>> tasks;         // pre-existing group -> tids placed
  [[nodiscard]] bool empty() const {
    return created_groups.empty() && schemata.empty() && tasks.empty();
  }
};
// The state-file form ("resctrl" in originals.json). Task ids are not kept: they do not
// outlive the processes a crashed agent saw.
Json resctrl_originals_json(const ResctrlOriginals& originals);
Result<ResctrlOriginals> parse_resctrl_originals(const Json& json, const std::string& where);

// Applies resctrl actions: creates missing groups, writes only schemata lines whose parsed
// values differ, appends task ids. A task that exited meanwhile is routine (ESRCH).
// Remembers what it changed (and hands it to `persist` before the change) so restore_all()
// puts resctrl back as it was.
class ResctrlExecutor {
 public:
  explicit ResctrlExecutor(const resctrl::ResctrlFs& fs, bool dry_run = false)
      : fs_(fs), dry_run_(dry_run) {}
  ResctrlApplyReport apply(const std::vector<ResctrlAction>& actions);
  // Removes the groups it created, writes back the schemata lines it changed in other
  // groups and moves the tasks it placed there to the root group.
  ResctrlApplyReport restore_all();

  // Puts the record on file before a change; false: not recorded, and the action it was
  // called for is not taken (tried again with the next apply).
  using Persist = std::function<bool(const ResctrlOriginals&)>;
  void set_persist(Persist persist) { persist_ = std::move(persist); }
  void adopt(const ResctrlOriginals& earlier);
  void release() { originals_ = {}; }
  [[nodiscard]] const ResctrlOriginals& originals() const { return originals_; }

 private:
  // Records what `action` is about to change; persists when the record grew. False: the
  // record could not be persisted (and is as it was before).
  bool remember(const ResctrlAction& action);

  const resctrl::ResctrlFs& fs_;
  bool dry_run_;
  ResctrlOriginals originals_;
  Persist persist_;
};

}  // namespace gleaner::agent::exec
