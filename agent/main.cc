// gleaner-agent: the node daemon and its offline subcommands.
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "agent/cli/commands.h"
#include "common/cli_main.h"

int main(int argc, char** argv) {
  CLI::App app{"gleaner-agent: harvests idle node capacity for batch work and protects LS pods"};
  app.require_subcommand(1);
  gleaner::agent::register_commands(app);
  return gleaner::run_cli(app, argc, argv);
}
