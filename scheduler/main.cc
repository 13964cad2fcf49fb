// gleaner-scheduler: the central batch scheduler and its simulator.
#include <CLI/CLI.hpp>

#include "scheduler/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"gleaner-scheduler: places Spark applications onto harvested batch capacity"};
  app.require_subcommand(1);
  gleaner::scheduler::register_commands(app);
  CLI11_PARSE(app, argc, argv);
  return gleaner::scheduler::exit_code();
}
