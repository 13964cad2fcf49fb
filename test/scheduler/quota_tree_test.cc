#include "scheduler/core/quota_tree.h"

#include <gtest/gtest.h>

#include "common/quantity.h"

namespace gleaner::scheduler {
namespace {

using gleaner::kGi;
Resources cpu(int64_t cores) {
  return Resources{cores * 1000, cores * kGi};
}

QueueSpec queue(std::string name, std::string parent, std::optional<Resources> min,
                std::optional<Resources> max) {
  return QueueSpec{std::move(name), std::move(parent), min, max, std::nullopt};
}

TEST(QuotaTree, BuildsChildrenListedBeforeTheirParents) {
  auto tree = QuotaTree::build({queue("leaf", "mid", std::nullopt, std::nullopt),
                                queue("mid", "root", std::nullopt, cpu(8))});
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  auto leaf = tree->find("leaf");
  auto mid = tree->find("mid");
  ASSERT_TRUE(leaf && mid);
  EXPECT_EQ(tree->queue(*leaf).parent, *mid);
  EXPECT_EQ(tree->queue(*mid).parent, QuotaTree::kRoot);
}

TEST(QuotaTree, RejectsUnknownParentCycleDuplicateAndMinAboveMax) {
  auto unknown = QuotaTree::build({queue("a", "nope", std::nullopt, std::nullopt)});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown parent nope"), std::string::npos);

  auto cycle = QuotaTree::build(
      {queue("a", "b", std::nullopt, std::nullopt), queue("b", "a", std::nullopt, std::nullopt)});
  ASSERT_FALSE(cycle.ok());
  EXPECT_NE(cycle.error().message.find("cycle"), std::string::npos);

  auto dup = QuotaTree::build({queue("a", "root", std::nullopt, std::nullopt),
                               queue("a", "root", std::nullopt, std::nullopt)});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("declared twice"), std::string::npos);

  auto inverted = QuotaTree::build({queue("a", "root", cpu(4), cpu(2))});
  ASSERT_FALSE(inverted.ok());
  EXPECT_NE(inverted.error().message.find("queue a: min"), std::string::npos);
}

TEST(QuotaTree, MaxIsEnforcedOnEveryAncestor) {
  auto tree = QuotaTree::build({queue("org", "root", std::nullopt, cpu(6)),
                                queue("a", "org", std::nullopt, cpu(5)),
                                queue("b", "org", std::nullopt, cpu(5))});
  ASSERT_TRUE(tree.ok());
  QueueId a = *tree->find("a");
  QueueId b = *tree->find("b");
  EXPECT_TRUE(tree->within_max(a, cpu(5)));
  EXPECT_FALSE(tree->within_max(a, cpu(6)));
  EXPECT_TRUE(tree->exceeds_max_alone(a, cpu(6)));
  tree->charge(a, cpu(4));
  // b alone may take 5, but org's max of 6 leaves it 2 while a holds 4.
  EXPECT_TRUE(tree->within_max(b, cpu(2)));
  EXPECT_FALSE(tree->within_max(b, cpu(3)));
  EXPECT_FALSE(tree->exceeds_max_alone(b, cpu(3)));
  tree->refund(a, cpu(4));
  EXPECT_TRUE(tree->within_max(b, cpu(5)));
  EXPECT_EQ(tree->queue(QuotaTree::kRoot).used, Resources{});
}

TEST(QuotaTree, BorrowingMeansUsingMoreThanMin) {
  auto tree = QuotaTree::build({queue("a", "root", cpu(4), cpu(8))});
  ASSERT_TRUE(tree.ok());
  QueueId a = *tree->find("a");
  EXPECT_TRUE(tree->within_min(a, cpu(4)));
  EXPECT_FALSE(tree->within_min(a, cpu(5)));
  tree->charge(a, cpu(4));
  EXPECT_FALSE(tree->borrowing(a));
  tree->charge(a, cpu(1));
  EXPECT_TRUE(tree->borrowing(a));
}

TEST(QuotaTree, DefaultQueueIsCreatedOnDemandAndOthersMustExist) {
  QuotaTree tree;
  auto d = tree.resolve("");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(tree.queue(*d).name, "default");
  EXPECT_EQ(*tree.resolve("default"), *d);
  auto missing = tree.resolve("team-x");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("team-x"), std::string::npos);
  // Everything is borrowed in a queue without min.
  tree.charge(*d, cpu(1));
  EXPECT_TRUE(tree.borrowing(*d));
}

}  // namespace
}  // namespace gleaner::scheduler
