// A cgroup directory's level, counted with `..` up to its mount's root.
#include "agent/bpf/cgroup_level.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "test/support/temp_tree.h"

namespace gleaner::agent::bpf {
namespace {

TEST(CgroupLevel, EachDirectoryBelowCountsOneAndALinkCountsFromWhereItLeads) {
  testing::TempDir tree;
  tree.mkdir("kubepods/burstable/pod1/ctr");
  tree.mkdir("links/deeper/still");  // as the scratch hierarchies' symlink roots
  std::filesystem::create_symlink(tree / "kubepods", tree / "links/deeper/still/link");
  const auto top = cgroup_level(tree / "kubepods");
  ASSERT_TRUE(top.ok()) << top.error().describe();
  EXPECT_EQ(*cgroup_level(tree / "kubepods/burstable/pod1"), *top + 2);
  EXPECT_EQ(*cgroup_level(tree / "kubepods/burstable/pod1/ctr"), *top + 3);
  // Counted from where the link leads, not from where it sits (3 levels deeper).
  EXPECT_EQ(*cgroup_level(tree / "links/deeper/still/link/burstable"), *top + 1);
  EXPECT_EQ(*cgroup_level("/"), 0U);
}

TEST(CgroupLevel, AMissingDirectoryIsAnErrorNamingIt) {
  testing::TempDir tree;
  const auto level = cgroup_level(tree / "gone");
  ASSERT_FALSE(level.ok());
  EXPECT_EQ(level.error().code, ErrorCode::kNotFound);
  EXPECT_NE(level.error().message.find(tree / "gone"), std::string::npos);
}

}  // namespace
}  // namespace gleaner::agent::bpf
