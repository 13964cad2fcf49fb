// inotify on the real cgroup filesystem: a new pod directory under a QoS directory is seen.
#include <gtest/gtest.h>
#include <poll.h>

#include "agent/daemon/cgroup_watch.h"
#include "cgroup/cgroup_fs.h"
#include "test/support/scratch_cgroup.h"

namespace gleaner::agent {
namespace {

TEST(CgroupWatchReal, NewPodCgroupWakesTheWatcher) {
  auto reason = gleaner::testing::real_cgroup_skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  gleaner::testing::ScratchCgroups scratch;
  scratch.mkdir("kubepods/besteffort");
  cgroup::CgroupFs fs(scratch.root(), scratch.version());
  auto watch = CgroupWatch::open({fs.dir_of(cgroup::Resource::kCpuShares, "kubepods/besteffort")});
  ASSERT_TRUE(watch.ok()) << watch.error().message;
  EXPECT_FALSE(watch->drain());  // nothing yet

  scratch.mkdir("kubepods/besteffort/podnew");
  pollfd pfd{watch->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 5000), 1) << "no inotify event within 5 s";
  EXPECT_TRUE(watch->drain());
  EXPECT_FALSE(watch->drain());
}

TEST(CgroupWatchReal, NothingToWatchIsAnError) {
  EXPECT_EQ(CgroupWatch::open({"/nonexistent/kubepods"}).error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace gleaner::agent
