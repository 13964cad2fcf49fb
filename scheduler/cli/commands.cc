#include "scheduler/cli/commands.h"

namespace gleaner::scheduler {
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
  register_simulate_command(app);
  register_run_command(app);
  register_mutate_command(app);
}

}  // namespace gleaner::scheduler
