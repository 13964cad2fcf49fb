// Karmada's ResourceBinding as the fleet's hub reads and writes it: the binding of a template
// is found by its reference (not by a name Karmada's releases spell differently), a binding of
// an older object of the same name is not it, the schedule patch names one member with every
// replica and carries the version read, the generation the last schedule answered is read
// from the status, and malformed bindings name the field.
#include "scheduler/fleet/resource_binding.h"

#include <gtest/gtest.h>

#include "common/json_util.h"

namespace gleaner::scheduler::fleet {
namespace {

Json binding(const std::string& name, const std::string& app, const std::string& uid) {
  return Json{
      {"apiVersion", "work.karmada.io/v1alpha2"},
      {"kind", "ResourceBinding"},
      {"metadata",
       {{"name", name}, {"namespace", "spark"}, {"resourceVersion", "41"}, {"generation", 3}}},
      {"spec",
       {{"resource",
         {{"apiVersion", "sparkoperator.k8s.io/v1beta2"},
          {"kind", "SparkApplication"},
          {"namespace", "spark"},
          {"name", app},
          {"uid", uid}}},
        {"schedulerName", "gleaner-scheduler"},
        {"replicas", 5},
        {"clusters", Json::array({{{"name", "c1"}, {"replicas", 5}}})}}}};
}

TEST(ResourceBinding, TheTemplatesBindingIsFoundByItsReference) {
  const std::vector<Json> listed{binding("spark-pi-sparkapplication", "spark-pi", "old-uid"),
                                 binding("spark-sparkapplication-spark-pi", "spark-pi", "uid-2"),
                                 Json{{"metadata", {{"name", "broken"}}}}};
  auto b = binding_of(listed, "SparkApplication", "spark-pi", "uid-2");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->name, "spark-sparkapplication-spark-pi");
  EXPECT_EQ(b->scheduler_name, "gleaner-scheduler");
  EXPECT_EQ(b->replicas, 5);
  EXPECT_EQ(b->generation, 3);
  EXPECT_EQ(b->clusters, std::vector<std::string>{"c1"});
  EXPECT_FALSE(binding_of(listed, "SparkApplication", "spark-pi", "uid-3").has_value());
  EXPECT_FALSE(binding_of(listed, "PyTorchJob", "spark-pi", "uid-2").has_value());
}

TEST(ResourceBinding, TheGenerationTheLastScheduleAnsweredIsReadLeniently) {
  Json object = binding("b", "spark-pi", "u");
  auto unscheduled = parse_resource_binding(object);
  ASSERT_TRUE(unscheduled.ok());
  EXPECT_EQ(unscheduled->observed_generation, 0) << "no status yet";
  object["status"] = {{"schedulerObservedGeneration", 3}};
  auto scheduled = parse_resource_binding(object);
  ASSERT_TRUE(scheduled.ok());
  EXPECT_EQ(scheduled->observed_generation, 3);
  // A status we cannot read is one the next schedule writes over, not a binding refused.
  object["status"] = {{"schedulerObservedGeneration", "3"}};
  auto unreadable = parse_resource_binding(object);
  ASSERT_TRUE(unreadable.ok());
  EXPECT_EQ(unreadable->observed_generation, 0);
}

TEST(ResourceBinding, TheSchedulePatchNamesOneMemberWithEveryReplica) {
  auto b = parse_resource_binding(binding("b", "spark-pi", "u"));
  ASSERT_TRUE(b.ok());
  const Json to_c2 = schedule_patch(*b, "c2");
  EXPECT_EQ(to_c2["metadata"]["resourceVersion"], "41") << "conditional on the version read";
  EXPECT_EQ(to_c2["spec"]["clusters"], Json::parse(R"([{"name":"c2","replicas":5}])"));
  EXPECT_EQ(schedule_patch(*b, "")["spec"]["clusters"], Json::array());
  const Json status = scheduled_status_patch(*b, "c2", "2026-11-24T10:00:00Z");
  EXPECT_EQ(status["status"]["schedulerObservedGeneration"], 3);
  EXPECT_EQ(status["status"]["conditions"][0]["type"], "Scheduled");
  EXPECT_EQ(status["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(scheduled_status_patch(*b, "", "t")["status"]["conditions"][0]["status"], "False");
}

TEST(ResourceBinding, MalformedBindingsNameTheField) {
  auto error = [](const Json& j) {
    auto b = parse_resource_binding(j);
    return b.ok() ? std::string("ok") : b.error().message;
  };
  Json no_resource = binding("b", "a", "u");
  no_resource["spec"].erase("resource");
  EXPECT_NE(error(no_resource).find("ResourceBinding spark/b: spec.resource"), std::string::npos);
  Json bad_clusters = binding("b", "a", "u");
  bad_clusters["spec"]["clusters"] = Json::array({{{"replicas", 1}}});
  EXPECT_NE(error(bad_clusters).find("spec.clusters[0].name"), std::string::npos);
  Json bad_replicas = binding("b", "a", "u");
  bad_replicas["spec"]["replicas"] = -1;
  EXPECT_NE(error(bad_replicas).find("spec.replicas"), std::string::npos);
}

}  // namespace
}  // namespace gleaner::scheduler::fleet
