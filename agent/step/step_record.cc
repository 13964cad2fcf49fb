#include "agent/step/step_record.h"

#include <cmath>

#include "common/json_util.h"

namespace gleaner::agent::step {
namespace {

Error field_error(const std::string& where, const std::string& field, const std::string& what) {
  return make_error(ErrorCode::kParse, where + ": " + field + ": " + what);
}

// A non-negative finite number at `field`.
Result<double> number(const Json& value, const std::string& where, const std::string& field) {
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
    return field_error(where, field, "expected a non-negative number");
  }
  return value.get<double>();
}

// A `namespace/name -> microseconds` object of the probe section into nanoseconds.
Status parse_pod_micros(const Json& object, const std::string& where, const std::string& name,
                        std::map<std::string, double>& out) {
  if (!object.is_object()) return field_error(where, "probe." + name, "expected an object");
  for (const auto& [pod, value] : object.items()) {
    const std::string field = "probe." + name + "." + pod;
    if (pod.find('/') == std::string::npos) {
      return field_error(where, field, "key must be namespace/name");
    }
    auto micros = number(value, where, field);
    if (!micros) return micros.error();
    out[pod] = *micros * 1000.0;
  }
  return ok_status();
}

Result<ProbeReadings> parse_probe(const Json& probe, const std::string& where) {
  ProbeReadings out;
  if (!probe.is_object()) return field_error(where, "probe", "expected an object");
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
  if (auto it = probe.find("nodeCpuPsiSomeAvg10"); it != probe.end() && !it->is_null()) {
    auto psi = number(*it, where, "probe.nodeCpuPsiSomeAvg10");
    if (!psi) return psi.error();
    out.cpu_psi_some_avg10 = *psi;
  }
  return out;
}

Result<int64_t> milli(const Json& value, const std::string& where, const std::string& field) {
  auto q = quantity_from_json(value, where + ": " + field);
  if (!q) return q.error();
  return q->milli_value();
}

// agent.cfsQuotaBurst: container cgroup -> {secondsAgo, usageNanos, nrThrottled, tokens}.
Status parse_quota_burst(const Json& entries, const std::string& where, double now_s,
                         std::map<std::string, qos::QuotaBurstMemory>& out) {
  if (!entries.is_object()) return field_error(where, "agent.cfsQuotaBurst", "expected an object");
  for (const auto& [cgroup, e] : entries.items()) {
    const std::string field = "agent.cfsQuotaBurst." + cgroup;
    auto counter = [&](const char* name) -> Result<int64_t> {
      auto it = e.find(name);
      if (it == e.end() || !it->is_number_integer() || it->get<int64_t>() < 0)
        return field_error(where, field + "." + name, "expected a non-negative integer");
      return it->get<int64_t>();
    };
    if (!e.is_object()) return field_error(where, field, "expected an object");
    auto ago = number(e.value("secondsAgo", Json()), where, field + ".secondsAgo");
    if (!ago) return ago.error();
    auto usage = counter("usageNanos");
    if (!usage) return usage.error();
    auto throttled = counter("nrThrottled");
    if (!throttled) return throttled.error();
    auto tokens = e.find("tokens");
    if (tokens == e.end() || !tokens->is_number() || !std::isfinite(tokens->get<double>()))
      return field_error(where, field + ".tokens", "expected a number");
    out[cgroup] = {now_s - *ago, {*usage, *throttled}, tokens->get<double>()};
  }
  return ok_status();
}

// agent.slo: {allowance, secondsSinceStep, secondsSinceCut, cutLevel,
// watched: {pod: secondsAgo}, window: [{secondsAgo, allowance}]}.
Status parse_slo(const Json& slo, const std::string& where, double now_s, SloMemory& out) {
  if (!slo.is_object()) return field_error(where, "agent.slo", "expected an object");
  auto ago = [&](const Json& v, const std::string& field) -> Result<double> {
    auto seconds = number(v, where, field);
    if (!seconds) return seconds.error();
    return now_s - *seconds;
  };
  auto quantity = [&](const char* name, std::optional<int64_t>& into) -> Status {
    if (auto it = slo.find(name); it != slo.end() && !it->is_null()) {
      auto m = milli(*it, where, std::string("agent.slo.") + name);
      if (!m) return m.error();
      into = *m;
    }
    return ok_status();
  };
  auto moment = [&](const char* name, std::optional<double>& into) -> Status {
    if (auto it = slo.find(name); it != slo.end() && !it->is_null()) {
      auto at = ago(*it, std::string("agent.slo.") + name);
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
    if (!it->is_object()) return field_error(where, "agent.slo.watched", "expected an object");
    for (const auto& [pod, v] : it->items()) {
      auto at = ago(v, "agent.slo.watched." + pod);
      if (!at) return at.error();
      out.watched_s[pod] = *at;
    }
  }
  if (auto it = slo.find("window"); it != slo.end() && !it->is_null()) {
    if (!it->is_array()) return field_error(where, "agent.slo.window", "expected a list");
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& e = (*it)[i];
      const std::string field = "agent.slo.window[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("secondsAgo") || !e.contains("allowance"))
        return field_error(where, field, "expected {secondsAgo, allowance}");
      auto at = ago(e["secondsAgo"], field + ".secondsAgo");
      if (!at) return at.error();
      auto m = milli(e["allowance"], where, field + ".allowance");
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
  if (!agent.is_object()) return field_error(where, "agent", "expected an object");
  auto ago = [&](const Json& v, const std::string& field) -> Result<double> {
    auto seconds = number(v, where, field);
    if (!seconds) return seconds.error();
    return now_s - *seconds;
  };
  auto flag = [&](const char* name, bool& into) -> Status {
    if (auto it = agent.find(name); it != agent.end() && !it->is_null()) {
      if (!it->is_boolean())
        return field_error(where, std::string("agent.") + name, "expected true or false");
      into = it->get<bool>();
    }
    return ok_status();
  };
  if (auto ok = flag("suppressArmed", m.suppress_armed); !ok) return ok.error();
  if (auto ok = flag("fastPathLive", fast_path_live); !ok) return ok.error();
  if (auto it = agent.find("secondsSinceInterference"); it != agent.end() && !it->is_null()) {
    auto at = ago(*it, "agent.secondsSinceInterference");
    if (!at) return at.error();
    m.last_breach_s = *at;
  }
  if (auto it = agent.find("interferenceCeiling"); it != agent.end() && !it->is_null()) {
    if (!it->is_object())
      return field_error(where, "agent.interferenceCeiling", "expected an object");
    if (auto q = it->find("cpuQuotaMicros"); q != it->end()) {
      if (!q->is_number_integer() || q->get<int64_t>() <= 0 ||
          q->get<int64_t>() > (int64_t{1} << 40)) {
        return field_error(where, "agent.interferenceCeiling.cpuQuotaMicros",
                           "expected a positive integer");
      }
      m.ceiling_quota_us = q->get<int64_t>();
    }
    if (auto c = it->find("cpus"); c != it->end()) {
      if (!c->is_number_integer() || c->get<int64_t>() < 0 || c->get<int64_t>() > 65536) {
        return field_error(where, "agent.interferenceCeiling.cpus",
                           "expected a non-negative integer");
      }
      m.ceiling_cpus = c->get<int>();
    }
  }
  if (auto it = agent.find("evictions"); it != agent.end() && !it->is_null()) {
    if (!it->is_object()) return field_error(where, "agent.evictions", "expected an object");
    if (auto v = it->find("lastMemorySecondsAgo"); v != it->end()) {
      auto at = ago(*v, "agent.evictions.lastMemorySecondsAgo");
      if (!at) return at.error();
      m.qos.last_memory_evict_s = *at;
    }
    if (auto v = it->find("lastCpuSecondsAgo"); v != it->end()) {
      auto at = ago(*v, "agent.evictions.lastCpuSecondsAgo");
      if (!at) return at.error();
      m.qos.last_cpu_evict_s = *at;
    }
    if (auto pods = it->find("pods"); pods != it->end()) {
      if (!pods->is_object())
        return field_error(where, "agent.evictions.pods", "expected an object");
      for (const auto& [pod, v] : pods->items()) {
        auto at = ago(v, "agent.evictions.pods." + pod);
        if (!at) return at.error();
        m.qos.evicted_at_s[pod] = *at;
      }
    }
  }
  if (auto it = agent.find("beCpuWindow"); it != agent.end() && !it->is_null()) {
    if (!it->is_array()) return field_error(where, "agent.beCpuWindow", "expected a list");
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& e = (*it)[i];
      const std::string at_field = "agent.beCpuWindow[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("secondsAgo") || !e.contains("usage") ||
          !e.contains("limit")) {
        return field_error(where, at_field, "expected {secondsAgo, usage, limit}");
      }
      auto at = ago(e["secondsAgo"], at_field + ".secondsAgo");
      auto usage = milli(e["usage"], where, at_field + ".usage");
      auto limit = milli(e["limit"], where, at_field + ".limit");
      if (!at) return at.error();
      if (!usage) return usage.error();
      if (!limit) return limit.error();
      m.qos.be_cpu_history.push_back({*at, *usage, *limit});
    }
  }
  if (auto it = agent.find("cfsQuotaBurst"); it != agent.end() && !it->is_null()) {
    if (auto ok = parse_quota_burst(*it, where, now_s, m.qos.quota_burst); !ok) return ok.error();
  }
  if (auto it = agent.find("slo"); it != agent.end() && !it->is_null()) {
    if (auto ok = parse_slo(*it, where, now_s, m.slo); !ok) return ok.error();
  }
  return m;
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
  if (record.probe.cpu_psi_some_avg10)
    probe["nodeCpuPsiSomeAvg10"] = *record.probe.cpu_psi_some_avg10;
  doc["probe"] = probe;

  const AgentMemory& m = record.memory;
  Json agent = {{"suppressArmed", m.suppress_armed}, {"fastPathLive", record.fast_path_live}};
  if (m.last_breach_s) agent["secondsSinceInterference"] = now_s - *m.last_breach_s;
  Json ceiling = Json::object();
  if (m.ceiling_quota_us) ceiling["cpuQuotaMicros"] = *m.ceiling_quota_us;
  if (m.ceiling_cpus) ceiling["cpus"] = *m.ceiling_cpus;
  if (!ceiling.empty()) agent["interferenceCeiling"] = ceiling;
  Json evictions = Json::object();
  if (m.qos.last_memory_evict_s)
    evictions["lastMemorySecondsAgo"] = now_s - *m.qos.last_memory_evict_s;
  if (m.qos.last_cpu_evict_s) evictions["lastCpuSecondsAgo"] = now_s - *m.qos.last_cpu_evict_s;
  if (!m.qos.evicted_at_s.empty()) {
    Json pods = Json::object();
    for (const auto& [pod, at] : m.qos.evicted_at_s)
      pods[pod] = now_s - at;
    evictions["pods"] = pods;
  }
  if (!evictions.empty()) agent["evictions"] = evictions;
  if (!m.qos.be_cpu_history.empty()) {
    Json window = Json::array();
    for (const auto& s : m.qos.be_cpu_history) {
      window.push_back({{"secondsAgo", now_s - s.at_s},
                        {"usage", std::to_string(s.usage_milli) + "m"},
                        {"limit", std::to_string(s.limit_milli) + "m"}});
    }
    agent["beCpuWindow"] = window;
  }
  if (!m.qos.quota_burst.empty()) {
    Json bursts = Json::object();
    for (const auto& [cgroup, b] : m.qos.quota_burst) {
      bursts[cgroup] = {{"secondsAgo", now_s - b.at_s},
                        {"usageNanos", b.counters.usage_ns},
                        {"nrThrottled", b.counters.nr_throttled},
                        {"tokens", b.tokens}};
    }
    agent["cfsQuotaBurst"] = bursts;
  }
  if (Json slo = slo_json(m.slo, now_s); !slo.empty()) agent["slo"] = slo;
  doc["agent"] = agent;
}

}  // namespace gleaner::agent::step
