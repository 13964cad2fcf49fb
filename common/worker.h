#pragma once
// One named thread that runs the jobs handed to it one at a time, so a caller's loop (the
// agent's sampling, the scheduler's informers) never waits on slow work such as an API
// server, and the work has one writer.
//
// Two lanes:
//  - ordered jobs run in the order posted. A key lets a caller ask whether a job of that
//    key still waits, and drop a new one when so (an eviction already asked for);
//  - latest jobs are one per key, the newest replacing the waiting one in its place: a
//    state to converge to, where only the newest value matters. They wait behind every
//    ordered job (someone waits on those; a state may lag a little).
// hold_until() keeps jobs from starting before a time (a caller's pace), and every()
// runs a tick between jobs, held or not. Time is the injected clock's: a fake clock's
// move is seen at the next post() or wake().

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"

namespace gleaner {

class Worker {
 public:
  using Job = std::function<void()>;

  // What a keyed ordered job does when a job of its key already waits.
  enum class IfWaiting { kQueueToo, kDrop };
  // What stop() does with the jobs still waiting.
  enum class Pending { kDrop, kRun };

  // `name`: the thread's name (its first 15 characters, what top -H shows) and the logs'.
  // `clock`: the system clock when null; it must outlive the worker.
  explicit Worker(std::string name, const Clock* clock = nullptr);
  ~Worker();  // stop(Pending::kDrop)
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Starts the thread; jobs posted before wait for it. Once only.
  void start();
  // Stops taking jobs, runs or drops the waiting ones, lets the running one finish and
  // joins the thread. Idempotent.
  void stop(Pending pending = Pending::kDrop);

  // An ordered job; false when dropped (stopped, or kDrop and a job of `key` waits).
  bool post(Job job);
  bool post(const std::string& key, Job job, IfWaiting if_waiting);
  // The latest job of `key`: replaces the waiting one of that key; false when stopped.
  bool post_latest(const std::string& key, Job job);

  // Whether an ordered job of `key` waits (the running one does not).
  [[nodiscard]] bool waiting(const std::string& key) const;
  // Whether any ordered job waits: a latest job working through a long list may yield.
  [[nodiscard]] bool ordered_waiting() const;

  // No job starts before `until` (the latest call wins); ticks still run.
  void hold_until(SteadyTime until);
  // Runs `tick` on the thread every `period` from start(), between jobs, busy or not;
  // set before start().
  void every(std::chrono::nanoseconds period, Job tick);
  // Looks at the clock again now (after a fake clock moved).
  void wake();

  // Jobs and ticks that threw (logged; the thread goes on).
  [[nodiscard]] uint64_t failures() const;

 private:
  struct Entry {
    std::string key;
    Job job;
  };
  void run();
  // The next job to run, or nullopt when the thread is to end. Waits for one.
  std::optional<Job> next(std::unique_lock<std::mutex>& lock);
  void call(const Job& job) noexcept;

  const std::string name_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> ordered_;
  std::deque<Entry> latest_;
  std::optional<SteadyTime> hold_;
  std::chrono::nanoseconds tick_period_{0};
  Job tick_;
  SteadyTime next_tick_{};
  bool stopping_ = false;
  Pending pending_ = Pending::kDrop;
  uint64_t failures_ = 0;
  std::thread thread_;
};

}  // namespace gleaner
