#include "agent/step/step_record.h"

#include <array>
#include <cmath>

#include "agent/qos/qos_engine.h"
#include "agent/qos/record_fields.h"
#include "common/json_util.h"

namespace gleaner::agent::step {
namespace {

// A `namespace/name -> number` object of the probe section, each number times `scale`.
template <typename T>
Status parse_pod_figures(const Json& object, const std::string& where, const std::string& name,
                         double scale, std::map<std::string, T>& out) {
  if (!object.is_object())
    return qos::record_field_error(where, "probe." + name, "expected an object");
  for (const auto& [pod, value] : object.items()) {
    const std::string field = "probe." + name + "." + pod;
    if (pod.find('/') == std::string::npos) {
      return qos::record_field_error(where, field, "key must be namespace/name");
    }
    auto micros = qos::record_number(value, where, field);
    if (!micros) return micros.error();
    out[pod] = static_cast<T>(*micros * scale);
  }
  return ok_status();
}

// A `namespace/name -> microseconds` object of the probe section into nanoseconds.
Status parse_pod_micros(const Json& object, const std::string& where, const std::string& name,
                        std::map<std::string, double>& out) {
  return parse_pod_figures(object, where, name, 1000.0, out);
}

Result<ProbeReadings> parse_probe(const Json& probe, const std::string& where) {
  ProbeReadings out;
  if (!probe.is_object()) return qos::record_field_error(where, "probe", "expected an object");
  if (auto it = probe.find("runqueueP99Micros"); it != probe.end() && !it->is_null()) {
    out.runqueue_probe = true;
    if (auto parsed = parse_pod_micros(*it, where, "runqueueP99Micros", out.runq_p99_ns);
        !parsed.ok()) {
      return parsed.error();
    }
  }
  if (auto it = probe.find("beCausedRunqueueP99Micros"); it != probe.end() && !it->is_null()) {
    out.be_attribution = true;
    if (auto parsed = parse_pod_micros(*it, where, "beCausedRunqueueP99Micros", out.be_runq_p99_ns);
        !parsed.ok()) {
      return parsed.error();
    }
  }
  if (auto it = probe.find("onCpuMillicores"); it != probe.end() && !it->is_null()) {
    auto& seen = out.on_cpu_milli.emplace();
    if (auto parsed = parse_pod_figures(*it, where, "onCpuMillicores", 1.0, seen); !parsed.ok())
      return parsed.error();
  }
  if (auto it = probe.find("nodeCpuPsiSomeAvg10"); it != probe.end() && !it->is_null()) {
    auto psi = qos::record_number(*it, where, "probe.nodeCpuPsiSomeAvg10");
    if (!psi) return psi.error();
    out.cpu_psi_some_avg10 = *psi;
  }
  return out;
}

// agent.slo: {allowance, secondsSinceStep, secondsSinceCut, cutLevel,
// watched: {pod: secondsAgo}, window: [{secondsAgo, allowance}]}.
Status parse_slo(const Json& slo, const std::string& where, double now_s, SloMemory& out) {
  if (!slo.is_object()) return qos::record_field_error(where, "agent.slo", "expected an object");
  auto quantity = [&](const char* name, std::optional<int64_t>& into) -> Status {
    if (auto it = slo.find(name); it != slo.end() && !it->is_null()) {
      auto m = qos::record_milli(*it, where, std::string("agent.slo.") + name);
      if (!m) return m.error();
      into = *m;
    }
    return ok_status();
  };
  auto moment = [&](const char* name, std::optional<double>& into) -> Status {
    if (auto it = slo.find(name); it != slo.end() && !it->is_null()) {
      auto at = qos::record_moment(*it, where, std::string("agent.slo.") + name, now_s);
      if (!at) return at.error();
      into = *at;
    }
    return ok_status();
  };
  if (auto ok = quantity("allowance", out.allowance_milli); !ok) return ok.error();
  if (auto ok = quantity("cutLevel", out.cut_level_milli); !ok) return ok.error();
  if (auto ok = moment("secondsSinceStep", out.last_s); !ok) return ok.error();
  if (auto ok = moment("secondsSinceCut", out.last_cut_s); !ok) return ok.error();
  if (auto it = slo.find("watched"); it != slo.end() && !it->is_null()) {
    if (!it->is_object())
      return qos::record_field_error(where, "agent.slo.watched", "expected an object");
    for (const auto& [pod, v] : it->items()) {
      auto at = qos::record_moment(v, where, "agent.slo.watched." + pod, now_s);
      if (!at) return at.error();
      out.watched_s[pod] = *at;
    }
  }
  if (auto it = slo.find("window"); it != slo.end() && !it->is_null()) {
    if (!it->is_array())
      return qos::record_field_error(where, "agent.slo.window", "expected a list");
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& e = (*it)[i];
      const std::string field = "agent.slo.window[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("secondsAgo") || !e.contains("allowance"))
        return qos::record_field_error(where, field, "expected {secondsAgo, allowance}");
      auto at = qos::record_moment(e["secondsAgo"], where, field + ".secondsAgo", now_s);
      if (!at) return at.error();
      auto m = qos::record_milli(e["allowance"], where, field + ".allowance");
      if (!m) return m.error();
      out.window.emplace_back(*at, *m);
    }
  }
  return ok_status();
}

Json slo_json(const SloMemory& m, double now_s) {
  Json out = Json::object();
  auto quantity = [](int64_t milli) { return std::to_string(milli) + "m"; };
  if (m.allowance_milli) out["allowance"] = quantity(*m.allowance_milli);
  if (m.cut_level_milli) out["cutLevel"] = quantity(*m.cut_level_milli);
  if (m.last_s) out["secondsSinceStep"] = now_s - *m.last_s;
  if (m.last_cut_s) out["secondsSinceCut"] = now_s - *m.last_cut_s;
  if (!m.watched_s.empty()) {
    Json watched = Json::object();
    for (const auto& [pod, at] : m.watched_s)
      watched[pod] = now_s - at;
    out["watched"] = watched;
  }
  if (!m.window.empty()) {
    Json window = Json::array();
    for (const auto& [at, milli] : m.window)
      window.push_back({{"secondsAgo", now_s - at}, {"allowance", quantity(milli)}});
    out["window"] = window;
  }
  return out;
}

Result<AgentMemory> parse_memory(const Json& agent, const std::string& where, double now_s,
                                 bool& fast_path_live) {
  AgentMemory m;
  if (!agent.is_object()) return qos::record_field_error(where, "agent", "expected an object");
  auto flag = [&](const char* name, bool& into) -> Status {
    if (auto it = agent.find(name); it != agent.end() && !it->is_null()) {
      if (!it->is_boolean())
        return qos::record_field_error(where, std::string("agent.") + name,
                                       "expected true or false");
      into = it->get<bool>();
    }
    return ok_status();
  };
  if (auto ok = flag("suppressArmed", m.suppress_armed); !ok) return ok.error();
  if (auto ok = flag("fastPathLive", fast_path_live); !ok) return ok.error();
  if (auto it = agent.find("secondsSinceInterference"); it != agent.end() && !it->is_null()) {
    auto at = qos::record_moment(*it, where, "agent.secondsSinceInterference", now_s);
    if (!at) return at.error();
    m.last_breach_s = *at;
  }
  if (auto it = agent.find("interferenceCeiling"); it != agent.end() && !it->is_null()) {
    if (!it->is_object())
      return qos::record_field_error(where, "agent.interferenceCeiling", "expected an object");
    if (auto q = it->find("cpuQuotaMicros"); q != it->end()) {
      if (!q->is_number_integer() || q->get<int64_t>() <= 0 ||
          q->get<int64_t>() > (int64_t{1} << 40)) {
        return qos::record_field_error(where, "agent.interferenceCeiling.cpuQuotaMicros",
                                       "expected a positive integer");
      }
      m.ceiling_quota_us = q->get<int64_t>();
    }
    if (auto c = it->find("cpus"); c != it->end()) {
      if (!c->is_number_integer() || c->get<int64_t>() < 0 || c->get<int64_t>() > 65536) {
        return qos::record_field_error(where, "agent.interferenceCeiling.cpus",
                                       "expected a non-negative integer");
      }
      m.ceiling_cpus = c->get<int>();
    }
  }
  // The QoS strategies' parts, checked by loading them into a fresh engine.
  qos::QosEngine engine;
  if (auto ok = engine.load_memory(agent, where, now_s); !ok) return ok.error();
  m.strategies = engine.save_memory(now_s);
  if (auto it = agent.find("slo"); it != agent.end() && !it->is_null()) {
    if (auto ok = parse_slo(*it, where, now_s, m.slo); !ok) return ok.error();
  }
  return m;
}

// The step's memory in the `agent` form, its times counted back from `now_s`.
Json memory_json(const AgentMemory& m, double now_s) {
  Json agent = {{"suppressArmed", m.suppress_armed}};
  if (m.last_breach_s) agent["secondsSinceInterference"] = now_s - *m.last_breach_s;
  Json ceiling = Json::object();
  if (m.ceiling_quota_us) ceiling["cpuQuotaMicros"] = *m.ceiling_quota_us;
  if (m.ceiling_cpus) ceiling["cpus"] = *m.ceiling_cpus;
  if (!ceiling.empty()) agent["interferenceCeiling"] = ceiling;
  for (const auto& [key, value] : m.strategies.items())
    agent[key] = value;
  if (Json slo = slo_json(m.slo, now_s); !slo.empty()) agent["slo"] = slo;
  return agent;
}

// `heldClamps` of a pass (`at`: "heldClamps" or "fastPasses[0].heldClamps").
Result<std::vector<cgroup::HeldClamp>> parse_held_clamps(const Json& list, const std::string& where,
                                                         const std::string& at) {
  if (!list.is_array()) return qos::record_field_error(where, at, "expected a list");
  std::vector<cgroup::HeldClamp> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& e = list[i];
    const std::string entry = at + "[" + std::to_string(i) + "]";
    if (!e.is_object()) return qos::record_field_error(where, entry, "expected an object");
    std::array<std::string, 4> fields;
    constexpr std::array<const char*, 4> names = {"resource", "cgroup", "wish", "clampedTo"};
    for (size_t f = 0; f < names.size(); ++f) {
      auto it = e.find(names[f]);
      if (it == e.end() || !it->is_string())
        return qos::record_field_error(where, entry + "." + names[f], "expected a string");
      fields[f] = it->get<std::string>();
    }
    // Only the knobs the kernel bounds by their parent's are ever clamped.
    const auto resource = cgroup::resource_named(fields[0]);
    if (!resource ||
        (*resource != cgroup::Resource::kCpuQuota && *resource != cgroup::Resource::kCpusetCpus)) {
      return qos::record_field_error(where, entry + ".resource",
                                     "expected cpu_quota or cpuset_cpus");
    }
    // A cgroup is a path below the root: nothing that climbs out of it.
    if (fields[1].find("..") != std::string::npos || fields[1].starts_with('/'))
      return qos::record_field_error(where, entry + ".cgroup", "expected a relative cgroup path");
    out.push_back({*resource, fields[1], fields[2], fields[3]});
  }
  return out;
}

