// A SparkApplication's placement constraints in its pod templates (spec.driver.template,
// spec.executor.template): read and merged with spec.nodeSelector and the spec.driver /
// spec.executor fields as spark-operator builds the pods, so that the application goes only
// to a member with a node its pods may run on; and a member pod whose own selector does not
// hold on the node reserved for it is not bound there.
#include <gtest/gtest.h>

#include "kube/spark_application.h"
#include "kube/yaml_json.h"
#include "scheduler/gang/gang_scheduler.h"
#include "scheduler/kube/pod_view.h"
#include "test/scheduler/live/live_fixture.h"

namespace gleaner::scheduler {
// Named: test files share unity batches, and their anonymous namespaces merge there.
namespace spark_pod_template_test {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// The SparkApplication `spec_yaml` (its spec, indented by two) in default/pi, labelled for
// multi-cluster placement and suspended until placed, as the live loop reads it.
gang::AppView spark_app(const std::string& spec_yaml, const std::string& cluster = "c1") {
  const std::string text = R"(
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata:
  name: pi
  namespace: default
  uid: pi-uid
  labels: {gleaner.io/multi-cluster: "true"}
spec:
  type: Scala
  suspend: true
  driver: {cores: 1, memory: 512m}
  executor: {cores: 1, instances: 1, memory: 512m}
)" + spec_yaml;
  auto json = kube::yaml_to_json(text, "pi.yaml");
  EXPECT_TRUE(json.ok()) << json.error().message;
  auto app = kube::parse_spark_application(json.ok() ? *json : Json());
  EXPECT_TRUE(app.ok()) << app.error().message;
  auto view = kube_glue::app_view(*app, cluster);
  EXPECT_TRUE(view.has_value());
  return view.value_or(gang::AppView{});
}

// As upstream's examples/spark-pi-pod-template.yaml: the constraint in the templates only.
const char* const kLinuxTemplates = R"(
  driver:
    cores: 1
    memory: 512m
    template:
      spec:
        nodeSelector: {kubernetes.io/os: linux}
  executor:
    cores: 1
    instances: 1
    memory: 512m
    template:
      spec:
        nodeSelector: {kubernetes.io/os: linux}
)";

TEST(SparkPodTemplate, ATemplatesNodeSelectorIsTheApplications) {
  const gang::AppView v = spark_app(kLinuxTemplates);
  EXPECT_EQ(v.selector_error, "");
  EXPECT_TRUE(v.selector.matches({{"kubernetes.io/os", "linux"}}));
  EXPECT_FALSE(v.selector.matches({{"kubernetes.io/os", "windows"}}));
  EXPECT_FALSE(v.selector.matches({}));
}

TEST(SparkPodTemplate, TemplateAndSpecFieldsMergeAsTheOperatorMergesThem) {
  const gang::AppView v = spark_app(R"(
  nodeSelector: {pool: spark}
  driver:
    cores: 1
    memory: 512m
    nodeSelector: {disk: hdd}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [b]}]}]
    tolerations: [{key: gpu, operator: Exists}]
    template:
      spec:
        nodeSelector: {pool: online, disk: ssd, rack: r1}
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]
        tolerations: [{key: dedicated, operator: Equal, value: spark, effect: NoSchedule}]
  executor:
    cores: 1
    instances: 1
    memory: 512m
    template:
      spec:
        tolerations: [{key: dedicated, operator: Exists}]
)");
  ASSERT_EQ(v.selector_error, "");
  // spec.nodeSelector over the template's (Spark's conf on its template), spec.driver's over
  // both (the webhook), the template's other pairs kept; spec.driver.affinity replaces the
  // template's.
  const Labels fits{{"pool", "spark"}, {"disk", "hdd"}, {"rack", "r1"}, {"zone", "b"}};
  EXPECT_TRUE(v.selector.matches(fits));
  for (const auto& [key, other] : std::vector<std::pair<std::string, std::string>>{
           {"pool", "online"}, {"disk", "ssd"}, {"rack", "r2"}, {"zone", "a"}}) {
    Labels changed = fits;
    changed[key] = other;
    EXPECT_FALSE(v.selector.matches(changed)) << key << "=" << other;
  }
  // Each pod brings the template's tolerations and its own: the driver tolerates both
  // taints, the executor only dedicated; a gpu taint keeps the gang off.
  ASSERT_EQ(v.selector.tolerations.size(), 2u);
  EXPECT_EQ(v.selector.tolerations[0].size(), 2u);
  const Taint dedicated{"dedicated", "spark", TaintEffect::kNoSchedule};
  const Taint gpu{"gpu", "", TaintEffect::kNoSchedule};
  EXPECT_TRUE(v.selector.admits(fits, {dedicated}));
  EXPECT_FALSE(v.selector.admits(fits, {dedicated, gpu}));
}

TEST(SparkPodTemplate, ABadTemplateFieldIsAnErrorNamingIt) {
  const gang::AppView v = spark_app(R"(
  executor:
    cores: 1
    instances: 1
    memory: 512m
    template:
      spec:
        nodeSelector: {zone: 3}
)");
  EXPECT_EQ(v.selector_error,
            "SparkApplication default/pi spec.executor.template.spec.nodeSelector.zone: "
            "expected a string");
}

