// CgroupFs keeps a descriptor per file it reads (kernfs files are read again from offset 0),
// up to a cap; beyond the cap reads open and close, so a node with more cgroup files than
// the descriptor limit allows keeps working.
#include <dirent.h>
#include <gtest/gtest.h>

#include "cgroup/cgroup_fs.h"
#include "test/support/temp_tree.h"

namespace gleaner::cgroup {
namespace {

using gleaner::testing::TempDir;

size_t open_descriptors() {
  size_t n = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  while (const dirent* e = ::readdir(dir))
    if (e->d_name[0] != '.') ++n;
  ::closedir(dir);
  return n;
}

TEST(DescriptorCache, FilesBeyondTheCapAreReadWithoutKeepingADescriptor) {
  TempDir t;
  t.write("a/cpu.shares", "1024\n");
  t.write("b/cpu.shares", "2\n");
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  fs.set_descriptor_cap(1);
  ASSERT_EQ(*fs.read_cached(t / "a/cpu.shares"), "1024\n");
  EXPECT_EQ(fs.cached_descriptors(), 1U);
  const size_t before = open_descriptors();
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(*fs.read_cached(t / "b/cpu.shares"), "2\n");
  EXPECT_EQ(fs.cached_descriptors(), 1U) << "the cap keeps b's descriptor out";
  EXPECT_EQ(open_descriptors(), before) << "b's reads closed what they opened";
  // b's content is read afresh each time.
  t.write("b/cpu.shares", "3\n");
  EXPECT_EQ(*fs.read_cached(t / "b/cpu.shares"), "3\n");
  // The kept file still reads (from its descriptor), and forgetting its cgroup closes it.
  EXPECT_EQ(*fs.read_cached(t / "a/cpu.shares"), "1024\n");
  fs.forget("a");
  EXPECT_EQ(fs.cached_descriptors(), 0U);
}

TEST(DescriptorCache, UnderTheCapEachFileKeepsOneDescriptor) {
  TempDir t;
  t.write("a/cpu.shares", "1024\n");
  t.write("b/cpu.shares", "2\n");
  CgroupFs fs(t.path(), CgroupVersion::kV1);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(fs.read_cached(t / "a/cpu.shares").ok());
    ASSERT_TRUE(fs.read_cached(t / "b/cpu.shares").ok());
  }
  EXPECT_EQ(fs.cached_descriptors(), 2U);
}

}  // namespace
}  // namespace gleaner::cgroup
