#include "scheduler/cli/commands.h"

namespace gleaner::scheduler {
void register_commands(CLI::App& app) {
  register_simulate_command(app);
  register_run_command(app);
  register_mutate_command(app);
}

}  // namespace gleaner::scheduler
