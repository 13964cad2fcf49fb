#include "cgroup/originals_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <gtest/gtest.h>
#include <sys/mount.h>

#include "common/file_io.h"  // path_exists
#include "test/support/temp_tree.h"

namespace gleaner::cgroup {
namespace {
using gleaner::testing::TempDir;

Originals sample() {
  const std::string path = "/sys/fs/cgroup/cpu/kubepods/besteffort/cpu.cfs_quota_us";
  const std::string cpus = "/sys/fs/cgroup/cpuset/kubepods/besteffort/cpuset.cpus";
  return {{path, FileWrite{Resource::kCpuQuota, "kubepods/besteffort", path, "", "-1", "restore"}},
          {cpus, FileWrite{Resource::kCpusetCpus, "kubepods/besteffort", cpus, "", "", "restore"}}};
}

TEST(OriginalsFile, SavesAndLoadsEveryField) {
  TempDir t;
  OriginalsFile file(t / "state/originals.json", "boot-1");
  ASSERT_TRUE(file.save(sample()).ok());
  auto loaded = file.load();
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_FALSE(loaded->other_boot);
  ASSERT_EQ(loaded->originals.size(), 2u);
  for (const auto& [path, want] : sample()) {
    const auto& got = loaded->originals.at(path);
    EXPECT_EQ(got.resource, want.resource);
    EXPECT_EQ(got.cgroup, want.cgroup);
    EXPECT_EQ(got.content, want.content);  // "" (an inherited v2 cpuset) survives
  }
  ASSERT_TRUE(file.remove().ok());
  EXPECT_EQ(file.load().error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(file.remove().ok());  // absent is fine
}

TEST(OriginalsFile, OtherSectionsComeBackAsWritten) {
  TempDir t;
  OriginalsFile file(t / "o.json", "b");
  const Json resctrl = {{"createdGroups", {"BE"}}};
  ASSERT_TRUE(file.save(sample(), {{"resctrl", resctrl}}).ok());
  auto loaded = file.load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->sections.at("resctrl"), resctrl);
  EXPECT_FALSE(loaded->sections.contains("cgroups"));
}

TEST(OriginalsFile, NamesThatAreNotUtf8AreWrittenNotThrown) {
  TempDir t;
  const std::string odd = std::string("kubepods/besteffort/pod\xff");
  Originals o{{"/x", FileWrite{Resource::kCpuQuota, odd, "/x", "", "-1", "restore"}}};
  EXPECT_TRUE(OriginalsFile(t / "o.json", "b").save(o).ok());
}

TEST(OriginalsFile, ARecordFromAnotherBootRestoresNothing) {
  TempDir t;
  ASSERT_TRUE(OriginalsFile(t / "o.json", "boot-1").save(sample()).ok());
  auto loaded = OriginalsFile(t / "o.json", "boot-2").load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->other_boot);
  EXPECT_TRUE(loaded->originals.empty());
}

TEST(OriginalsFile, CorruptRecordsNameWhatIsWrong) {
  auto err = [](std::string_view text) {
    auto r = parse_originals(text, "/var/lib/gleaner/originals.json", "b");
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_NE(err("{\"format\":1,").find("originals.json"), std::string::npos);
  EXPECT_NE(err(R"({"format":2,"bootId":"b","cgroups":[]})").find("format"), std::string::npos);
  EXPECT_NE(err(R"({"format":1,"bootId":"b","cgroups":[{"path":"/x"}]})").find("cgroups[0]"),
            std::string::npos);
  EXPECT_NE(err(R"({"format":1,"bootId":"b","cgroups":[{"path":"/x","resource":"cpu_nope",)"
                R"("cgroup":"a","content":"1"}]})")
                .find("cpu_nope"),
            std::string::npos);
  EXPECT_NE(err(R"({"format":1,"bootId":"b","cgroups":[{"path":"/x","resource":"cpu_quota",)"
                R"("cgroup":"../../etc","content":"1"}]})")
                .find("not a relative cgroup path"),
            std::string::npos);
  EXPECT_EQ(err(R"({"format":1,"bootId":"b","cgroups":[]})"), "ok");
}

TEST(OriginalsFile, AFullDiskLeavesNoPartialFileBehind) {
  TempDir t;
  const std::string dir = t / "state";
  t.write("state/.keep", "");
  // Two pages of tmpfs, filled up (needs CAP_SYS_ADMIN, as the real-cgroup tests do).
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=8k") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  {
    std::ofstream filler(dir + "/filler");
    filler << std::string(64 * 1024, 'x') << std::flush;  // to ENOSPC: the rest is lost
  }
  OriginalsFile file(dir + "/originals.json", "boot-1");
  auto saved = file.save(sample());
  const bool tmp_left = path_exists(dir + "/originals.json.tmp");
  const bool file_left = path_exists(dir + "/originals.json");
  ::umount2(dir.c_str(), MNT_DETACH);
  ASSERT_FALSE(saved.ok());
  EXPECT_FALSE(tmp_left) << "a partial originals.json.tmp stays on a full disk";
  EXPECT_FALSE(file_left);
}

TEST(OriginalsFile, ACorruptRecordIsSetAside) {
  TempDir t;
  t.write("o.json", "not json");
  OriginalsFile file(t / "o.json", "b");
  EXPECT_EQ(file.load().error().code, ErrorCode::kParse);
  ASSERT_TRUE(file.set_aside().ok());
  EXPECT_EQ(t.read("o.json.corrupt"), "not json");
  EXPECT_EQ(file.load().error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace gleaner::cgroup