Json held_clamps_json(const std::vector<cgroup::HeldClamp>& clamps) {
  Json out = Json::array();
  for (const auto& c : clamps) {
    out.push_back({{"resource", cgroup::to_string(c.resource)},
                   {"cgroup", c.cgroup},
                   {"wish", c.wish},
                   {"clampedTo", c.clamped_to}});
  }
  return out;
}

// fastPasses[i] (`entry`): its own fields, then its `agent` read as the snapshot's own, its
// errors naming the entry before the field ("<file>: fastPasses[1]: agent.suppressArmed").
Result<FastPassRecord> parse_fast_pass(const Json& e, const std::string& where,
                                       const std::string& entry, double now_s) {
  FastPassRecord out;
  if (!e.is_object()) return qos::record_field_error(where, entry, "expected an object");
  auto field = [&](const char* name) -> const Json* {
    auto it = e.find(name);
    return it == e.end() || it->is_null() ? nullptr : &*it;
  };
  const std::string at = entry + ".";
  const Json* after = field("secondsAfterSnapshot");
  if (after == nullptr)
    return qos::record_field_error(where, at + "secondsAfterSnapshot", "missing");
  auto seconds = qos::record_number(*after, where, at + "secondsAfterSnapshot");
  if (!seconds) return seconds.error();
  out.seconds_after = *seconds;
  if (const Json* trigger = field("trigger")) {
    if (!trigger->is_string() ||
        (trigger->get<std::string>() != "timer" && trigger->get<std::string>() != "wakeup")) {
      return qos::record_field_error(where, at + "trigger", "expected timer or wakeup");
    }
    out.trigger = trigger->get<std::string>();
  }
  for (auto [name, into] :
       {std::pair{"nodeCpu", &out.node_cpu_milli}, std::pair{"nonBeCpu", &out.non_be_cpu_milli}}) {
    const Json* v = field(name);
    if (v == nullptr) return qos::record_field_error(where, at + name, "missing");
    auto milli = qos::record_milli(*v, where, at + name);
    if (!milli) return milli.error();
    if (*milli < 0) return qos::record_field_error(where, at + name, "expected a quantity >= 0");
    *into = *milli;
  }
  if (const Json* stale = field("stale")) {
    if (!stale->is_boolean())
      return qos::record_field_error(where, at + "stale", "expected true or false");
    out.stale = stale->get<bool>();
  }
  if (const Json* agent = field("agent")) {
    bool unused = false;  // fastPathLive: the full pass's alone
    auto memory = parse_memory(*agent, where + ": " + entry, now_s + out.seconds_after, unused);
    if (!memory) return memory.error();
    out.memory = std::move(*memory);
  }
  if (const Json* held = field("heldClamps")) {
    auto clamps = parse_held_clamps(*held, where, at + "heldClamps");
    if (!clamps) return clamps.error();
    out.held_clamps = std::move(*clamps);
  }
  return out;
}

