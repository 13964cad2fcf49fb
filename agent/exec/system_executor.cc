#include "agent/exec/system_executor.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "cgroup/parsers.h"
#include "common/file_io.h"
#include "common/json_util.h"

namespace gleaner::agent::exec {

using qos::knob_named;
using qos::knob_path;
using qos::spec_of;
namespace {

std::string trimmed(std::string_view s) {
  return std::string(trim(s));
}

}  // namespace

Json system_originals_json(const SystemOriginals& originals) {
  Json out = Json::object();
  for (const auto& [name, content] : originals)
    out[name] = content;
  return out;
}

Result<SystemOriginals> parse_system_originals(const Json& json, const std::string& where) {
  if (!json.is_object()) {
    return make_error(ErrorCode::kParse,
                      where + ": system: expected an object, got " + json.type_name());
  }
  SystemOriginals out;
  for (const auto& [name, content] : json.items()) {
    const std::string field = std::string(where).append(": system.").append(name);
    if (!knob_named(name)) return make_error(ErrorCode::kParse, field + ": unknown knob");
    if (!content.is_string()) {
      return make_error(ErrorCode::kParse,
                        field + ": expected a string, got " + content.type_name());
    }
    out[name] = content.get<std::string>();
  }
  return out;
}

SystemExecutor::SystemExecutor(std::string proc_root, std::string sys_root, bool dry_run,
                               const Clock* clock)
    : proc_root_(std::move(proc_root)),
      sys_root_(std::move(sys_root)),
      dry_run_(dry_run),
      clock_(clock != nullptr ? clock : &system_clock_) {}

void SystemExecutor::adopt(const SystemOriginals& earlier) {
  for (const auto& [name, content] : earlier)
    originals_[name] = content;
}

std::vector<SystemFileWrite> SystemExecutor::plan(const std::vector<SystemWrite>& wanted) const {
  std::vector<SystemFileWrite> out;
  for (const auto& w : wanted) {
    const std::string path = path_of(w.knob);
    auto current = read_file(path);
    const std::string content = std::to_string(w.value);
    if (current && trimmed(*current) == content) continue;
    if (!current && current.error().code == ErrorCode::kNotFound && spec_of(w.knob).kernel_specific)
      continue;
    out.push_back({spec_of(w.knob).name, path, current ? trimmed(*current) : std::string(), content,
                   w.reason});
  }
  return out;
}

SystemApplyReport SystemExecutor::apply(const std::vector<SystemWrite>& wanted) {
  SystemApplyReport report;
  std::set<std::string> kept;
  for (const auto& w : wanted) {
    kept.insert(spec_of(w.knob).name);
    write(w.knob, std::to_string(w.value), w.reason, true, report);
  }
  // Knobs the config no longer sets: back to what the agent found.
  std::vector<std::string> dropped;
  for (const auto& [name, content] : originals_) {
    if (kept.count(name) == 0) dropped.push_back(name);
  }
  for (const auto& name : dropped) {
    const SystemKnob knob = *knob_named(name);
    const size_t failures = report.failed.size();
    write(knob, originals_.at(name), "restore", false, report);
    if (report.failed.size() == failures && !dry_run_) {
      originals_.erase(name);
      if (persist_) persist_(originals_);
    }
  }
  return report;
}

SystemApplyReport SystemExecutor::restore_all() {
  SystemApplyReport report;
  for (auto it = originals_.begin(); it != originals_.end();) {
    const size_t failures = report.failed.size();
    backoff_.forget(it->first);  // on stop, one last try whatever the backoff says
    write(*knob_named(it->first), it->second, "restore", false, report);
    it = report.failed.size() == failures ? originals_.erase(it) : std::next(it);
  }
  return report;
}

void SystemExecutor::write(SystemKnob knob, const std::string& content, const std::string& reason,
                           bool remember, SystemApplyReport& report) {
  const auto& spec = spec_of(knob);
  const std::string path = path_of(knob);
  auto& c = counters_[spec.name];
  if (backoff_.waiting(spec.name)) {
    ++c.deferred;
    return;
  }
  auto current = read_file(path);
  if (!current) {
    if (current.error().code == ErrorCode::kNotFound && spec.kernel_specific) {
      if (said_absent_.insert(spec.name).second) {
        spdlog::info("system-config: {} is not offered by this kernel ({}); left alone", spec.name,
                     path);
      }
      return;
    }
    ++c.failures;
    note_refusal(knob, content, current.error());
    report.failed.push_back(current.error());
    return;
  }
  const std::string found = trimmed(*current);
  if (found == content) {
    ++c.unchanged;
    backoff_.forget(spec.name);
    return;
  }
  if (dry_run_) {
    spdlog::info("dry-run: would write {} {}: {} -> {}", spec.name, path, found, content);
    return;
  }
  if (remember && originals_.try_emplace(spec.name, found).second && persist_ &&
      !persist_(originals_)) {
    originals_.erase(spec.name);  // not on record: not changed (recorded first next pass)
    ++c.unrecorded;
    return;
  }
  if (auto done = write_file(path, content); !done) {
    ++c.failures;
    note_refusal(knob, content, done.error());
    report.failed.push_back(done.error());
    return;
  }
  if (const int refusals = backoff_.succeeded(spec.name); refusals > 0) {
    spdlog::info("system-config: {} written after {} refusals", spec.name, refusals);
  }
  ++c.writes;
  spdlog::info("system-config: {} {} -> {}", spec.name, found, content);
  report.written.push_back({spec.name, path, found, content, reason});
}

void SystemExecutor::note_refusal(SystemKnob knob, const std::string& content, const Error& error) {
  const auto& spec = spec_of(knob);
  const std::string message = error.describe();
  const auto verdict = backoff_.refused(spec.name, message);
  if (verdict.warn) {
    spdlog::warn("system-config: writing {} to {} failed: {} ({} attempts; next in {}s)", content,
                 spec.name, message, verdict.failures, verdict.wait.count());
  }
}

}  // namespace gleaner::agent::exec
