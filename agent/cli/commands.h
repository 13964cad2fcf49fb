#pragma once
// Registration of gleaner-agent's subcommands. Each subcommand lives in its own file
// under agent/cli/ and adds itself here.

#include <CLI/CLI.hpp>

#include "common/cli_main.h"  // exit_code(), set_exit_code()

namespace gleaner::agent {

void register_commands(CLI::App& app);

void register_report_command(CLI::App& app);
void register_run_command(CLI::App& app);
void register_calc_command(CLI::App& app);
void register_plan_command(CLI::App& app);

}  // namespace gleaner::agent
