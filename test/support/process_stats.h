#pragma once
// What /proc says of one process, for benchmarks that measure another program's cost.

#include <sys/types.h>

namespace gleaner::testing {

// The CPU time (user + system, seconds) process `pid` and all its threads have used (fields 14
// and 15 of /proc/<pid>/stat); 0 when it is gone.
double process_cpu_seconds(pid_t pid);

}  // namespace gleaner::testing
