// The pods file source: re-read only when the file changes (the agent asks unchanged()
// every pass, then fetches), and content that failed to parse is not read again until the
// file changes (a malformed file costs one stat per pass, not a parse and a warning).
#include "agent/daemon/pod_source.h"

#include <gtest/gtest.h>

#include "test/support/temp_tree.h"

namespace gleaner::agent {
namespace {

using gleaner::testing::TempDir;

std::string pod_list(int pods) {
  std::string items;
  for (int i = 0; i < pods; ++i) {
    if (i > 0) items += ",";
    items.append(R"({"metadata":{"name":"p)")
        .append(std::to_string(i))
        .append(R"(","namespace":"default","uid":"u)")
        .append(std::to_string(i))
        .append(R"("},"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running"}})");
  }
  return std::string(R"({"kind":"PodList","apiVersion":"v1","items":[)") + items + "]}";
}

TEST(PodsFileSource, AFileIsReadAgainOnlyWhenItChanges) {
  TempDir t;
  t.write("pods.json", pod_list(1));
  PodsFileSource source(t / "pods.json");
  EXPECT_FALSE(source.unchanged()) << "never read";
  auto first = source.fetch();
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->size(), 1U);
  EXPECT_TRUE(source.unchanged());
  t.write("pods.json", pod_list(3));  // another size: changed whatever the clock's grain
  EXPECT_FALSE(source.unchanged());
  auto second = source.fetch();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->size(), 3U);
  EXPECT_TRUE(source.unchanged());
}

TEST(PodsFileSource, MalformedContentIsNotReadAgainUntilTheFileChanges) {
  TempDir t;
  t.write("pods.json", R"({"kind":"PodList","items":[{"metadata":)");
  PodsFileSource source(t / "pods.json");
  EXPECT_FALSE(source.unchanged());
  auto bad = source.fetch();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("pods.json"), std::string::npos) << bad.error().message;
  EXPECT_TRUE(source.unchanged()) << "the same bytes would fail the same way";
  EXPECT_EQ(source.fetch().error().message, bad.error().message);
  t.write("pods.json", pod_list(2));
  EXPECT_FALSE(source.unchanged());
  auto good = source.fetch();
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->size(), 2U);
}

TEST(PodsFileSource, AMissingFileSaysSo) {
  TempDir t;
  PodsFileSource source(t / "absent.json");
  EXPECT_FALSE(source.unchanged());
  auto r = source.fetch();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("absent.json"), std::string::npos);
}

kube::Pod listed(const std::string& phase, const std::vector<std::string>& ids) {
  std::string statuses;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) statuses += ",";
    statuses += R"({"name":"c)" + std::to_string(i) + R"(")" +
                (ids[i].empty() ? "" : R"(,"containerID":")" + ids[i] + R"(")") + "}";
  }
  auto pod =
      kube::parse_pod(Json::parse(R"({"metadata":{"name":"p","namespace":"default","uid":"u"},)"
                                  R"("spec":{"containers":[{"name":"c0"},{"name":"c1"}]},)"
                                  R"("status":{"phase":")" +
                                  phase + R"(","containerStatuses":[)" + statuses + "]}}"));
  EXPECT_TRUE(pod.ok());
  return *pod;
}

// kubelet lists a pod before its containers exist; their cgroups can be found only once
// each has an ID, so the agent lists again at the next pass until then.
TEST(ContainersPending, ListedAgainUntilEveryContainerOfALivePodHasItsId) {
  EXPECT_FALSE(containers_pending({}));
  EXPECT_TRUE(containers_pending({listed("Pending", {})})) << "no status yet";
  EXPECT_TRUE(containers_pending({listed("Running", {"containerd://a", ""})}));
  EXPECT_TRUE(containers_pending({listed("Running", {"containerd://a"})})) << "c1 not listed";
  EXPECT_FALSE(containers_pending({listed("Running", {"containerd://a", "containerd://b"})}));
  EXPECT_TRUE(containers_pending(
      {listed("Running", {"containerd://a", "containerd://b"}), listed("Pending", {"", ""})}));
  // Over: nothing will start any more.
  EXPECT_FALSE(containers_pending({listed("Succeeded", {"", ""})}));
  EXPECT_FALSE(containers_pending({listed("Failed", {})}));
}

}  // namespace
}  // namespace gleaner::agent