Json fast_pass_json(const FastPassRecord& p, double now_s) {
  auto quantity = [](int64_t milli) { return std::to_string(milli) + "m"; };
  Json pass = {{"secondsAfterSnapshot", p.seconds_after},
               {"trigger", p.trigger},
               {"nodeCpu", quantity(p.node_cpu_milli)},
               {"nonBeCpu", quantity(p.non_be_cpu_milli)},
               {"stale", p.stale},
               {"agent", memory_json(p.memory, now_s + p.seconds_after)}};
  if (!p.held_clamps.empty()) pass["heldClamps"] = held_clamps_json(p.held_clamps);
  return pass;
}

}  // namespace

Result<StepRecord> parse_step_record(const Json& doc, const std::string& where, double now_s) {
  StepRecord out;
  if (auto it = doc.find("probe"); it != doc.end() && !it->is_null()) {
    auto probe = parse_probe(*it, where);
    if (!probe) return probe.error();
    out.probe = std::move(*probe);
  }
  if (auto it = doc.find("agent"); it != doc.end() && !it->is_null()) {
    auto memory = parse_memory(*it, where, now_s, out.fast_path_live);
    if (!memory) return memory.error();
    out.memory = std::move(*memory);
    if (auto cpus = it->find("cpus"); cpus != it->end() && !cpus->is_null()) {
      if (!cpus->is_number_integer() || cpus->get<int64_t>() < 1 || cpus->get<int64_t>() > 65536) {
        return qos::record_field_error(where, "agent.cpus", "expected a CPU count (1-65536)");
      }
      out.cpus = cpus->get<int>();
    }
  }
  if (auto it = doc.find("heldClamps"); it != doc.end() && !it->is_null()) {
    auto clamps = parse_held_clamps(*it, where, "heldClamps");
    if (!clamps) return clamps.error();
    out.held_clamps = std::move(*clamps);
  }
  if (auto it = doc.find("fastPasses"); it != doc.end() && !it->is_null()) {
    if (!it->is_array()) return qos::record_field_error(where, "fastPasses", "expected a list");
    for (size_t i = 0; i < it->size(); ++i) {
      auto pass = parse_fast_pass((*it)[i], where, "fastPasses[" + std::to_string(i) + "]", now_s);
      if (!pass) return pass.error();
      out.fast_passes.push_back(std::move(*pass));
    }
  }
  return out;
}

