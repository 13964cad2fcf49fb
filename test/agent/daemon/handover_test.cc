#include "agent/daemon/handover.h"

#include <gtest/gtest.h>

namespace gleaner::agent {
namespace {

Json pod(const std::string& generation, bool owned = true) {
  Json p = Json::parse(R"({"metadata":{"name":"gleaner-agent-x","namespace":"kube-system",
    "labels":{"pod-template-generation":")" +
                       generation + R"("}}})");
  if (owned) {
    p["metadata"]["ownerReferences"] = Json::parse(
        R"([{"apiVersion":"apps/v1","kind":"DaemonSet","name":"gleaner-agent","controller":true}])");
  }
  return p;
}

Json daemon_set(int generation, bool deleting = false) {
  Json ds = {{"metadata", {{"name", "gleaner-agent"}, {"generation", generation}}}};
  if (deleting) ds["metadata"]["deletionTimestamp"] = "2026-11-23T21:00:00Z";
  return ds;
}

TEST(Handover, ARollingUpdateHandsOver) {
  auto d = decide_on_stop(pod("3"), daemon_set(4));
  EXPECT_TRUE(d.hand_over);
  EXPECT_NE(d.why.find("3 -> 4"), std::string::npos) << d.why;
}

TEST(Handover, EverythingElseRestores) {
  EXPECT_FALSE(decide_on_stop(pod("4"), daemon_set(4)).hand_over);         // same template
  EXPECT_FALSE(decide_on_stop(pod("3"), std::nullopt).hand_over);          // DaemonSet gone
  EXPECT_FALSE(decide_on_stop(pod("3"), daemon_set(4, true)).hand_over);   // being deleted
  EXPECT_FALSE(decide_on_stop(std::nullopt, daemon_set(4)).hand_over);     // Pod gone
  EXPECT_FALSE(decide_on_stop(pod("3", false), daemon_set(4)).hand_over);  // not a DaemonSet's
  EXPECT_FALSE(decide_on_stop(pod("x"), daemon_set(4)).hand_over);         // unreadable generation
}

TEST(Handover, FindsTheControllingDaemonSet) {
  EXPECT_EQ(owning_daemon_set(pod("1")), "gleaner-agent");
  EXPECT_EQ(owning_daemon_set(pod("1", false)), "");
}

}  // namespace
}  // namespace gleaner::agent
