#include "agent/daemon/descriptor_limit.h"

#include <algorithm>

#include <sys/resource.h>

namespace gleaner::agent {

size_t raise_descriptor_limit(size_t cap) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 512;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? rlim_t{1} << 20 : limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  const rlim_t usable = limit.rlim_cur == RLIM_INFINITY ? rlim_t{1} << 20 : limit.rlim_cur;
  return std::min<size_t>(static_cast<size_t>(usable / 2), cap);
}

}  // namespace gleaner::agent
