#include "agent/cli/plan_runner.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "agent/batch/batch_calculator.h"
#include "agent/config/slo_config.h"
#include "agent/edge/knob_reader.h"
#include "agent/edge/node_environment.h"
#include "agent/exec/knob_executor.h"
#include "agent/qos/cpu_suppress.h"
#include "agent/snapshot/node_snapshot.h"
#include "agent/step/agent_step.h"
#include "agent/step/batch_bound.h"
#include "agent/step/step_record.h"
#include "agent/step/suppress_status.h"
#include "common/file_io.h"
#include "common/json_util.h"
#include "kube/well_known.h"

namespace gleaner::agent::step {
using namespace qos;
namespace {

constexpr const char* kCmd = "gleaner-agent plan: ";
// The monotonic moment the snapshot stands for; the record's ages count back from it.
constexpr double kSnapshotNow = 1e6;

// The writes a plan makes, as printed; the requests the executor rejects go to `err`.
nlohmann::ordered_json printed_writes(const exec::KnobReport& planned, std::ostream& err) {
  for (const auto& r : planned.rejected)
    err << kCmd << "write rejected: " << r.error.message << "\n";
  nlohmann::ordered_json writes = nlohmann::ordered_json::array();
  for (const auto& w : planned.written)
    writes.push_back({{"path", w.path}, {"value", w.value}, {"reason", w.reason}});
  return writes;
}

// 1 when some write failed (each named on `err`), else 0.
int report_failures(const exec::KnobReport& applied, std::ostream& err) {
  for (const auto& f : applied.failed) {
    switch (f.kind) {
      case exec::KnobKind::kCgroup:
        err << kCmd << "write " << f.path << " failed: " << f.error.message << "\n";
        break;
      case exec::KnobKind::kResctrl:
        err << kCmd << "resctrl: " << f.error.message << "\n";
        break;
      case exec::KnobKind::kSysctl:
        err << kCmd << "system-config: " << f.error.message << "\n";
        break;
    }
  }
  return applied.failed.empty() ? 0 : 1;
}

}  // namespace

int run_plan(const PlanOptions& opts, std::ostream& out, std::ostream& err) {
  auto text = read_file(opts.snapshot);
  auto doc = text ? parse_json(*text, opts.snapshot) : Result<Json>(text.error());
  auto snap = doc ? snapshot::parse_snapshot(*doc, opts.snapshot)
                  : Result<snapshot::NodeSnapshot>(doc.error());
  auto record = snap ? parse_step_record(*doc, opts.snapshot, kSnapshotNow)
                     : Result<StepRecord>(snap.error());
  if (!record) {
    err << kCmd << "bad snapshot: " << record.error().message << "\n";
    return 2;
  }
  auto interference = bpf::parse_interference_config(
      opts.interference_runq_p99_bound, opts.interference_hold, opts.interference_psi_bound);
  if (!interference) {
    err << kCmd << interference.error().message << "\n";
    return 2;
  }
  auto env =
      edge::discover_environment(edge::EnvironmentFlags{.cgroup_root = opts.cgroup_root,
                                                        .cgroup_version = opts.cgroup_version,
                                                        .sys_root = opts.sys_root});
  if (!env) {
    err << kCmd << env.error().message << "\n";
    return 2;
  }
  if (!env->driver) {
    err << kCmd << "--cgroup-root " << opts.cgroup_root << ": " << env->driver_problem << "\n";
    return 2;
  }
  cgroup::CgroupFs fs(opts.cgroup_root, env->version);
  const cgroup::CgroupDriver driver = *env->driver;
  if (!is_directory(opts.config_dir)) {
    err << kCmd << "config dir " << opts.config_dir
        << " is not a directory; using the defaults for every key\n";
  }
  // As in `calc`: a key that fails gets its safe fallback and is reported.
  config::LoadResult loaded = config::load_config_dir(opts.config_dir);
  for (const auto& e : loaded.errors) {
    err << kCmd << "config key " << e.key << " rejected (" << config::to_string(e.kept)
        << "): " << e.error.message << "\n";
  }
  const std::optional<CpuTopology>& topology = env->topology;
  if (!opts.sys_root.empty() && !topology) {
    err << kCmd << "no CPU topology (" << env->topology_problem
        << "); the cpuset policy uses the kubepods CPU list\n";
  }
  std::optional<resctrl::ResctrlFs> rfs;
  if (!opts.resctrl_root.empty()) rfs.emplace(opts.resctrl_root);
  edge::FsQosReader reader(fs, rfs ? &*rfs : nullptr);

  TickInputs in;
  in.snapshot = &*snap;
  in.resolve_strategies(loaded.config, snap->node.metadata.labels);
  in.layout = cgroup::KubeletLayout(driver);
  in.topology = topology;
  in.reader = &reader;
  in.now_s = kSnapshotNow;
  in.stale = is_stale(snap->metrics.age_seconds, opts.metrics_interval_s);
  in.probe = record->probe;
  in.fast_path_live = record->fast_path_live;
  // One interference step is a tenth of the node's CPUs: the count the daemon recorded
  // (its online CPUs), else the Node's capacity.
  const int64_t capacity = node_facts(*snap, in.layout, topology).capacity_milli;
  const int cpus = record->cpus.value_or(static_cast<int>((capacity + 999) / 1000));
  AgentStep step(*interference, in.layout, cpus);
  if (auto adopted = step.adopt(record->memory, kSnapshotNow); !adopted) {
    err << kCmd << "bad snapshot: " << adopted.error().message << "\n";
    return 2;
  }
  StepResult result = step.tick(in);
  const Plan& plan = result.plan;
  for (const auto& event : result.events)
    err << kCmd << event << "\n";
  for (const auto& note : plan.notes)
    err << kCmd << note << "\n";

  exec::KnobExecutor knobs(fs, rfs ? &*rfs : nullptr, opts.proc_root, opts.sys_root);
  // The clamps the daemon's executor held as each pass began: its writes depend on them.
  knobs.cgroups().adopt_held_clamps(record->held_clamps);
  const exec::KnobReport planned = knobs.plan(plan.writes, plan.resctrl, &plan.system);
  int code = 0;
  if (opts.apply) code = report_failures(knobs.apply(plan.writes, plan.resctrl, &plan.system), err);

  nlohmann::ordered_json printed;
  printed["writes"] = printed_writes(planned, err);
  printed["evictions"] = nlohmann::ordered_json::array();
  for (const auto& e : plan.evictions) {
    printed["evictions"].push_back({{"pod", e.pod}, {"reason", e.reason}});
  }
  // The suppress status the daemon reports for this tick: BE's ceiling as the tick read it
  // with its writes over it. A fast pass leaves the reported status as its tick set it.
  const std::string be_dir = in.layout.qos_dir(cgroup::KubeQos::kBestEffort);
  const BeCeilingFiles be_files{fs.path_of(cgroup::Resource::kCpuQuota, be_dir).value_or(""),
                                fs.path_of(cgroup::Resource::kCpusetCpus, be_dir).value_or(""),
                                env->version};
  BeCeiling in_force = result.be_read;
  for (const auto& c : planned.written) {
    if (c.kind == exec::KnobKind::kCgroup) note_be_file_write(in_force, be_files, c.path, c.value);
  }
  // The batch resources the daemon reports after this tick: the colocation formula, bounded
  // by BE's CPU decision as the tick left it (batch_bound.h).
  batch::BatchResult batch = batch::calculate_batch(
      *snap, config::resolve_colocation(loaded.config.colocation, snap->node));
  bound_batch_cpu(batch, step.sustained_be_cpu_milli());
  printed["batch"] = nullptr;  // as `calc` prints a node whose colocation is off
  if (batch.batch_cpu_milli && batch.batch_memory_bytes) {
    printed["batch"] = {{kube::kResourceBatchCpu, *batch.batch_cpu_milli},
                        {kube::kResourceBatchMemory, *batch.batch_memory_bytes}};
  }
  if (batch.cpu_bound_milli) printed["batchCpuBoundBySloAllowance"] = *batch.cpu_bound_milli;
  const SuppressStatus status = suppress_status(in.threshold, in_force, cpus);
  printed["suppress"] = {{"policy", status.policy},
                         {"active", status.active},
                         {"beCpuLimitMillicores", status.be_cpu_limit_millicores}};
  // The fast passes after the tick, in order, each with the memory it began with and the
  // node facts the tick left; each reads the tree as it is now (with --apply: after the
  // writes before it), as the daemon's did at its moment.
  for (size_t i = 0; i < record->fast_passes.size(); ++i) {
    const FastPassRecord& pass = record->fast_passes[i];
    if (auto adopted = step.adopt(pass.memory, kSnapshotNow + pass.seconds_after); !adopted) {
      err << kCmd << "bad snapshot: " << adopted.error().message << "\n";
      return 2;
    }
    const Plan fast = step.fast({pass.node_cpu_milli, pass.non_be_cpu_milli, pass.stale, &reader});
    for (const auto& note : fast.notes)
      err << kCmd << "fast pass " << i << ": " << note << "\n";
    knobs.cgroups().adopt_held_clamps(pass.held_clamps);
    const exec::KnobReport fast_planned = knobs.plan(fast.writes, fast.resctrl);
    if (opts.apply)
      code = std::max(code, report_failures(knobs.apply(fast.writes, fast.resctrl), err));
    printed["fastPasses"].push_back({{"secondsAfterSnapshot", pass.seconds_after},
                                     {"trigger", pass.trigger},
                                     {"writes", printed_writes(fast_planned, err)}});
  }
  out << printed.dump(2) << "\n";
  return code;
}

}  // namespace gleaner::agent::step
