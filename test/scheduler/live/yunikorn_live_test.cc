// A job kind added as one adapter (scheduler/kube/yunikorn_adapter.cc), live against the
// test API server: pods written for YuniKorn's gang scheduling (app-id label, task-group
// annotations) wait until every task group's minMember is there, then go together.
#include <gtest/gtest.h>

#include "kube/well_known.h"
#include "test/scheduler/live/kube_live_fixture.h"

namespace gleaner::scheduler {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace yunikorn_live_test {
namespace {

using live_testing::KubeLiveTest;
using live_testing::node_report;

constexpr int64_t kGiB = int64_t{1} << 30;

Json pod(const std::string& name, const Json& labels, const Json& annotations) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", "default"},
                {"labels", labels},
                {"annotations", annotations}}},
              {"spec",
               {{"schedulerName", "gleaner-scheduler"},
                {"containers",
                 {{{"name", "c"},
                   {"image", "busybox"},
                   {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}}}}}}};
}

// A member of application etl: a driver group of 1 and a worker group of 3.
Json member(const std::string& name, const std::string& group) {
  return pod(name, {{"yunikorn.apache.org/app-id", "etl"}},
             {{"yunikorn.apache.org/task-group-name", group},
              {"yunikorn.apache.org/task-groups",
               R"([{"name":"driver","minMember":1},{"name":"workers","minMember":3}])"}});
}

TEST_F(KubeLiveTest, YuniKornTaskGroupsWaitForEveryMinMemberThenGoTogether) {
  ASSERT_FALSE(live_->apply_report(node_report("n1", 1, 8000, 64 * kGiB, "c1")));
  for (const auto& [name, group] :
       {std::pair{"etl-driver", "driver"}, std::pair{"etl-w-0", "workers"},
        std::pair{"etl-w-1", "workers"}})
    ASSERT_TRUE(client_->create(kube::pods_path("default"), member(name, group)).ok());
  // A pod of no gang, created after them: once it is bound, the scheduler has seen the three
  // (one watch, in order) and passed over them.
  ASSERT_TRUE(client_->create(kube::pods_path("default"), pod("marker", {}, {})).ok());
  ASSERT_TRUE(schedule_until([&] { return !node_of("marker").empty(); }));
  live_->tick();
  for (const char* name : {"etl-driver", "etl-w-0", "etl-w-1"})
    EXPECT_EQ(node_of(name), "") << name << ": 3 of the 4 the task groups need";

  ASSERT_TRUE(client_->create(kube::pods_path("default"), member("etl-w-2", "workers")).ok());
  ASSERT_TRUE(schedule_until([&] {
    for (const char* name : {"etl-driver", "etl-w-0", "etl-w-1", "etl-w-2"})
      if (node_of(name).empty()) return false;
    return true;
  })) << live_->jobs_json().dump();
  const Json jobs = live_->jobs_json()["jobs"];
  int gangs_of_four = 0;
  for (const Json& j : jobs)
    if (j.dump().find("etl") != std::string::npos) ++gangs_of_four;
  EXPECT_EQ(gangs_of_four, 1) << jobs.dump();
}

}  // namespace
}  // namespace yunikorn_live_test
}  // namespace gleaner::scheduler
