// gleaner-scheduler: the central batch scheduler and its simulator.
#include <CLI/CLI.hpp>

#include "common/cli_main.h"
#include "scheduler/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"gleaner-scheduler: places Spark applications onto harvested batch capacity"};
  app.require_subcommand(1);
  gleaner::scheduler::register_commands(app);
  return gleaner::run_cli(app, argc, argv);
}
