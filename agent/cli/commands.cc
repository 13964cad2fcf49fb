#include "agent/cli/commands.h"

namespace gleaner::agent {
void register_commands(CLI::App& app) {
  register_run_command(app);
  register_report_command(app);
  register_calc_command(app);
  register_plan_command(app);
}

}  // namespace gleaner::agent
