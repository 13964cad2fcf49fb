#pragma once
// Registration of gleaner-agent's subcommands. Each subcommand lives in its own file
// under agent/cli/ and adds itself here.

#include <CLI/CLI.hpp>

namespace gleaner::agent {

void register_commands(CLI::App& app);
// The exit code set by the subcommand that ran.
int exit_code();
void set_exit_code(int code);

void register_report_command(CLI::App& app);
void register_run_command(CLI::App& app);
void register_calc_command(CLI::App& app);
void register_plan_command(CLI::App& app);

}  // namespace gleaner::agent
