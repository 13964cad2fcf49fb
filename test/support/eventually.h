#pragma once
// Waiting on a condition with a deadline: the tests' only way to wait for something another
// thread or process does (never a fixed sleep).

#include <chrono>
#include <functional>
#include <thread>

namespace gleaner::testing {

// Polls `condition` (every `poll`) until it holds or `deadline` passes; returns whether it
// held. A condition that costs a request to a real server deserves a longer poll.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds deadline = std::chrono::seconds(10),
                       std::chrono::milliseconds poll = std::chrono::milliseconds(1)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(poll);  // poll interval, not a wait
  }
  return condition();
}

}  // namespace gleaner::testing
