// `gleaner-agent report`: a one-shot description of this node as the agent sees it.
#include <cstdio>

#include "agent/cli/commands.h"

namespace gleaner::agent {

void register_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("report", "Print a one-shot report of this node and exit");
  cmd->callback([] { std::puts("{}"); });
}

}  // namespace gleaner::agent
