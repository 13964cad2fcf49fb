#include "agent/exec/resctrl_executor.h"

#include <fmt/format.h>

#include "common/file_io.h"
#include "common/json_util.h"
#include "resctrl/schemata.h"

namespace gleaner::agent::exec {

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

}  // namespace gleaner::agent::exec
