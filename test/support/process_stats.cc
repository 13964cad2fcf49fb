#include "test/support/process_stats.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <system_error>

#include <unistd.h>

namespace gleaner::testing {

double process_cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string skip;
  for (int i = 3; i <= 13; ++i)  // fields 3..13: state .. cmajflt
    fields >> skip;
  double utime = 0;
  double stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double threads_on_cpu_seconds(pid_t pid) {
  std::error_code ec;
  double total = 0;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec), end;
       !ec && it != end; it.increment(ec)) {
    std::ifstream stat(it->path() / "schedstat");
    uint64_t on_cpu_ns = 0;
    if (stat >> on_cpu_ns) total += static_cast<double>(on_cpu_ns) / 1e9;
  }
  return total;
}

}  // namespace gleaner::testing
