// The worker thread: order, latest-wins coalescing, keyed duplicates, stop with jobs
// waiting, a throwing job, and time (hold, tick) from an injected clock.
#include "common/worker.h"

#include <atomic>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test/support/eventually.h"

namespace gleaner {
namespace {
using gleaner::testing::eventually;
using namespace std::chrono_literals;

// What the jobs did, in order, written from the worker thread and read by the test.
class Record {
 public:
  Worker::Job add(std::string what) {
    return [this, what] {
      std::lock_guard lock(mu_);
      done_.push_back(what);
    };
  }
  std::vector<std::string> done() const {
    std::lock_guard lock(mu_);
    return done_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> done_;
};

TEST(Worker, RunsOrderedJobsInTheOrderPosted) {
  Record record;
  Worker worker("test-order");
  worker.start();
  std::vector<std::string> expected;
  for (int i = 0; i < 200; ++i) {
    expected.push_back(std::to_string(i));
    ASSERT_TRUE(worker.post(record.add(expected.back())));
  }
  std::promise<void> last;
  worker.post([&] { last.set_value(); });
  ASSERT_EQ(last.get_future().wait_for(30s), std::future_status::ready);
  EXPECT_EQ(record.done(), expected);
}

TEST(Worker, LatestJobsReplaceTheirKeyInPlaceAndWaitBehindOrderedOnes) {
  Record record;
  Worker worker("test-latest");  // not started: everything waits, then stop runs it
  worker.post_latest("status", record.add("status-1"));
  worker.post(record.add("bind-1"));
  worker.post_latest("sweep", record.add("sweep"));
  worker.post_latest("status", record.add("status-2"));
  worker.post(record.add("bind-2"));
  EXPECT_TRUE(worker.ordered_waiting());
  worker.start();
  worker.stop(Worker::Pending::kRun);
  EXPECT_EQ(record.done(), (std::vector<std::string>{"bind-1", "bind-2", "status-2", "sweep"}));
  EXPECT_FALSE(worker.post(record.add("late"))) << "a stopped worker takes no job";
}

TEST(Worker, AKeyedJobCanBeDroppedWhileOneOfItsKeyWaits) {
  Record record;
  Worker worker("test-keys");
  EXPECT_TRUE(worker.post("spark/exec-1", record.add("first"), Worker::IfWaiting::kDrop));
  EXPECT_FALSE(worker.post("spark/exec-1", record.add("dropped"), Worker::IfWaiting::kDrop));
  EXPECT_TRUE(worker.waiting("spark/exec-1"));
  EXPECT_FALSE(worker.waiting("spark/exec-2"));
  EXPECT_TRUE(worker.post("spark/exec-1", record.add("queued too"), Worker::IfWaiting::kQueueToo));
  worker.start();
  worker.stop(Worker::Pending::kRun);
  EXPECT_EQ(record.done(), (std::vector<std::string>{"first", "queued too"}));
  EXPECT_FALSE(worker.waiting("spark/exec-1"));
}

// The thread is kept in a first job until stop() has begun, with two jobs waiting.
std::vector<std::string> stop_with_two_waiting(Worker::Pending pending) {
  Record record;
  Worker worker("test-stop");
  std::promise<void> started;
  std::promise<void> release;
  worker.post([&] {
    started.set_value();
    release.get_future().wait();
  });
  worker.start();
  EXPECT_EQ(started.get_future().wait_for(30s), std::future_status::ready);
  worker.post(record.add("second"));
  worker.post_latest("state", record.add("third"));
  auto stopped = std::async(std::launch::async, [&] { worker.stop(pending); });
  // Once stop() has begun the worker refuses jobs; only then is the first job let go.
  EXPECT_TRUE(eventually([&] { return !worker.post([] {}); }, 30s));
  release.set_value();
  EXPECT_EQ(stopped.wait_for(30s), std::future_status::ready);
  return record.done();
}

TEST(Worker, StopDropsTheWaitingJobsOrRunsThemFirst) {
  EXPECT_TRUE(stop_with_two_waiting(Worker::Pending::kDrop).empty());
  EXPECT_EQ(stop_with_two_waiting(Worker::Pending::kRun),
            (std::vector<std::string>{"second", "third"}));
}

TEST(Worker, AJobThatThrowsIsCountedAndTheThreadGoesOn) {
  Worker worker("test-throw");
  worker.start();
  worker.post([] { throw std::runtime_error("bad job"); });
  worker.post([] { throw 7; });  // not even an exception type
  std::promise<void> after;
  worker.post([&] { after.set_value(); });
  ASSERT_EQ(after.get_future().wait_for(30s), std::future_status::ready);
  EXPECT_EQ(worker.failures(), 2u);
}

TEST(Worker, HeldJobsStartOnceTheInjectedClockPassesTheHold) {
  FakeClock clock;
  Record record;
  Worker worker("test-hold", &clock);
  worker.start();
  worker.hold_until(clock.now() + 10s);
  worker.post(record.add("held"));
  // The real time a busy machine takes cannot release it: only the clock's time counts.
  EXPECT_FALSE(eventually([&] { return !record.done().empty(); }, 300ms));
  clock.advance(9s);
  worker.wake();
  EXPECT_FALSE(eventually([&] { return !record.done().empty(); }, 300ms));
  clock.advance(1s);
  worker.wake();
  EXPECT_TRUE(eventually([&] { return record.done().size() == 1; }, 30s));
}

TEST(Worker, TicksFollowTheInjectedClockAndRunWhileJobsAreHeld) {
  FakeClock clock;
  std::atomic<int> ticks{0};
  Worker worker("test-tick", &clock);
  worker.every(1s, [&] { ++ticks; });
  worker.start();
  worker.hold_until(clock.now() + std::chrono::hours(1));
  worker.post([] {});
  clock.advance(1s);
  worker.wake();
  EXPECT_TRUE(eventually([&] { return ticks == 1; }, 30s));
  clock.advance(1s);
  worker.wake();
  EXPECT_TRUE(eventually([&] { return ticks == 2; }, 30s));
  EXPECT_TRUE(worker.ordered_waiting()) << "the held job still waits";
}

}  // namespace
}  // namespace gleaner
