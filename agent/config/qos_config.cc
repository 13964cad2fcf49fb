#include "agent/config/qos_config.h"

#include <string>

#include "agent/config/strategy_set_reader.h"

namespace gleaner::agent::config {
namespace {

void read_class(FieldReader& r, const Json& obj, const std::string& path, ResourceQoS& out) {
  if (const Json* cpu = r.object(obj, path, "cpuQOS")) {
    const std::string p = FieldReader::join(path, "cpuQOS");
    r.read_bool(*cpu, p, "enable", out.cpu.enable);
    r.read_int(*cpu, p, "groupIdentity", out.cpu.group_identity, -1, 2);
    r.read_int(*cpu, p, "schedIdle", out.cpu.sched_idle, 0, 1);
    r.read_bool(*cpu, p, "coreExpeller", out.cpu.core_expeller);
  }
  if (const Json* mem = r.object(obj, path, "memoryQOS")) {
    const std::string p = FieldReader::join(path, "memoryQOS");
    MemoryQoS& m = out.memory;
    r.read_bool(*mem, p, "enable", m.enable);
    r.read_percent(*mem, p, "minLimitPercent", m.min_limit_percent);
    r.read_percent(*mem, p, "lowLimitPercent", m.low_limit_percent);
    r.read_percent(*mem, p, "throttlingPercent", m.throttling_percent);
    r.read_percent(*mem, p, "wmarkRatio", m.wmark_ratio);
    r.read_int(*mem, p, "wmarkScalePermill", m.wmark_scale_permill, 1, 1000);
    r.read_int(*mem, p, "wmarkMinAdj", m.wmark_min_adj, -25, 50);
    r.read_int(*mem, p, "priorityEnable", m.priority_enable, 0, 1);
    r.read_int(*mem, p, "priority", m.priority, 0, 12);
    r.read_int(*mem, p, "oomKillGroup", m.oom_kill_group, 0, 1);
  }
  if (const Json* rdt = r.object(obj, path, "resctrlQOS")) {
    const std::string p = FieldReader::join(path, "resctrlQOS");
    r.read_bool(*rdt, p, "enable", out.resctrl.enable);
    r.read_percent(*rdt, p, "catRangeStartPercent", out.resctrl.cat_range_start_percent);
    r.read_percent(*rdt, p, "catRangeEndPercent", out.resctrl.cat_range_end_percent);
    r.read_percent(*rdt, p, "mbaPercent", out.resctrl.mba_percent);
  }
}

void read_qos_fields(FieldReader& r, const Json& obj, const std::string& path,
                     ResourceQoSStrategy& out) {
  if (const Json* policies = r.object(obj, path, "policies")) {
    if (auto p = r.read_enum(*policies, FieldReader::join(path, "policies"), "cpuPolicy",
                             {"groupIdentity", "coreSched"})) {
      out.cpu_policy = static_cast<CpuQoSPolicy>(*p);
    }
  }
  if (const Json* c = r.object(obj, path, "lsrClass")) {
    read_class(r, *c, FieldReader::join(path, "lsrClass"), out.lsr);
  }
  if (const Json* c = r.object(obj, path, "lsClass")) {
    read_class(r, *c, FieldReader::join(path, "lsClass"), out.ls);
  }
  if (const Json* c = r.object(obj, path, "beClass")) {
    read_class(r, *c, FieldReader::join(path, "beClass"), out.be);
  }
}

void check_class(FieldReader& r, const std::string& path, const ResourceQoS& q) {
  if (q.resctrl.cat_range_start_percent >= q.resctrl.cat_range_end_percent) {
    r.fail(FieldReader::join(path, "resctrlQOS.catRangeStartPercent"),
           std::to_string(q.resctrl.cat_range_start_percent) +
               " must be below catRangeEndPercent " +
               std::to_string(q.resctrl.cat_range_end_percent),
           ErrorCode::kInvalidArgument);
  }
}

void check_qos(FieldReader& r, const std::string& path, const ResourceQoSStrategy& s) {
  check_class(r, FieldReader::join(path, "lsrClass"), s.lsr);
  check_class(r, FieldReader::join(path, "lsClass"), s.ls);
  check_class(r, FieldReader::join(path, "beClass"), s.be);
}

}  // namespace

ResourceQoSStrategy::ResourceQoSStrategy() {
  // Koordinator's defaults: LS-side classes get the highest group identity and a
  // negative watermark adjustment; BE gets the lowest, a positive one, and 30% of L3.
  for (ResourceQoS* c : {&lsr, &ls}) {
    c->cpu.group_identity = 2;
    c->memory.wmark_min_adj = -25;
  }
  be.cpu.group_identity = -1;
  be.memory.wmark_min_adj = 50;
  be.resctrl.cat_range_end_percent = 30;
}

Result<ResourceQoSConfig> parse_qos_config(std::string_view text, const std::string& file) {
  auto json = parse_json_object(text, file);
  if (!json) return json.error();
  FieldReader reader(file);
  const Json* cluster = reader.object(*json, "", "clusterStrategy");
  auto set = read_strategy_set<ResourceQoSStrategy>(reader, *json, cluster, "clusterStrategy",
                                                    "nodeStrategies", ResourceQoSStrategy{},
                                                    read_qos_fields, check_qos);
  if (reader.failed()) return reader.error();
  return set;
}

}  // namespace gleaner::agent::config
