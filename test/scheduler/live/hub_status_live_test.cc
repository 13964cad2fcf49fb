// A hub application's life as its user sees it on the hub: the status spark-operator writes
// in the member shows on the hub object; deleted while its driver is not running (its copy
// made, the driver Pending or never created), its job ends at once, its room goes back, and
// nothing about it is retried, reclaimed or written afterwards.
#include <gtest/gtest.h>

#include "test/scheduler/live/hub_fixture.h"

namespace gleaner::scheduler::live_testing {
namespace {

TEST_F(HubLiveTest, TheHubObjectCarriesTheStatusTheMembersOperatorWrote) {
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), policy(group(), false, {"b"})));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));
  // b's operator runs it and writes its status as spark-operator does (api/v1beta2
  // SparkApplicationStatus).
  const Json status = Json::parse(R"({
      "applicationState": {"state": "RUNNING"},
      "driverInfo": {"podName": "pi-driver", "webUIAddress": "10.0.0.7:4040", "webUIPort": 4040,
                     "webUIServiceName": "pi-ui-svc"},
      "executorState": {"pi-exec-1": "RUNNING", "pi-exec-2": "PENDING"},
      "sparkApplicationId": "spark-0123", "submissionAttempts": 1, "executionAttempts": 1})");
  auto write_status = [&](const Json& st) {
    ASSERT_TRUE(member("b")
                    .client
                    ->patch(kube::spark_application_path("default", "pi") + "/status",
                            Json{{"status", st}}, kube::PatchType::kMerge)
                    .ok());
  };
  write_status(status);
  auto hub_status = [&] { return app("hub", "pi").value("status", Json::object()); };
  EXPECT_TRUE(until([&] {
    const Json s = hub_status();
    return s.value("driverInfo", Json::object()).value("podName", "") == "pi-driver";
  })) << hub_status().dump();
  Json shown = hub_status();
  EXPECT_EQ(shown["applicationState"]["state"], "RUNNING");
  EXPECT_EQ(shown["driverInfo"]["webUIAddress"], "10.0.0.7:4040");
  EXPECT_EQ(shown["executorState"]["pi-exec-2"], "PENDING");
  EXPECT_EQ(shown["sparkApplicationId"], "spark-0123");
  // A change within one state (an executor now running) shows too; a failure its message.
  Json running = status;
  running["executorState"]["pi-exec-2"] = "RUNNING";
  write_status(running);
  EXPECT_TRUE(until([&] {
    return hub_status().value("executorState", Json::object()) == running["executorState"];
  })) << hub_status().dump();
  Json failed = running;
  failed["applicationState"] = {{"state", "FAILED"},
                                {"errorMessage", "driver container failed with ExitCode: 1"}};
  write_status(failed);
  EXPECT_TRUE(until([&] {
    return hub_status().value("applicationState", Json::object()).value("errorMessage", "") ==
           "driver container failed with ExitCode: 1";
  })) << hub_status().dump();
  EXPECT_EQ(hub_status()["applicationState"]["state"], "FAILED");
}

TEST_F(HubReclaimLiveTest, ADeletedHubApplicationEndsItsJobAtOnceWhereverItStood) {
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), policy(group(), false, {"b"})));
  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }));
  ASSERT_TRUE(live_->job_of("b", "default", "pi").has_value()) << "admitted in b";
  auto b1_used = [&] {
    const Json doc = live_->nodes_json();
    for (const Json& n : doc["nodes"])
      if (n.value("cluster", "") == "b") return n["used"].value("cpuMillicores", int64_t{-1});
    return int64_t{-1};
  };
  ASSERT_EQ(b1_used(), 3000) << "a driver and two executors of one core";

  ASSERT_TRUE(member("hub").client->remove(kube::spark_application_path("default", "pi")).ok());
  EXPECT_TRUE(schedule_until([&] { return !live_->job_of("b", "default", "pi").has_value(); }))
      << live_->jobs_json().dump();
  EXPECT_EQ(b1_used(), 0);
  EXPECT_TRUE(until([&] { return !app("b", "pi").contains("spec"); }));
  const Json jobs = live_->jobs_json()["jobs"];
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].value("phase", ""), "Withdrawn");

  // Well past the 1 s driver start timeout, scheduling on: the gone application is not
  // reclaimed, placed again or written about.
  const auto placements = routed_count([](const gang::Action& a) {
    return a.kind == gang::ActionKind::kPlaceApp && a.name == "pi";
  });
  const auto past_timeout = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  ASSERT_TRUE(schedule_until([&] { return std::chrono::steady_clock::now() > past_timeout; }));
  EXPECT_EQ(routed_count([](const gang::Action& a) {
              return a.kind == gang::ActionKind::kUnplaceApp && a.name == "pi";
            }),
            0u);
  EXPECT_EQ(routed_count([](const gang::Action& a) {
              return a.kind == gang::ActionKind::kPlaceApp && a.name == "pi";
            }),
            placements);
  EXPECT_FALSE(member("hub").has_event("pi", "GleanerReclaimed"));
  EXPECT_EQ(live_->jobs_json()["jobs"].size(), 1u) << "not submitted again";
}

}  // namespace
}  // namespace gleaner::scheduler::live_testing
