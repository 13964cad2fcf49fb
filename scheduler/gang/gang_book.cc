// The gang book's job index and moves (gang_book.h).
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

Gang GangBook::take(iterator it) {
  Gang g = std::move(it->second);
  gangs_.erase(it);
  return g;
}

Gang& GangBook::put(Gang g) {
  if (g.job) link_job(*g.job, g.key);
  const std::string key = g.key;
  return gangs_[key] = std::move(g);
}

void GangBook::remove(iterator it) {
  if (it->second.job) unlink_job(*it->second.job);
  gangs_.erase(it);
}

}  // namespace gleaner::scheduler::gang
