// `gleaner-scheduler simulate --scenario FILE`: runs the scheduler core on a scenario in
// the discrete-event simulator and prints the outcome (spec/scenario.md).
#include <iostream>
#include <memory>
#include <string>

#include "common/cli_main.h"
#include "common/file_io.h"
#include "scheduler/cli/commands.h"
#include "scheduler/sim/simulator.h"

namespace gleaner::scheduler {
namespace {

// Bad input (unreadable file, malformed JSON, a field out of range) exits with 2.
int run_simulate(const std::string& path) {
  auto text = read_file(path);
  if (!text) {
    std::cerr << "gleaner-scheduler simulate: " << text.error().describe() << "\n";
    return kExitUsage;
  }
  auto out = sim::simulate(*text, path);
  if (!out) {
    std::cerr << "gleaner-scheduler simulate: " << out.error().message << "\n";
    return kExitUsage;
  }
  std::cout << *out;
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace

void register_simulate_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "simulate", "Run the scheduler on a scenario file in the simulator and print the outcome");
  cmd->add_option("--scenario", *path, "Scenario JSON (clusters, nodes, queues, policy, jobs)")
      ->required();
  cmd->callback([path] { set_exit_code(run_simulate(*path)); });
}

}  // namespace gleaner::scheduler
