// The gang book on its own: gangs by key, and the index from core jobs back to them that
// decisions go through.
#include "scheduler/gang/gang_book.h"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gleaner::scheduler::gang {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace gang_book_test {
namespace {

TEST(GangBook, AJobLeadsBackToItsGangWhileTheGangIsThatJob) {
  GangBook book;
  Gang& g = book["c/ns/app"];
  g.key = "c/ns/app";
  g.job = 7;
  book.link_job(7, g.key);
  ASSERT_NE(book.key_of_job(7), nullptr);
  EXPECT_EQ(*book.key_of_job(7), "c/ns/app");
  EXPECT_EQ(book.gang_of_job(7), &book.find("c/ns/app")->second);
  EXPECT_EQ(book.key_of_job(8), nullptr);
  EXPECT_EQ(book.gang_of_job(8), nullptr);

  // The gang started a new run as job 9: job 7's entry stays (its late decisions still
  // find the key) but it is no longer that gang's job.
  g.job = 9;
  book.link_job(9, g.key);
  ASSERT_NE(book.key_of_job(7), nullptr);
  EXPECT_EQ(book.gang_of_job(7), nullptr);
  EXPECT_EQ(book.gang_of_job(9), &book.find("c/ns/app")->second);

  book.unlink_job(7);
  EXPECT_EQ(book.key_of_job(7), nullptr);
}

TEST(GangBook, AGoneGangIsNoJobsGang) {
  GangBook book;
  book["c/ns/a"].job = 1;
  book.link_job(1, "c/ns/a");
  book.erase("c/ns/a");
  EXPECT_FALSE(book.contains("c/ns/a"));
  EXPECT_EQ(book.gang_of_job(1), nullptr);
  ASSERT_NE(book.key_of_job(1), nullptr);  // until unlinked: the caller decides when
  EXPECT_EQ(book.size(), 0u);
}

TEST(GangBook, AnApplicationMovedToItsPlacementKeyIsFoundThere) {
  GangBook book;
  Gang g;
  g.key = "hub/ns/app";
  g.job = 3;
  auto [it, added] = book.emplace("placed:hub/ns/app", std::move(g));
  ASSERT_TRUE(added);
  book.link_job(3, "placed:hub/ns/app");
  EXPECT_EQ(book.gang_of_job(3), &it->second);
  EXPECT_FALSE(book.emplace("placed:hub/ns/app", Gang{}).second);  // one gang per key
}

TEST(GangBook, AMovedGangIsFiledUnderItsNewKeyWithItsJob) {
  GangBook book;
  Gang queued;
  queued.key = "app:hub/ns/app";
  queued.job = 4;
  book.put(std::move(queued));
  EXPECT_EQ(*book.key_of_job(4), "app:hub/ns/app");

  Gang g = book.take(book.find("app:hub/ns/app"));
  EXPECT_FALSE(book.contains("app:hub/ns/app"));
  EXPECT_EQ(*book.key_of_job(4), "app:hub/ns/app");  // linked until put elsewhere
  g.key = "m1/ns/app";
  Gang& placed = book.put(std::move(g));
  EXPECT_EQ(placed.key, "m1/ns/app");
  EXPECT_EQ(book.gang_of_job(4), &placed);

  book.remove(book.find("m1/ns/app"));
  EXPECT_EQ(book.size(), 0u);
  EXPECT_EQ(book.key_of_job(4), nullptr);  // the job's link goes with it

  Gang jobless;
  jobless.key = "app:hub/ns/other";
  book.put(std::move(jobless));
  book.remove(book.find("app:hub/ns/other"));
  EXPECT_EQ(book.size(), 0u);
}

TEST(GangBook, AWatchedGangIsVisitedUntilItIsGoneOrDone) {
  GangBook book;
  book["a"].key = "a";
  book["b"].key = "b";
  book.watch(GangBook::List::kWaiting, "a");
  book.watch(GangBook::List::kWaiting, "b");
  book.watch(GangBook::List::kWaiting, "gone");
  book.watch(GangBook::List::kRecovering, "b");

  std::vector<std::string> seen;
  book.visit(GangBook::List::kWaiting, [&](GangBook::iterator g) {
    seen.push_back(g->first);
    if (g->first == "a") return true;  // still waiting
    book.erase(g);                     // done, and its gang goes with it
    return false;
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b"}));  // "gone" is not visited
  EXPECT_EQ(book.watched(GangBook::List::kWaiting), std::set<std::string>{"a"});
  EXPECT_FALSE(book.contains("b"));
  // The other list is its own: "b" leaves it when a visit finds its gang gone.
  EXPECT_EQ(book.watched(GangBook::List::kRecovering), std::set<std::string>{"b"});
  book.visit(GangBook::List::kRecovering, [](GangBook::iterator) { return true; });
  EXPECT_TRUE(book.watched(GangBook::List::kRecovering).empty());
}

}  // namespace
}  // namespace gang_book_test
}  // namespace gleaner::scheduler::gang
