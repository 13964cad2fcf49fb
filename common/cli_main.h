#pragma once
// What both binaries' main() does with their CLI11 app: `--version` (the build's version
// and commit), and the project's exit codes whatever CLI11 would use internally:
// 0 ok (also --help, --version), 1 runtime error, 2 usage or configuration error.

#include <CLI/CLI.hpp>

namespace gleaner {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitUsage = 2;  // a flag, or an input file it names, refused

// "0.1.0 (commit abc1234)", set by the build.
const char* build_version();

// The exit code a subcommand's callback sets (CLI11 callbacks return nothing).
int exit_code();
void set_exit_code(int code);

// Adds --version, parses, runs the chosen subcommand's callback and returns its exit code
// (`exit_code()` after the callback), or 2 for a usage error (CLI11's message printed).
int run_cli(CLI::App& app, int argc, char** argv);

}  // namespace gleaner
