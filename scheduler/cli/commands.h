#pragma once
// Registration of gleaner-scheduler's subcommands; each lives in its own file here.

#include <CLI/CLI.hpp>

#include "common/cli_main.h"  // exit_code(), set_exit_code()

namespace gleaner::scheduler {

void register_commands(CLI::App& app);
void register_simulate_command(CLI::App& app);
void register_run_command(CLI::App& app);
void register_mutate_command(CLI::App& app);

}  // namespace gleaner::scheduler
