#include "agent/cli/commands.h"

namespace gleaner::agent {
namespace {
int g_exit_code = 0;
}  // namespace

int exit_code() {
  return g_exit_code;
}
void set_exit_code(int code) {
  g_exit_code = code;
}

void register_commands(CLI::App& app) {
  register_run_command(app);
  register_report_command(app);
  register_calc_command(app);
  register_plan_command(app);
}

}  // namespace gleaner::agent
