// `gleaner-scheduler mutate` on what a new user has at hand: a manifest shaped like
// Koordinator's ClusterColocationProfile example (the Namespace first, then the profile,
// which names koord-scheduler), read whole, its Namespace skipped with a note, and the
// answer warning that koord-scheduler, not gleaner-scheduler, would place the pod.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/json_util.h"
#include "scheduler/cli/commands.h"
#include "test/support/temp_tree.h"

namespace gleaner::scheduler {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace mutate_command_test {
namespace {

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

Outcome mutate(std::vector<std::string> args) {
  args.insert(args.begin(), "mutate");
  CLI::App app;
  register_commands(app);
  set_exit_code(-1);
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  app.parse(args);
  Outcome o;
  o.out = ::testing::internal::GetCapturedStdout();
  o.err = ::testing::internal::GetCapturedStderr();
  o.code = exit_code();
  return o;
}

constexpr const char* kExample = R"(apiVersion: v1
kind: Namespace
metadata:
  name: analytics
  labels: {colocate: "yes"}
---
apiVersion: config.koordinator.sh/v1alpha1
kind: ClusterColocationProfile
metadata:
  name: analytics-batch
spec:
  namespaceSelector:
    matchLabels: {colocate: "yes"}
  selector:
    matchLabels: {app: report}
  qosClass: BE
  schedulerName: koord-scheduler
)";

constexpr const char* kPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: report-1
  namespace: analytics
  labels: {app: report}
spec:
  containers:
  - name: main
    resources: {requests: {cpu: 500m, memory: 256Mi}}
)";

TEST(MutateCommand, KoordinatorsExampleManifestLoadsItsProfileAndSkipsTheNamespace) {
  gleaner::testing::TempDir dir;
  dir.write("example.yaml", kExample);
  dir.write("pod.yaml", kPod);
  const Outcome o = mutate({"--pod", dir / "pod.yaml", "--profiles", dir / "example.yaml",
                            "--namespace-labels", "colocate=yes"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.err.find("note: " + (dir / "example.yaml") +
                       " document 1: Namespace analytics is not a ClusterColocationProfile; "
                       "skipped"),
            std::string::npos)
      << o.err;
  const Json answer = Json::parse(o.out);
  EXPECT_EQ(answer["outcome"], "mutated");
  ASSERT_TRUE(answer["warnings"].is_array()) << o.out;
  ASSERT_EQ(answer["warnings"].size(), 1u) << o.out;
  const std::string w = answer["warnings"][0];
  EXPECT_NE(w.find("ClusterColocationProfile analytics-batch spec.schedulerName is "
                   "koord-scheduler"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("remove spec.schedulerName from the profile"), std::string::npos) << w;
}

// Empty documents count, as an editor shows the file: the bad profile is document 4.
TEST(MutateCommand, ABadProfileIsNamedWithItsDocumentNotItsNeighbour) {
  gleaner::testing::TempDir dir;
  dir.write("example.yaml", std::string(kExample) + "---\n---\nkind: ClusterColocationProfile\n" +
                                "metadata: {name: gold}\nspec: {qosClass: Gold}\n");
  dir.write("pod.yaml", kPod);
  const Outcome o = mutate({"--pod", dir / "pod.yaml", "--profiles", dir / "example.yaml"});
  EXPECT_EQ(o.code, kExitUsage);
  EXPECT_NE(o.err.find((dir / "example.yaml") +
                       " document 4: ClusterColocationProfile gold: spec.qosClass Gold"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(o.err.find("analytics"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace mutate_command_test
}  // namespace gleaner::scheduler
