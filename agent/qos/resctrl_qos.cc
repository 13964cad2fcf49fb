#include "agent/qos/resctrl_qos.h"

#include <set>

#include <fmt/format.h>

#include "agent/qos/pod_dirs.h"
#include "agent/qos/strategy.h"
#include "common/file_io.h"
#include "common/json_util.h"
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

Json resctrl_originals_json(const ResctrlOriginals& originals) {
  Json schemata = Json::object();
  for (const auto& [group, lines] : originals.schemata) {
    Json by_resource = Json::object();
    for (const auto& [resource, values] : lines) {
      by_resource[resource] = resctrl::format_schemata_line(resource, values);
    }
    schemata[group] = by_resource;
  }
  return {{"createdGroups", originals.created_groups}, {"schemata", schemata}};
}

Result<ResctrlOriginals> parse_resctrl_originals(const Json& json, const std::string& where) {
  auto bad = [&](const std::string& what) {
    return make_error(ErrorCode::kParse, where + ": resctrl." + what);
  };
  ResctrlOriginals out;
  if (!json.is_object()) return bad(" expected an object");
  if (auto it = json.find("createdGroups"); it != json.end()) {
    if (!it->is_array()) return bad("createdGroups: expected a list");
    for (const auto& g : *it) {
      if (!g.is_string() || g.get<std::string>().empty()) {
        return bad("createdGroups: expected group names");
      }
      out.created_groups.insert(g.get<std::string>());
    }
  }
  if (auto it = json.find("schemata"); it != json.end()) {
    if (!it->is_object()) return bad("schemata: expected an object");
    for (const auto& [group, lines] : it->items()) {
      if (!lines.is_object()) return bad("schemata." + group + ": expected an object");
      for (const auto& [resource, line] : lines.items()) {
        auto parsed = line.is_string() ? resctrl::parse_schemata(line.get<std::string>())
                                       : Result<resctrl::Schemata>(make_error(
                                             ErrorCode::kParse, "expected a schemata line"));
        if (!parsed || parsed->count(resource) == 0) {
          return bad(fmt::format("schemata.{}.{}: expected \"{}:<id>=<value>;...\"", group,
                                 resource, resource));
        }
        out.schemata[group][resource] = parsed->at(resource);
      }
    }
  }
  return out;
}

void ResctrlExecutor::adopt(const ResctrlOriginals& earlier) {
  originals_.created_groups.insert(earlier.created_groups.begin(), earlier.created_groups.end());
  for (const auto& [group, lines] : earlier.schemata) {
    for (const auto& [resource, values] : lines)
      originals_.schemata[group].insert_or_assign(resource, values);
  }
}

bool ResctrlExecutor::remember(const ResctrlAction& a) {
  const ResctrlOriginals before =
      a.kind == ResctrlAction::Kind::kAddTask || !persist_ ? ResctrlOriginals{} : originals_;
  bool grew = false;
  const bool ours = originals_.created_groups.count(a.group) > 0;
  switch (a.kind) {
    case ResctrlAction::Kind::kCreateGroup:
      if (!ours && !is_directory(fs_.group_dir(a.group))) {
        originals_.created_groups.insert(a.group);
        grew = true;
      }
      break;
    case ResctrlAction::Kind::kSchemata:
      if (!ours && originals_.schemata[a.group].count(a.resource) == 0) {
        auto found = fs_.read_schemata(a.group);
        if (found && found->count(a.resource) > 0) {
          originals_.schemata[a.group][a.resource] = found->at(a.resource);
          grew = true;
        }
      }
      if (originals_.schemata[a.group].empty()) originals_.schemata.erase(a.group);
      break;
    case ResctrlAction::Kind::kAddTask:
      if (!ours) grew = originals_.tasks[a.group].insert(a.tid).second;
      break;
  }
  // Task ids are not persisted; a new group or schemata line is.
  if (grew && a.kind != ResctrlAction::Kind::kAddTask && persist_ && !persist_(originals_)) {
    originals_ = before;
    return false;
  }
  return true;
}

ResctrlApplyReport ResctrlExecutor::apply(const std::vector<ResctrlAction>& actions) {
  ResctrlApplyReport report;
  for (const auto& a : actions) {
    if (dry_run_) continue;
    if (!remember(a)) {
      ++report.unrecorded;
      continue;
    }
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
      report.changes.push_back(describe(fs_, a));
    } else {
      report.failed.push_back(status.error());
    }
  }
  return report;
}

ResctrlApplyReport ResctrlExecutor::restore_all() {
  ResctrlApplyReport report;
  auto count = [&](const Status& status, ResctrlFileWrite what) {
    if (status) {
      ++report.written;
      report.changes.push_back(std::move(what));
    } else if (status.error().code != ErrorCode::kNotFound) {
      report.failed.push_back(status.error());
    }
  };
  // Tasks first, while the groups they were placed in still exist; a task that exited is
  // routine.
  for (const auto& [group, tids] : originals_.tasks) {
    if (originals_.created_groups.count(group) > 0) continue;  // rmdir moves them anyway
    for (int tid : tids)
      count(fs_.add_task("", tid),
            {join_path(fs_.group_dir(""), "tasks"), std::to_string(tid), "restore"});
  }
  for (const auto& [group, lines] : originals_.schemata) {
    auto written = fs_.apply_schemata(group, lines);
    std::string value;
    for (const auto& [resource, values] : lines)
      value.append(value.empty() ? "" : "\n")
          .append(resctrl::format_schemata_line(resource, values));
    count(written ? ok_status() : Status(written.error()),
          {join_path(fs_.group_dir(group), "schemata"), value, "restore"});
  }
  for (const auto& group : originals_.created_groups)
    count(fs_.remove_group(group), {fs_.group_dir(group), "(rmdir)", "restore"});
  originals_ = {};
  return report;
}

namespace {

class Resctrl final : public Strategy {
 public:
  [[nodiscard]] std::string_view name() const override { return "resctrl"; }
  void declare_reads(const Pass& pass, KnobReads& reads) const override {
    declare_resctrl_reads(*pass.in.snapshot, pass.in.layout, pass.in.qos, reads);
  }
  Plan plan(const Pass& pass) override {
    return plan_resctrl(*pass.in.snapshot, pass.in.layout, pass.in.qos, pass.knobs);
  }
};

}  // namespace

std::unique_ptr<Strategy> make_resctrl_strategy() {
  return std::make_unique<Resctrl>();
}

}  // namespace gleaner::agent::qos
