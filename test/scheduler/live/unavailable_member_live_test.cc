// A member whose API server stopped answering is not a placement target: a new hub
// application goes to a member that answers, the Event of its placement says why the other
// was skipped, and gleaner_scheduler_member_api_available says which member is away.
#include <gtest/gtest.h>

#include "test/scheduler/live/hub_fixture.h"

namespace gleaner::scheduler::live_testing {
namespace {

TEST_F(HubLiveTest, AMemberWhoseApiServerIsDownTakesNoNewApplication) {
  ASSERT_TRUE(member("hub").create(policies_path(group(), false), policy(group(), false, {})));
  // a (the better fit: less left over) loses its API server: connections are refused.
  member("a").api.reset();
  EXPECT_TRUE(until([&] {
    return metrics_.render({}).find("gleaner_scheduler_member_api_available{cluster=\"a\"} 0") !=
           std::string::npos;
  })) << metrics_.render({});
  EXPECT_NE(metrics_.render({}).find("gleaner_scheduler_member_api_available{cluster=\"b\"} 1"),
            std::string::npos);

  ASSERT_TRUE(member("hub").create(kube::spark_applications_path("default"), hub_app("pi")));
  ASSERT_TRUE(schedule_until([&] { return app("b", "pi").contains("spec"); }))
      << live_->jobs_json().dump();
  EXPECT_FALSE(routed([](const gang::Action& a) {
    return a.kind == gang::ActionKind::kPlaceApp && a.name == "pi" && a.target == "a";
  })) << "a does not answer";
  EXPECT_TRUE(until([&] {
    return member("hub").has_event("pi", "GleanerPlacedRemote",
                                   "member cluster a is skipped: its API server is unavailable");
  }));
}

}  // namespace
}  // namespace gleaner::scheduler::live_testing
