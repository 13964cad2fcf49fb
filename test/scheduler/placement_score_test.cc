// Placement scores (placement_score.h): the GPU-weighted bin-pack decides where a GPU pod
// goes, the two rules decide the rest, and a scenario where the rules strand GPUs.
#include <algorithm>

#include <gtest/gtest.h>

#include "common/file_io.h"
#include "common/json_util.h"
#include "common/quantity.h"
#include "scheduler/core/cluster_state.h"
#include "scheduler/sim/simulator.h"

namespace gleaner::scheduler {
namespace {

using gleaner::kGi;

NodeId gpu_node(ClusterState& s, const std::string& name, int64_t cpus, int64_t gpus) {
  return *s.upsert_node(NodeInfo{name, "", {}, Resources{cpus * 1000, cpus * 4 * kGi, gpus}}, 0);
}

GangRequest one_pod(int64_t cpus, int64_t gpus) {
  return GangRequest{{RoleRequest{Resources{cpus * 1000, cpus * 4 * kGi, gpus}, 1}}};
}

TEST(PlacementScore, RequestedToCapacityCountsThePodAndWeighsEachResource) {
  ClusterState s;
  NodeId a = gpu_node(s, "a", 10, 8);
  // 4 of 10 CPUs, 16 of 40 GiB, 4 of 8 GPUs: 400, 400 and 500 thousandths.
  const Resources pod{4000, 16 * kGi, 4};
  EXPECT_EQ(requested_to_capacity_score(s.node(a), pod, {}, ResourceWeights{1, 1, 0}), 400);
  EXPECT_EQ(requested_to_capacity_score(s.node(a), pod, {}, ResourceWeights{1, 1, 2}), 450);
  // GPUs a Node's allocatable offers (regular resources) count as the node's GPUs.
  ClusterState r;
  NodeId b = gpu_node(r, "b", 10, 0);
  r.set_regular_outside(b, Resources{INT64_MAX / 4, INT64_MAX / 4, 8});
  EXPECT_EQ(
      requested_to_capacity_score(r.node(b), {}, Resources{0, 0, 6}, ResourceWeights{0, 0, 1}),
      750);
}

TEST(PlacementScore, GpuBinPackPutsTheSecondGpuPodWhereTheFirstLeftGpus) {
  for (bool scored : {false, true}) {
    ClusterState s;
    gpu_node(s, "a", 32, 8);
    gpu_node(s, "b", 32, 8);
    if (scored) s.set_scores(PlacementScores{ResourceWeights{1, 1, 10}});
    auto first = s.place(0, one_pod(4, 4));
    auto second = s.place(0, one_pod(4, 4));
    ASSERT_TRUE(first && second);
    EXPECT_EQ(s.node(first->pods[0]).name, "a");
    // The rules spread leaders by free CPU: b. The bin-pack fills a's GPUs.
    EXPECT_EQ(s.node(second->pods[0]).name, scored ? "a" : "b") << "scored=" << scored;
    EXPECT_EQ(s.place(0, one_pod(16, 8)).has_value(), scored) << "scored=" << scored;
  }
}

TEST(PlacementScore, PodsWithoutGpusFollowTheRules) {
  ClusterState s;
  gpu_node(s, "a", 32, 8);
  gpu_node(s, "b", 16, 0);
  s.set_scores(PlacementScores{ResourceWeights{1, 1, 10}});
  // The emptiest node for the leader; the executors packed onto the fullest.
  GangRequest spark{
      {RoleRequest{Resources{1000, kGi, 0}, 1}, RoleRequest{Resources{1000, kGi, 0}, 2}}};
  auto p = s.place(0, spark);
  ASSERT_TRUE(p);
  EXPECT_EQ(s.node(p->pods[0]).name, "a");
  EXPECT_EQ(s.node(p->pods[1]).name, "b");
  EXPECT_EQ(s.node(p->pods[2]).name, "b");
}

// The simulated job `name`'s `field` (its first pod's node for "node").
Json field_of(const Json& doc, const std::string& name, const std::string& field) {
  const Json& jobs = doc.value("jobs", Json::array());
  auto it =
      std::find_if(jobs.begin(), jobs.end(), [&](const Json& j) { return j["name"] == name; });
  if (it == jobs.end()) return nullptr;
  return field == "node" ? (*it)["pods"][0]["node"] : (*it)[field];
}

TEST(PlacementScore, ScenarioTheRulesFragmentGpusAndTheBinPackKeepsANodeWhole) {
  auto text = read_file(std::string(GLEANER_SOURCE_DIR) + "/scheduler/scenarios/gpu-bin-pack.json");
  ASSERT_TRUE(text.ok());
  Json scenario = Json::parse(*text);
  ASSERT_TRUE(scenario.contains("policy"));
  auto run = [](const Json& doc) {
    auto out = sim::simulate(doc.dump(), "gpu-bin-pack.json");
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    return out.ok() ? Json::parse(*out) : Json::object();
  };
  const Json packed = run(scenario);
  scenario.erase("policy");
  const Json spread = run(scenario);
  // Without the score two 4-GPU jobs take 4 GPUs of each node: the 8-GPU job submitted at 60
  // s fits neither until the first ends (3600 s).
  EXPECT_NE(field_of(spread, "finetune-1", "node"), field_of(spread, "finetune-2", "node"));
  EXPECT_EQ(field_of(spread, "pretrain", "startedAt"), 3600);
  // With it the second shares the first's node and the 8-GPU job starts when submitted.
  EXPECT_EQ(field_of(packed, "finetune-1", "node"), field_of(packed, "finetune-2", "node"));
  EXPECT_EQ(field_of(packed, "pretrain", "startedAt"), 60);
  EXPECT_EQ(field_of(packed, "pretrain", "state"), "Completed");
}

TEST(PlacementScore, ScenarioRefusesAGpuBinPackWithoutAGpuWeight) {
  auto out = sim::simulate(R"({"policy": {"gpuBinPack": {"cpu": 1}},
    "nodes": [{"name": "n", "batch": {"cpu": "1", "memory": "1Gi"}}], "jobs": []})",
                           "in.json");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message.find("policy.gpuBinPack.nvidia.com/gpu"), std::string::npos)
      << out.error().message;
}

}  // namespace
}  // namespace gleaner::scheduler