void add_step_record(Json& doc, const StepRecord& record, double now_s) {
  Json probe = Json::object();
  if (record.probe.runqueue_probe) {
    Json runq = Json::object();
    for (const auto& [pod, ns] : record.probe.runq_p99_ns)
      runq[pod] = ns / 1000.0;
    probe["runqueueP99Micros"] = runq;
  }
  if (record.probe.be_attribution) {
    Json caused = Json::object();
    for (const auto& [pod, ns] : record.probe.be_runq_p99_ns)
      caused[pod] = ns / 1000.0;
    probe["beCausedRunqueueP99Micros"] = caused;
  }
  if (record.probe.on_cpu_milli) {
    Json seen = Json::object();
    for (const auto& [pod, milli] : *record.probe.on_cpu_milli)
      seen[pod] = milli;
    probe["onCpuMillicores"] = seen;
  }
  if (record.probe.cpu_psi_some_avg10)
    probe["nodeCpuPsiSomeAvg10"] = *record.probe.cpu_psi_some_avg10;
  doc["probe"] = probe;

  Json agent = memory_json(record.memory, now_s);
  agent["fastPathLive"] = record.fast_path_live;
  if (record.cpus) agent["cpus"] = *record.cpus;
  doc["agent"] = agent;
  if (!record.held_clamps.empty()) doc["heldClamps"] = held_clamps_json(record.held_clamps);
  if (!record.fast_passes.empty()) {
    Json passes = Json::array();
    for (const auto& p : record.fast_passes)
      passes.push_back(fast_pass_json(p, now_s));
    doc["fastPasses"] = passes;
  }
}

}  // namespace gleaner::agent::step
