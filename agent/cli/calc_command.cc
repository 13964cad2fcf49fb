// `gleaner-agent calc --snapshot FILE --config-dir DIR`: runs the batch calculation the
// daemon runs, on a snapshot file, and prints the result with its intermediate terms.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/batch/batch_calculator.h"
#include "agent/cli/commands.h"
#include "agent/config/slo_config.h"
#include "agent/snapshot/node_snapshot.h"
#include "agent/step/batch_bound.h"
#include "agent/step/step_record.h"
#include "common/file_io.h"
#include "common/json_util.h"

namespace gleaner::agent {
namespace {

struct CalcOptions {
  std::string snapshot;
  std::string config_dir;
};

int run_calc(const CalcOptions& opts) {
  auto text = read_file(opts.snapshot);
  auto doc = text ? parse_json(*text, opts.snapshot) : Result<Json>(text.error());
  auto snap = doc ? snapshot::parse_snapshot(*doc, opts.snapshot)
                  : Result<snapshot::NodeSnapshot>(doc.error());
  // The step's record (probe readings, the agent's memory) when the file carries one: the
  // slo controller's memory bounds the batch CPU as the daemon's does.
  auto record = snap ? step::parse_step_record(*doc, opts.snapshot, /*now_s=*/0)
                     : Result<step::StepRecord>(snap.error());
  if (!record) {
    std::cerr << "gleaner-agent calc: bad snapshot: " << record.error().message << "\n";
    return 2;
  }
  if (!is_directory(opts.config_dir)) {
    // A mistyped path must not quietly compute the defaults: say so and stop. (An empty
    // directory is how to ask for the defaults.)
    std::cerr << "gleaner-agent calc: --config-dir " << opts.config_dir
              << " is not a directory (an empty directory gives the defaults)\n";
    return 2;
  }
  // Each failing key gets its safe fallback (there is no previous value here).
  config::LoadResult loaded = config::load_config_dir(opts.config_dir);
  for (const auto& e : loaded.errors) {
    std::cerr << "gleaner-agent calc: config key " << e.key << " rejected ("
              << config::to_string(e.kept) << "): " << e.error.message << "\n";
  }
  for (const auto& w : loaded.warnings)
    std::cerr << "gleaner-agent calc: config key " << w.key << ": " << w.error.message << "\n";
  config::NodeColocation colocation =
      config::resolve_colocation(loaded.config.colocation, snap->node);
  batch::BatchResult result = batch::calculate_batch(*snap, colocation);
  step::bound_batch_cpu(
      result, step::batch_cpu_bound(loaded.config.threshold.for_node(snap->node.metadata.labels),
                                    record->probe.runqueue_probe, record->memory.slo));

  nlohmann::ordered_json out;
  out["node"] = snap->node.metadata.name;
  out["colocation"] = gleaner::to_string(result.state);
  if (result.batch_cpu_milli && result.batch_memory_bytes) {
    out["batch"] = {{kube::kResourceBatchCpu, *result.batch_cpu_milli},
                    {kube::kResourceBatchMemory, *result.batch_memory_bytes}};
  } else {
    out["batch"] = nullptr;
  }
  out["explain"] = batch::explain(result, colocation);
  std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

void register_calc_command(CLI::App& app) {
  auto opts = std::make_shared<CalcOptions>();
  auto* cmd = app.add_subcommand(
      "calc", "Compute the node's batch resources from a snapshot file and an ack-slo-config dir");
  cmd->add_option("--snapshot", opts->snapshot, "Snapshot JSON (node, pods, metrics)")->required();
  cmd->add_option("--config-dir", opts->config_dir,
                  "ack-slo-config directory, one file per key (missing files: defaults)")
      ->required();
  cmd->callback([opts] { set_exit_code(run_calc(*opts)); });
}

}  // namespace gleaner::agent
