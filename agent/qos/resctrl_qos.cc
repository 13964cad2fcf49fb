#include "agent/qos/resctrl_qos.h"

#include <set>

#include <fmt/format.h>

#include "agent/qos/pod_dirs.h"
#include "agent/qos/strategy.h"
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

void declare_resctrl_reads(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                           const config::ResourceQoSStrategy& qos, KnobReads& reads) {
  const std::vector<GroupClass> classes = {
      {kGroupLSR, &qos.lsr.resctrl}, {kGroupLS, &qos.ls.resctrl}, {kGroupBE, &qos.be.resctrl}};
  for (const auto& c : classes) {
    if (c.cfg->enable) reads.resctrl_groups.insert(c.group);
  }
  if (reads.resctrl_groups.empty()) return;
  reads.resctrl = true;
  for (const auto& pod : snap.pods) {
    const char* group = group_of(pod.qos);
    if (group == nullptr || reads.resctrl_groups.count(group) == 0) continue;
    for (const auto& [name, dir] : container_cgroups(layout, pod))
      reads.add(dir, {cgroup::Resource::kThreads});
  }
}

Plan plan_resctrl(const snapshot::NodeSnapshot& snap, const cgroup::KubeletLayout& layout,
                  const config::ResourceQoSStrategy& qos, const KnobSnapshot& knobs) {
  Plan plan;
  const std::vector<GroupClass> classes = {
      {kGroupLSR, &qos.lsr.resctrl}, {kGroupLS, &qos.ls.resctrl}, {kGroupBE, &qos.be.resctrl}};
  bool any = false;
  for (const auto& c : classes)
    any = any || c.cfg->enable;
  if (!any) return plan;
  const auto& cap = knobs.resctrl_capability();
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
    auto current = knobs.resctrl_schemata(c.group);
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
      auto tasks = knobs.resctrl_tasks(group).value_or(std::vector<int>{});
      it = group_tasks.emplace(group, std::set<int>(tasks.begin(), tasks.end())).first;
    }
    for (const auto& [name, dir] : container_cgroups(layout, pod)) {
      auto tids = knobs.ids(cgroup::Resource::kThreads, dir);
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

std::unique_ptr<Strategy> make_resctrl_strategy() {
  return std::make_unique<PlanOnlyStrategy>(
      "resctrl",
      [](const Pass& pass) {
        return plan_resctrl(*pass.in.snapshot, pass.in.layout, pass.in.qos, pass.knobs);
      },
      [](const Pass& pass, KnobReads& reads) {
        declare_resctrl_reads(*pass.in.snapshot, pass.in.layout, pass.in.qos, reads);
      });
}

}  // namespace gleaner::agent::qos
