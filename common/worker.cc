#include "common/worker.h"

#include <algorithm>
#include <exception>
#include <utility>

#include <pthread.h>
#include <spdlog/spdlog.h>

namespace gleaner {
namespace {

const Clock& default_clock() {
  static const SystemClock clock;
  return clock;
}

}  // namespace

Worker::Worker(std::string name, const Clock* clock)
    : name_(std::move(name)), clock_(clock != nullptr ? *clock : default_clock()) {}

Worker::~Worker() {
  stop(Pending::kDrop);
}

void Worker::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  if (tick_) next_tick_ = clock_.now() + tick_period_;
  thread_ = std::thread([this] { run(); });
}

void Worker::stop(Pending pending) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) pending_ = pending;
    stopping_ = true;
  }
  cv_.notify_all();
  // From a job of its own the thread cannot be joined; it ends once that job returns.
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool Worker::post(Job job) {
  return post(std::string(), std::move(job), IfWaiting::kQueueToo);
}

bool Worker::post(const std::string& key, Job job, IfWaiting if_waiting) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    if (if_waiting == IfWaiting::kDrop && !key.empty() &&
        std::any_of(ordered_.begin(), ordered_.end(), [&](const Entry& e) { return e.key == key; }))
      return false;
    ordered_.push_back({key, std::move(job)});
  }
  cv_.notify_all();
  return true;
}

bool Worker::post_latest(const std::string& key, Job job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    auto it =
        std::find_if(latest_.begin(), latest_.end(), [&](const Entry& e) { return e.key == key; });
    if (it != latest_.end()) {
      it->job = std::move(job);
    } else {
      latest_.push_back({key, std::move(job)});
    }
  }
  cv_.notify_all();
  return true;
}

bool Worker::waiting(const std::string& key) const {
  std::lock_guard lock(mu_);
  return std::any_of(ordered_.begin(), ordered_.end(),
                     [&](const Entry& e) { return e.key == key; });
}

bool Worker::ordered_waiting() const {
  std::lock_guard lock(mu_);
  return !ordered_.empty();
}

void Worker::hold_until(SteadyTime until) {
  {
    std::lock_guard lock(mu_);
    hold_ = until;
  }
  cv_.notify_all();
}

void Worker::every(std::chrono::nanoseconds period, Job tick) {
  std::lock_guard lock(mu_);
  tick_period_ = std::max(period, std::chrono::nanoseconds(1));
  tick_ = std::move(tick);
}

void Worker::wake() {
  cv_.notify_all();
}

uint64_t Worker::failures() const {
  std::lock_guard lock(mu_);
  return failures_;
}

std::optional<Worker::Job> Worker::next(std::unique_lock<std::mutex>& lock) {
  const auto take = [](std::deque<Entry>& lane) {
    Job job = std::move(lane.front().job);
    lane.pop_front();
    return job;
  };
  for (;;) {
    if (stopping_) {
      if (pending_ == Pending::kDrop) return std::nullopt;
      if (!ordered_.empty()) return take(ordered_);
      if (!latest_.empty()) return take(latest_);
      return std::nullopt;
    }
    const SteadyTime now = clock_.now();
    if (tick_ && now >= next_tick_) {
      next_tick_ = now + tick_period_;
      return tick_;
    }
    const bool jobs = !ordered_.empty() || !latest_.empty();
    const bool held = hold_ && now < *hold_;
    if (jobs && !held) return take(!ordered_.empty() ? ordered_ : latest_);
    // Asleep until a post, a stop, the tick or the hold's end, whichever is first.
    std::optional<SteadyTime> until;
    if (tick_) until = next_tick_;
    if (jobs && held) until = until ? std::min(*until, *hold_) : *hold_;
    if (until) {
      cv_.wait_for(lock, *until - now);
    } else {
      cv_.wait(lock);
    }
  }
}

void Worker::call(const Job& job) noexcept {
  try {
    job();
    return;
  } catch (const std::exception& e) {
    spdlog::error("worker {}: a job failed: {}", name_, e.what());
  } catch (...) {
    spdlog::error("worker {}: a job failed with an unknown exception", name_);
  }
  std::lock_guard lock(mu_);
  ++failures_;
}

void Worker::run() {
  // The kernel keeps 15 characters of a thread's name.
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  std::unique_lock lock(mu_);
  while (auto job = next(lock)) {
    lock.unlock();
    call(*job);
    lock.lock();
  }
}

}  // namespace gleaner
