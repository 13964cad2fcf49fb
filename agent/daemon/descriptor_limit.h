#pragma once
// The agent keeps a descriptor open per cgroup file it reads every pass (a few per pod).

#include <cstddef>

namespace gleaner::agent {

// Raises the soft RLIMIT_NOFILE to the hard limit (as Go programs such as koordlet do by
// default) and returns how many descriptors the cgroup reader may keep: half of the limit
// (the rest is for HTTP, BPF and the API link), at most `cap`.
size_t raise_descriptor_limit(size_t cap);

}  // namespace gleaner::agent
