// The job-kind adapters (scheduler/kube/job_adapter.h): the registry's order, a pod read by
// the first kind that recognises it, and YuniKorn's task groups as one gang of peers whose
// min-available is the sum of the groups' minMember, a malformed annotation refused by name.
#include "scheduler/kube/job_adapter.h"

#include <gtest/gtest.h>

#include "common/file_io.h"
#include "common/json_util.h"
#include "kube/well_known.h"
#include "scheduler/kube/pod_view.h"
#include "scheduler/sim/simulator.h"

namespace gleaner::scheduler::kube_glue {
namespace job_adapter_test {
namespace {

const char* const kTwoGroups =
    R"([{"name": "driver", "minMember": 1, "minResource": {"cpu": "1"}},)"
    R"( {"name": "workers", "minMember": 3}])";

Json yunikorn_pod(const std::string& name, const std::string& group, const std::string& groups) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", "default"},
                {"uid", name + "-uid"},
                {"labels", {{"yunikorn.apache.org/app-id", "etl-42"}}},
                {"annotations",
                 {{"yunikorn.apache.org/task-group-name", group},
                  {"yunikorn.apache.org/task-groups", groups}}}}},
              {"spec",
               {{"schedulerName", "gleaner-scheduler"},
                {"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}};
}

gang::PodView read(const Json& json, const JobKindAdapter** kind = nullptr) {
  auto pod = kube::parse_pod(json);
  EXPECT_TRUE(pod.ok());
  return pod_view(pod.ok() ? *pod : kube::Pod{}, "c1", "gleaner-scheduler", JobOwners{}, kind);
}

TEST(JobAdapters, TheRegistryTriesTheKindsInItsOrderTheLonePodLast) {
  std::vector<std::string> names;
  for (const JobKindAdapter* a : job_kind_adapters())
    names.emplace_back(a->name());
  EXPECT_EQ(names, (std::vector<std::string>{"spark-operator", "training-job", "pod-group",
                                             "yunikorn", "spark-submit", "pod"}));
}

TEST(JobAdapters, YuniKornTaskGroupsAreOneGangOfTheirMinMembers) {
  const JobKindAdapter* kind = nullptr;
  const gang::PodView v = read(yunikorn_pod("etl-w-0", "workers", kTwoGroups), &kind);
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->name(), "yunikorn");
  EXPECT_EQ(v.role, gang::PodRole::kMember);
  EXPECT_EQ(v.gang, "YuniKorn:etl-42");
  EXPECT_EQ(v.min_available, 4) << "driver's 1 + workers' 3";
  EXPECT_EQ(v.selector_error, "");
  EXPECT_FALSE(kind->leads(v)) << "peers";

  // The older applicationId, as an annotation, names the application too.
  Json legacy = yunikorn_pod("etl-d", "driver", kTwoGroups);
  legacy["metadata"].erase("labels");
  legacy["metadata"]["annotations"]["applicationId"] = "etl-7";
  EXPECT_EQ(read(legacy).gang, "YuniKorn:etl-7");

  // Without a task group name: not YuniKorn's gang, a lone pod.
  Json lone = yunikorn_pod("etl-x", "workers", kTwoGroups);
  lone["metadata"]["annotations"].erase("yunikorn.apache.org/task-group-name");
  EXPECT_EQ(read(lone).role, gang::PodRole::kNone);
}

TEST(JobAdapters, AMalformedTaskGroupsAnnotationIsRefusedByName) {
  for (const auto& [groups, why] :
       {std::pair<std::string, std::string>{"[{", "yunikorn.apache.org/task-groups"},
        {R"([{"name": "workers", "minMember": -1}])", "task-groups[0]"},
        {R"([{"name": "driver", "minMember": 1}])", "no task group named workers"},
        {"{}", "expected a list of task groups"}}) {
    const gang::PodView v = read(yunikorn_pod("etl-w-0", "workers", groups));
    EXPECT_EQ(v.role, gang::PodRole::kMember) << groups;
    EXPECT_NE(v.selector_error.find(why), std::string::npos) << groups << ": " << v.selector_error;
    EXPECT_NE(v.selector_error.find("default/etl-w-0"), std::string::npos) << v.selector_error;
  }
}

TEST(JobAdapters, ThePodGroupLabelWinsOverSparkSubmitsApplicationId) {
  Json pod = yunikorn_pod("pg-0", "x", "[]");
  pod["metadata"]["annotations"] = Json::object();
  pod["metadata"]["labels"] = {{kube::kSparkRoleLabel, "driver"},
                               {kube::kSparkAppSelectorLabel, "spark-1"},
                               {kube::kPodGroupNameLabel, "pg"},
                               {kube::kPodGroupMinLabel, "2"}};
  const gang::PodView v = read(pod);
  EXPECT_EQ(v.gang, "podgroup:pg");
  EXPECT_EQ(v.min_available, 2);
  pod["metadata"]["labels"].erase(kube::kPodGroupNameLabel);
  const gang::PodView submit = read(pod);
  EXPECT_EQ(submit.gang, "spark-1");
  EXPECT_EQ(submit.role, gang::PodRole::kDriver);
  ASSERT_TRUE(submit.shape.has_value()) << "spark-submit's driver is a gang of one";
}

// scenarios/yunikorn-gang.json: the kind added as one adapter, in `simulate`. Two YuniKorn
// applications of a 1-core driver group and three 4-core workers on two 8-core nodes: only
// one fits at a time, so the second starts whole when the first ends, none of its pods bound
// before (read as lone pods, three of its workers would have gone at once).
TEST(JobAdapters, YuniKornApplicationsArePlacedWholeInTheSimulator) {
  auto text =
      read_file(std::string(GLEANER_SOURCE_DIR) + "/scheduler/scenarios/yunikorn-gang.json");
  ASSERT_TRUE(text.ok());
  auto out = sim::simulate(*text, "yunikorn-gang.json");
  ASSERT_TRUE(out.ok()) << out.error().message;
  const Json doc = Json::parse(*out);
  ASSERT_EQ(doc["jobs"].size(), 2u) << doc.dump();
  const Json& a = doc["jobs"][0];
  const Json& b = doc["jobs"][1];
  EXPECT_EQ(a["name"], "etl-a");
  EXPECT_EQ(a["state"], "Completed") << a.dump();
  EXPECT_EQ(a["startedAt"], 0);
  EXPECT_EQ(b["state"], "Completed") << b.dump();
  EXPECT_EQ(b["startedAt"], 600) << "waits whole for etl-a's room";
  ASSERT_EQ(b["pods"].size(), 4u) << b.dump();
  for (const Json& p : b["pods"])
    EXPECT_EQ(p["boundAt"], 600) << p.dump();
  // A fleet's hub does not place them.
  Json fleet = Json::parse(*text);
  fleet["clusters"] = {"c1", "c2"};
  for (Json& n : fleet["nodes"])
    n["cluster"] = "c1";
  auto refused = sim::simulate(fleet.dump(), "fleet.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("jobs[0].kind"), std::string::npos)
      << refused.error().message;
}

}  // namespace
}  // namespace job_adapter_test
}  // namespace gleaner::scheduler::kube_glue
