#pragma once
// Registration of gleaner-scheduler's subcommands; each lives in its own file here.

#include <CLI/CLI.hpp>

namespace gleaner::scheduler {

void register_commands(CLI::App& app);
void register_simulate_command(CLI::App& app);
void register_run_command(CLI::App& app);
void register_mutate_command(CLI::App& app);
int exit_code();
void set_exit_code(int code);

}  // namespace gleaner::scheduler
