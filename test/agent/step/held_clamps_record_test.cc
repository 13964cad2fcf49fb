// The executor's held clamps in the step record (`heldClamps`, beside `agent` and in each
// fast pass): written, read back, and refused with the field named when malformed.
#include <gtest/gtest.h>

#include "agent/step/step_record.h"
#include "common/json_util.h"

namespace gleaner::agent::step {
namespace {
using cgroup::HeldClamp;
using cgroup::Resource;

TEST(StepRecord, HeldClampsRoundTripForTheTickAndEachFastPass) {
  StepRecord r;
  r.held_clamps = {{Resource::kCpuQuota, "kubepods/besteffort/pod1/c1", "150000", "28500"}};
  FastPassRecord pass;
  pass.seconds_after = 0.05;
  pass.held_clamps = {{Resource::kCpuQuota, "kubepods/besteffort/pod1/c1", "150000", "61300"},
                      {Resource::kCpusetCpus, "kubepods/besteffort/pod1/c2", "0-3", "0"}};
  r.fast_passes = {FastPassRecord{}, pass};
  Json doc = Json::object();
  add_step_record(doc, r, 1000);
  EXPECT_EQ(doc["heldClamps"][0]["resource"], "cpu_quota") << doc.dump();
  EXPECT_EQ(doc["heldClamps"][0]["clampedTo"], "28500") << doc.dump();
  auto back = parse_step_record(doc, "snap.json", 5000);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->held_clamps, r.held_clamps);
  ASSERT_EQ(back->fast_passes.size(), 2u);
  EXPECT_TRUE(back->fast_passes[0].held_clamps.empty());
  EXPECT_EQ(back->fast_passes[1].held_clamps, pass.held_clamps);

  // None held, no key: a record without clamps reads as before.
  Json plain = Json::object();
  add_step_record(plain, StepRecord{}, 0);
  EXPECT_FALSE(plain.contains("heldClamps"));
}

TEST(StepRecord, ABadHeldClampNamesTheEntryAndField) {
  auto err = [](const std::string& text) {
    auto r = parse_step_record(Json::parse(text), "snap.json", 0);
    return r.ok() ? std::string("ok") : r.error().message;
  };
  const std::string good =
      R"({"resource": "cpu_quota", "cgroup": "kubepods/besteffort/p/c", "wish": "150000",
          "clampedTo": "28500"})";
  EXPECT_EQ(err(R"({"heldClamps": [)" + good + "]}"), "ok");
  for (const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"heldClamps": {}})", "snap.json: heldClamps"},
           {R"({"heldClamps": [)" + good + R"(, 3]})", "snap.json: heldClamps[1]"},
           {R"({"heldClamps": [{"resource": "cpu_quota", "cgroup": "c", "wish": "1"}]})",
            "snap.json: heldClamps[0].clampedTo"},
           {R"({"heldClamps": [{"resource": "memory_limit", "cgroup": "c", "wish": "1",
                                "clampedTo": "1"}]})",
            "snap.json: heldClamps[0].resource"},
           {R"({"heldClamps": [{"resource": "cpu_quota", "cgroup": "../../etc", "wish": "1",
                                "clampedTo": "1"}]})",
            "snap.json: heldClamps[0].cgroup"},
           {R"({"fastPasses": [{"secondsAfterSnapshot": 1, "nodeCpu": "1", "nonBeCpu": "1",
                                "heldClamps": [{"resource": "cpu", "cgroup": "c", "wish": "1",
                                                "clampedTo": "1"}]}]})",
            "snap.json: fastPasses[0].heldClamps[0].resource"}}) {
    EXPECT_EQ(err(text).rfind(field + ":", 0), 0u) << err(text);
  }
}

}  // namespace
}  // namespace gleaner::agent::step
