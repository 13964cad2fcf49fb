// The gang book's job index (gang_book.h).
#include "scheduler/gang/gang_book.h"

namespace gleaner::scheduler::gang {

const std::string* GangBook::key_of_job(JobId job) const {
  auto it = job_gang_.find(job);
  return it == job_gang_.end() ? nullptr : &it->second;
}

const Gang* GangBook::gang_of_job(JobId job) const {
  const std::string* key = key_of_job(job);
  if (key == nullptr) return nullptr;
  auto g = gangs_.find(*key);
  return g != gangs_.end() && g->second.job == job ? &g->second : nullptr;
}

}  // namespace gleaner::scheduler::gang
