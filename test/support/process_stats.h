#pragma once
// What /proc says of one process, for benchmarks that measure another program's cost.

#include <sys/types.h>

namespace gleaner::testing {

// The CPU time (user + system, seconds) process `pid` and all its threads have used (fields 14
// and 15 of /proc/<pid>/stat); 0 when it is gone.
double process_cpu_seconds(pid_t pid);
// The same at nanosecond resolution: the on-CPU time of its live threads (the first field of
// /proc/<pid>/task/*/schedstat). Threads that have exited are not counted; for a window of a
// few seconds the clock-tick resolution of /proc/<pid>/stat (10 ms) would hide an agent's cost.
double threads_on_cpu_seconds(pid_t pid);

}  // namespace gleaner::testing
