#pragma once
// Starts a program (argv[0] an absolute path) as a child that dies with this process, for
// tests that run the real binaries. Header-only.

#include <functional>
#include <string>
#include <vector>

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace gleaner::testing {

#ifdef GLEANER_BINARY_DIR
// The agent this build made (the test binaries are given the build folder).
inline std::string agent_binary() {
  return std::string(GLEANER_BINARY_DIR) + "/bin/gleaner-agent";
}
#endif

// The child's pid (-1 when fork fails); an exec failure makes the child exit 127.
// `in_child` runs in the child just before the exec (to wire its standard streams).
inline pid_t spawn_program(std::vector<std::string> args,
                           const std::function<void()>& in_child = {}) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (in_child) in_child();
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace gleaner::testing
