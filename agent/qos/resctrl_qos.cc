#include "agent/qos/resctrl_qos.h"

#include <set>

#include <fmt/format.h>

#include "agent/qos/pod_dirs.h"
#include "common/file_io.h"
#include "resctrl/schemata.h"

namespace gleaner::agent::qos {
namespace {

struct GroupClass {
  const char* group;
  const config::ResctrlQoS* cfg;
};

const char* group_of(states::QoSClass c) {
  switch (c) {
    case states::QoSClass::kLSE:
    case states::QoSClass::kLSR:
      return kGroupLSR;
    case states::QoSClass::kLS:
      return kGroupLS;
    case states::QoSClass::kBE:
      return kGroupBE;
    case states::QoSClass::kSystem:
      return nullptr;
  }
  return nullptr;
}

// The desired schemata of a class on this hardware; errors name the class's values.
Result<resctrl::Schemata> desired_schemata(const resctrl::Capability& cap,
                                           const config::ResctrlQoS& cfg) {
  resctrl::Schemata out;
  if (cap.l3) {
    auto mask =
        resctrl::cat_mask(cap.l3->cbm_mask, static_cast<int>(cfg.cat_range_start_percent),
                          static_cast<int>(cfg.cat_range_end_percent), cap.l3->min_cbm_bits);
    if (!mask) return mask.error();
    for (int id : cap.l3->cache_ids)
      out["L3"][id] = fmt::format("{:x}", *mask);
  }
  if (cap.mba) {
    auto mba = resctrl::mba_value(static_cast<int>(cfg.mba_percent), cap.mba->min_bandwidth,
                                  cap.mba->bandwidth_granularity);
    if (!mba) return mba.error();
    for (int id : cap.mba->domain_ids)
      out["MB"][id] = std::to_string(*mba);
  }
  return out;
}

}  // namespace

Plan plan_resctrl(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                  const config::ResourceQoSStrategy& qos, QosReader& reader) {
  Plan plan;
  const std::vector<GroupClass> classes = {
      {kGroupLSR, &qos.lsr.resctrl}, {kGroupLS, &qos.ls.resctrl}, {kGroupBE, &qos.be.resctrl}};
  bool any = false;
  for (const auto& c : classes)
    any = any || c.cfg->enable;
  if (!any) return plan;
  auto cap = reader.resctrl_capability();
  if (!cap || !cap->any()) {
    plan.notes.emplace_back("resctrl: not available on this node, resctrlQOS skipped");
    return plan;
  }
  std::set<std::string> enabled;
  for (const auto& c : classes) {
    if (!c.cfg->enable) continue;
    auto desired = desired_schemata(*cap, *c.cfg);
    if (!desired) {
      plan.notes.emplace_back(std::string("resctrl: class ") + c.group + ": " +
                              desired.error().message);
      continue;
    }
    enabled.insert(c.group);
    auto current = reader.resctrl_schemata(c.group);
    if (!current) plan.resctrl.push_back({ResctrlAction::Kind::kCreateGroup, c.group, "", {}, 0});
    for (const auto& [resource, values] : *desired) {
      bool differs = !current;
      if (current) {
        auto now = current->find(resource);
        for (const auto& [id, v] : values) {
          if (now == current->end() || now->second.count(id) == 0 ||
              !resctrl::same_value(resource, now->second.at(id), v)) {
            differs = true;
          }
        }
      }
      if (differs) {
        plan.resctrl.push_back({ResctrlAction::Kind::kSchemata, c.group, resource, values, 0});
      }
    }
  }
  std::map<std::string, std::set<int>> group_tasks;
  for (const auto& pod : snap.pods) {
    const char* group = group_of(pod.qos);
    if (group == nullptr || enabled.count(group) == 0) continue;
    auto it = group_tasks.find(group);
    if (it == group_tasks.end()) {
      auto tasks = reader.resctrl_tasks(group).value_or(std::vector<int>{});
      it = group_tasks.emplace(group, std::set<int>(tasks.begin(), tasks.end())).first;
    }
    for (const auto& [name, dir] : container_cgroups(layout, pod)) {
      auto tids = reader.ids(cgroup::Resource::kThreads, dir);
      if (!tids) continue;  // container gone or not started
      for (int tid : *tids) {
        if (it->second.insert(tid).second) {
          plan.resctrl.push_back({ResctrlAction::Kind::kAddTask, group, "", {}, tid});
        }
      }
    }
  }
  return plan;
}

ResctrlFileWrite describe(const resctrl::ResctrlFs& fs, const ResctrlAction& a) {
  switch (a.kind) {
    case ResctrlAction::Kind::kCreateGroup:
      return {fs.group_dir(a.group), "(mkdir)", a.reason};
    case ResctrlAction::Kind::kSchemata:
      return {join_path(fs.group_dir(a.group), "schemata"),
              resctrl::format_schemata_line(a.resource, a.values), a.reason};
    case ResctrlAction::Kind::kAddTask:
      return {join_path(fs.group_dir(a.group), "tasks"), std::to_string(a.tid), a.reason};
  }
  return {};
}

ResctrlApplyReport ResctrlExecutor::apply(const std::vector<ResctrlAction>& actions) const {
  ResctrlApplyReport report;
  for (const auto& a : actions) {
    if (dry_run_) continue;
    Status status = ok_status();
    switch (a.kind) {
      case ResctrlAction::Kind::kCreateGroup:
        status = fs_.create_group(a.group);
        break;
      case ResctrlAction::Kind::kSchemata: {
        auto written = fs_.apply_schemata(a.group, {{a.resource, a.values}});
        if (!written) status = written.error();
        break;
      }
      case ResctrlAction::Kind::kAddTask:
        status = fs_.add_task(a.group, a.tid);
        // The thread exited between the read and the write: nothing to place.
        if (!status && status.error().code == ErrorCode::kNotFound) continue;
        break;
    }
    if (status) {
      ++report.written;
    } else {
      report.failed.push_back(status.error());
    }
  }
  return report;
}

}  // namespace gleaner::agent::qos