// A live loop managing c1 and c2, each with one node whose Node labels are `c1_labels` and
// `c2_labels`; c1, the applications' own cluster, has the more room. Every action recorded.
class SparkPodTemplateLive : public ::testing::Test {
 protected:
  void start(const Labels& c1_labels, const Labels& c2_labels) {
    gang::GangOptions options;
    options.clusters = {"c1", "c2"};
    auto created = gang::GangScheduler::create(options, {}, clock, metrics);
    ASSERT_TRUE(created.ok());
    live = std::move(*created);
    live->set_sinks([this](gang::Action a) { actions.push_back(std::move(a)); }, nullptr);
    live->observe_node("c1", "n1", c1_labels);
    live->observe_node("c2", "n2", c2_labels);
    ASSERT_FALSE(live->apply_report(live_testing::node_report("n1", 1, 8000, 64 * kGiB, "c1")));
    ASSERT_FALSE(live->apply_report(live_testing::node_report("n2", 1, 4000, 64 * kGiB, "c2")));
  }
  [[nodiscard]] std::vector<gang::Action> of(gang::ActionKind kind) const {
    std::vector<gang::Action> out;
    for (const gang::Action& a : actions)
      if (a.kind == kind) out.push_back(a);
    return out;
  }
  SystemClock clock;
  server::LiveMetrics metrics;
  std::unique_ptr<gang::GangScheduler> live;
  std::vector<gang::Action> actions;
};

TEST_F(SparkPodTemplateLive, ATemplatesNodeSelectorSendsTheApplicationOnlyToAMatchingMember) {
  start({{"kubernetes.io/os", "windows"}}, {{"kubernetes.io/os", "linux"}});
  live->observe_app(spark_app(kLinuxTemplates));
  live->tick();
  const auto placed = of(gang::ActionKind::kPlaceApp);
  ASSERT_EQ(placed.size(), 1u) << live->jobs_json().dump();
  EXPECT_EQ(placed[0].target, "c2") << "c1's only node is not linux";
}

// spec.batchScheduler hands the pods to another scheduler: placed, the room reserved in a
// member would never be taken, the driver start timeout would reclaim it and it would be
// placed again, without end. It is not placed, once said in an Event and counted; without
// batchScheduler it is placed.
TEST_F(SparkPodTemplateLive, AnApplicationNamingAnotherBatchSchedulerIsNotPlacedAndSaysWhy) {
  start({}, {});
  for (const char* other : {"volcano", "kube-scheduler"}) {
    actions.clear();
    const gang::AppView app = spark_app(std::string("  batchScheduler: ") + other + "\n");
    live->observe_app(app);
    live->tick();
    live->observe_app(app);  // seen again (a resync): said once
    live->tick();
    EXPECT_TRUE(of(gang::ActionKind::kPlaceApp).empty()) << other;
    EXPECT_FALSE(live->job_of("c1", "default", "pi").has_value()) << other;
    const auto events = of(gang::ActionKind::kEvent);
    ASSERT_EQ(events.size(), 1u) << other;
    EXPECT_EQ(events[0].reason, "GleanerOtherScheduler");
    EXPECT_TRUE(events[0].warning);
    EXPECT_NE(events[0].message.find(std::string("spec.batchScheduler is ") + other),
              std::string::npos)
        << events[0].message;
    EXPECT_NE(events[0].message.find("remove spec.batchScheduler"), std::string::npos);
  }
  EXPECT_NE(metrics.render(live->gauges()).find("gleaner_scheduler_apps_other_scheduler_total 2"),
            std::string::npos);
  // Fixed: placed at the next look.
  live->observe_app(spark_app(""));
  live->tick();
  EXPECT_EQ(of(gang::ActionKind::kPlaceApp).size(), 1u) << live->jobs_json().dump();
}

TEST_F(SparkPodTemplateLive, ADriverWhoseOwnSelectorFailsItsReservedNodeIsNotBoundThere) {
  start({{"pool", "spark"}}, {{"pool", "online"}});
  // The application asks for nothing: its room goes to c1, its own cluster.
  live->observe_app(spark_app(""));
  live->tick();
  ASSERT_EQ(of(gang::ActionKind::kPlaceApp).size(), 1u);
  ASSERT_EQ(of(gang::ActionKind::kPlaceApp)[0].target, "c1");
  live->app_recorded("c1", "default", "pi");
  // Its driver pod carries a selector n1 does not match (a webhook added it).
  gang::PodView driver = live_testing::lone_batch_pod("default", "pi-driver", 1000);
  driver.role = gang::PodRole::kDriver;
  driver.gang = "pi";
  driver.selector = NodeSelector{{{"pool", "gpu"}}, {}, {}};
  live->observe_pod(driver);
  live->tick();
  EXPECT_TRUE(of(gang::ActionKind::kBind).empty()) << "kubelet would refuse it on n1";
  bool told = false;
  for (const gang::Action& e : of(gang::ActionKind::kEvent))
    told = told || (e.reason == "GleanerNodeMismatch" && e.name == "pi-driver" &&
                    e.message.find("pool=gpu") != std::string::npos &&
                    e.message.find("n1") != std::string::npos);
  EXPECT_TRUE(told);
  // n1 labelled pool=gpu: the driver takes its room at the next pass.
  live->observe_node("c1", "n1", {{"pool", "gpu"}});
  live->tick();
  const auto binds = of(gang::ActionKind::kBind);
  ASSERT_EQ(binds.size(), 1u);
  EXPECT_EQ(binds[0].name, "pi-driver");
  EXPECT_EQ(binds[0].node, "n1");
}

}  // namespace
}  // namespace spark_pod_template_test
}  // namespace gleaner::scheduler
