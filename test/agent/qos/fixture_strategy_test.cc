// A QoS strategy added as a test fixture: this file, with its one registry line, is all it
// takes for the agent's step to plan it, the executor to write and restore what it plans, and
// `gleaner-agent plan` to replay it from a recorded pass, its memory included.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "agent/cli/commands.h"
#include "agent/qos/strategy_table.h"
#include "agent/step/agent_step.h"
#include "agent/step/step_record.h"
#include "common/file_io.h"
#include "test/agent/qos/qos_test_util.h"
#include "test/support/cli_capture.h"

namespace gleaner::agent::qos {
namespace {
using namespace test;

constexpr const char* kOptIn = "test.gleaner.io/pass-counter";
constexpr const char* kCounted = "kubepods/burstable";

// Writes the burstable QoS cgroup's cpu.shares as 2000 + 100 per pass it has planned before:
// a value that only its memory can give. Only on nodes that carry kOptIn, so that the other
// tests of this binary do not see it.
class PassCounter final : public Strategy {
 public:
  [[nodiscard]] std::string_view name() const override { return "passCounter"; }
  [[nodiscard]] bool enabled(const QosInputs& in) const override {
    return in.snapshot->node.metadata.annotations.contains(kOptIn);
  }
  void declare_reads(const Pass& /*pass*/, KnobReads& reads) const override {
    reads.add(kCounted, {Resource::kCpuShares});
  }
  Plan plan(const Pass& pass) override {
    Plan plan;
    if (pass.knobs.has(Resource::kCpuShares, kCounted)) {
      plan.writes.push_back(
          {Resource::kCpuShares, kCounted, std::to_string(2000 + 100 * passes_), "pass-counter"});
    }
    ++passes_;
    return plan;
  }
  void save(Json& agent, double /*now_s*/) const override { agent["passCounter"] = passes_; }
  Status load(const Json& agent, const std::string& where, double /*now_s*/) override {
    auto it = agent.find("passCounter");
    if (it == agent.end()) return ok_status();
    if (!it->is_number_integer() || it->get<int64_t>() < 0)
      return make_error(ErrorCode::kParse, where + ": agent.passCounter: expected a count");
    passes_ = it->get<int64_t>();
    return ok_status();
  }

 private:
  int64_t passes_ = 0;
};

// The registry line.
const bool kRegistered = register_strategy([] { return std::make_unique<PassCounter>(); });

std::optional<std::string> counted_write(const Plan& plan) {
  for (const auto& w : plan.writes) {
    if (w.reason == "pass-counter") return w.value;
  }
  return std::nullopt;
}

TEST(FixtureStrategy, IsPlannedExecutedRestoredAndReplayedByPlan) {
  ASSERT_TRUE(kRegistered);
  const cgroup::KubeletLayout layout(CgroupDriver::kCgroupfs);
  FakePod be{.name = "spark", .uid = "be-1", .qos_label = "BE", .cpu_usage = "1"};
  be.containers = Json::array({container("exec")});
  const std::vector<FakePod> pods = {be};
  FakeNode node;
  node.node_cpu_usage = "2";
  node.annotations[kOptIn] = "on";
  TempDir t;
  make_node_tree(t, CgroupVersion::kV1, layout, pods);
  cgroup::CgroupFs fs(t.path(), CgroupVersion::kV1);
  TreeReader reader(fs, nullptr);
  const snapshot::NodeSnapshot snap = make_snapshot(node, pods);
  const std::string shares = t.path() + "/cpu/kubepods/burstable/cpu.shares";

  const bpf::InterferenceConfig rule{.runq_p99_bound = std::chrono::milliseconds(5)};
  step::AgentStep live(rule, layout, 8);
  step::TickInputs in;
  in.snapshot = &snap;
  in.layout = layout;
  in.reader = &reader;
  in.now_s = 100;

  // Planned by the step, written by the executor.
  const step::StepResult first = live.tick(in);
  ASSERT_EQ(counted_write(first.plan), "2000");
  cgroup::WriteExecutor executor(fs);
  ASSERT_TRUE(executor.apply(first.plan.writes).failed.empty());
  EXPECT_EQ(trim(*read_file(shares)), "2000");

  // Replayed: `plan` on the record of the next pass (its snapshot and the memory the step
  // holds before it) prints what the live step plans at that pass.
  in.now_s = 101;
  Json doc = snapshot_json(node, pods);
  step::add_step_record(doc, {in.probe, live.memory(in.now_s), false}, in.now_s);
  t.write("record.json", doc.dump());
  const step::StepResult second = live.tick(in);
  ASSERT_EQ(counted_write(second.plan), "2100");
  CLI::App app;
  register_plan_command(app);
  auto replay = gleaner::testing::run_subcommand(
      app, {"plan", "--snapshot", t / "record.json", "--config-dir", t / "no-config",
            "--cgroup-root", t.path(), "--cgroup-version", "v1"});
  ASSERT_EQ(replay.code, 0) << replay.err;
  const Json printed = *parse_json(replay.out, "plan output");
  bool replayed = false;
  for (const auto& w : printed["writes"]) {
    if (w["reason"] == "pass-counter") {
      EXPECT_EQ(w["path"], shares);
      EXPECT_EQ(w["value"], "2100");
      replayed = true;
    }
  }
  EXPECT_TRUE(replayed) << replay.out;

  // A record whose part of this strategy is bad is refused, naming the field.
  doc["agent"]["passCounter"] = "many";
  t.write("bad.json", doc.dump());
  CLI::App again;
  register_plan_command(again);
  auto bad = gleaner::testing::run_subcommand(
      again, {"plan", "--snapshot", t / "bad.json", "--config-dir", t / "no-config",
              "--cgroup-root", t.path(), "--cgroup-version", "v1"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("agent.passCounter"), std::string::npos) << bad.err;

  // Restored: the executor puts back what kubelet had.
  EXPECT_TRUE(executor.restore_all().failed.empty());
  EXPECT_EQ(trim(*read_file(shares)), "1024");
}

}  // namespace
}  // namespace gleaner::agent::qos
