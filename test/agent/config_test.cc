#include <cstdio>

#include <gtest/gtest.h>
#include <unistd.h>

#include "agent/config/slo_config.h"
#include "kube/well_known.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent::config {
namespace {

kube::Node node_with_labels(kube::StringMap labels) {
  kube::Node node;
  node.metadata.name = "node-1";
  node.metadata.labels = std::move(labels);
  return node;
}

TEST(ColocationConfig, DefaultsMatchKoordinator) {
  ColocationStrategy s;
  EXPECT_FALSE(s.enable);
  EXPECT_EQ(s.cpu_reclaim_threshold_percent, 60);
  EXPECT_EQ(s.memory_reclaim_threshold_percent, 65);
  EXPECT_EQ(s.degrade_time_minutes, 15);
  EXPECT_EQ(s.cpu_calculate_policy, CalculatePolicy::kUsage);
  EXPECT_EQ(s.memory_calculate_policy, CalculatePolicy::kUsage);
}

TEST(ColocationConfig, NodeConfigMergesFieldWiseAndFirstMatchWins) {
  auto cfg = parse_colocation_config(R"({
    "enable": true, "cpuReclaimThresholdPercent": 70, "memoryCalculatePolicy": "request",
    "unknownField": {"ignored": true},
    "nodeConfigs": [
      {"name": "gpu", "nodeSelector": {"matchLabels": {"pool": "gpu"}},
       "cpuReclaimThresholdPercent": 50},
      {"name": "gpu-too", "nodeSelector": {"matchLabels": {"pool": "gpu"}},
       "cpuReclaimThresholdPercent": 10},
      {"name": "no-selector", "cpuReclaimThresholdPercent": 20}
    ]})",
                                     "colocation-config");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  auto gpu = resolve_colocation(*cfg, node_with_labels({{"pool", "gpu"}}));
  EXPECT_EQ(gpu.matched, "nodeConfigs gpu");
  EXPECT_EQ(gpu.strategy.cpu_reclaim_threshold_percent, 50);
  // Fields the node entry does not set come from the cluster strategy, then defaults.
  EXPECT_EQ(gpu.strategy.memory_calculate_policy, CalculatePolicy::kRequest);
  EXPECT_EQ(gpu.strategy.memory_reclaim_threshold_percent, 65);
  EXPECT_TRUE(gpu.enabled);
  // A node strategy without nodeSelector matches nothing (Kubernetes nil selector).
  auto other = resolve_colocation(*cfg, node_with_labels({{"pool", "web"}}));
  EXPECT_EQ(other.matched, "clusterStrategy");
  EXPECT_EQ(other.strategy.cpu_reclaim_threshold_percent, 70);
}

TEST(ColocationConfig, EnabledOnlyWhenClusterAndNodeEnable) {
  auto on_off = parse_colocation_config(
      R"({"enable": true, "nodeConfigs": [{"nodeSelector": {}, "enable": false}]})", "f");
  ASSERT_TRUE(on_off.ok());
  EXPECT_FALSE(resolve_colocation(*on_off, node_with_labels({})).enabled);
  auto off_on = parse_colocation_config(
      R"({"enable": false, "nodeConfigs": [{"nodeSelector": {}, "enable": true}]})", "f");
  ASSERT_TRUE(off_on.ok());
  auto r = resolve_colocation(*off_on, node_with_labels({}));
  EXPECT_TRUE(r.strategy.enable);
  EXPECT_FALSE(r.enabled);
}

TEST(ColocationConfig, MatchExpressions) {
  auto cfg = parse_colocation_config(R"({"enable": true, "nodeConfigs": [
      {"name": "a", "nodeSelector": {"matchExpressions": [
          {"key": "zone", "operator": "In", "values": ["z1", "z2"]},
          {"key": "tainted", "operator": "DoesNotExist"}]}, "degradeTimeMinutes": 1},
      {"name": "b", "nodeSelector": {"matchExpressions": [
          {"key": "zone", "operator": "NotIn", "values": ["z1"]},
          {"key": "pool", "operator": "Exists"}]}, "degradeTimeMinutes": 2}]})",
                                     "f");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(resolve_colocation(*cfg, node_with_labels({{"zone", "z2"}})).matched, "nodeConfigs a");
  EXPECT_EQ(resolve_colocation(*cfg, node_with_labels({{"zone", "z1"}, {"tainted", ""}})).matched,
            "clusterStrategy");
  EXPECT_EQ(resolve_colocation(*cfg, node_with_labels({{"zone", "z3"}, {"pool", "x"}})).matched,
            "nodeConfigs b");
  EXPECT_EQ(
      resolve_colocation(*cfg, node_with_labels({{"pool", "x"}})).strategy.degrade_time_minutes, 2);
}

TEST(ColocationConfig, NodeSelectorIsKubesLabelSelectorReadInAnyCase) {
  // kube::LabelSelector::from_json reads it, field names in any case as Koordinator's Go
  // decoder; its error names the file and the field.
  auto cfg = parse_colocation_config(R"({"enable": true, "nodeConfigs": [
      {"name": "a", "nodeSelector": {"MatchExpressions": [
          {"Key": "zone", "OPERATOR": "In", "Values": ["z1"]}]}, "degradeTimeMinutes": 1}]})",
                                     "f");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(resolve_colocation(*cfg, node_with_labels({{"zone", "z1"}})).matched, "nodeConfigs a");
  EXPECT_EQ(resolve_colocation(*cfg, node_with_labels({{"zone", "z2"}})).matched,
            "clusterStrategy");
  auto gt = parse_colocation_config(R"({"nodeConfigs": [{"nodeSelector": {"matchExpressions": [
      {"key": "cores", "operator": "Gt", "values": ["8"]}]}}]})",
                                    "/etc/slo/colocation-config");
  ASSERT_FALSE(gt.ok());
  EXPECT_EQ(gt.error().message,
            "/etc/slo/colocation-config: field "
            "nodeConfigs[0].nodeSelector.matchExpressions[0].operator: operator Gt is not valid "
            "in a label selector (In, NotIn, Exists, DoesNotExist; Gt and Lt belong to node "
            "affinity only)");
  auto key = parse_colocation_config(
      R"({"nodeConfigs": [{"nodeSelector": {"matchLabels": {"bad key": "x"}}}]})", "f");
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.error().message,
            "f: field nodeConfigs[0].nodeSelector.matchLabels.bad key: "
            "invalid label key");
  auto type = parse_colocation_config(
      R"({"nodeConfigs": [{"nodeSelector": {"matchLabels": {"pool": 3}}}]})", "f");
  ASSERT_FALSE(type.ok());
  EXPECT_EQ(type.error().code, ErrorCode::kParse);
  EXPECT_EQ(type.error().message,
            "f: field nodeConfigs[0].nodeSelector.matchLabels.pool: expected a string, got number");
}

TEST(ColocationConfig, ReclaimRatioLabelsOverrideEveryOtherSource) {
  auto cfg = parse_colocation_config(
      R"({"enable": true, "nodeConfigs": [{"nodeSelector": {}, "cpuReclaimThresholdPercent": 40}]})",
      "f");
  ASSERT_TRUE(cfg.ok());
  kube::Node node = node_with_labels(
      {{kube::kCpuReclaimRatioLabel, "0.7"}, {kube::kMemoryReclaimRatioLabel, "0.75"}});
  node.metadata.annotations[kube::kColocationStrategyAnnotation] =
      R"({"cpuReclaimThresholdPercent": 45})";
  auto r = resolve_colocation(*cfg, node);
  EXPECT_EQ(r.strategy.cpu_reclaim_threshold_percent, 70);
  EXPECT_EQ(r.strategy.memory_reclaim_threshold_percent, 75);

  node.metadata.labels.erase(kube::kCpuReclaimRatioLabel);
  EXPECT_EQ(resolve_colocation(*cfg, node).strategy.cpu_reclaim_threshold_percent, 45);
  node.metadata.labels[kube::kCpuReclaimRatioLabel] = "lots";  // invalid: ignored
  EXPECT_EQ(resolve_colocation(*cfg, node).strategy.cpu_reclaim_threshold_percent, 45);
}

TEST(ColocationConfig, AcceptsReclaimPercentsAbove100AsSloControllerDoes) {
  // slo-controller validates only >= 0; above 100 the safety margin is negative.
  auto cfg = parse_colocation_config(
      R"({"cpuReclaimThresholdPercent": 120, "memoryReclaimThresholdPercent": 150})", "f");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->cluster.cpu_reclaim_threshold_percent, 120);
  EXPECT_EQ(cfg->cluster.memory_reclaim_threshold_percent, 150);
}

TEST(ColocationConfig, RejectsBadValuesNamingFileAndField) {
  struct Case {
    const char* json;
    const char* field;
  };
  for (const Case& c : {
           Case{R"({"enable": true, "cpuReclaimThresholdPercent": -5})",
                "cpuReclaimThresholdPercent"},
           Case{R"({"memoryReclaimThresholdPercent": 10001})", "memoryReclaimThresholdPercent"},
           Case{R"({"cpuReclaimThresholdPercent": "60"})", "cpuReclaimThresholdPercent"},
           Case{R"({"cpuReclaimThresholdPercent": 60.5})", "cpuReclaimThresholdPercent"},
           Case{R"({"enable": "yes"})", "enable"},
           Case{R"({"cpuCalculatePolicy": "request"})", "cpuCalculatePolicy"},
           Case{R"({"memoryCalculatePolicy": "guess"})", "memoryCalculatePolicy"},
           Case{R"({"degradeTimeMinutes": 0})", "degradeTimeMinutes"},
           Case{R"({"nodeConfigs": [{"nodeSelector": {"matchExpressions": [
                  {"key": "k", "operator": "Near"}]}}]})",
                "nodeConfigs[0].nodeSelector.matchExpressions[0].operator"},
           Case{R"({"nodeConfigs": {"a": 1}})", "nodeConfigs"},
       }) {
    auto cfg = parse_colocation_config(c.json, "/etc/slo/colocation-config");
    ASSERT_FALSE(cfg.ok()) << c.json;
    EXPECT_NE(cfg.error().message.find("/etc/slo/colocation-config"), std::string::npos);
    EXPECT_NE(cfg.error().message.find(std::string("field ") + c.field), std::string::npos)
        << cfg.error().message;
  }
  auto truncated = parse_colocation_config(R"({"enable": true, "cpuRecl)", "colocation-config");
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().message.find("colocation-config"), std::string::npos);
}

TEST(ThresholdConfig, NodeStrategyMergesOverClusterStrategy) {
  auto cfg = parse_threshold_config(R"({
    "clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 60,
                        "cpuSuppressPolicy": "cfsQuota", "memoryEvictThresholdPercent": 80},
    "nodeStrategies": [{"nodeSelector": {"matchLabels": {"pool": "big"}},
                        "memoryEvictThresholdPercent": 90, "memoryEvictLowerPercent": 85}]})",
                                    "resource-threshold-config");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  const auto& big = cfg->for_node({{"pool", "big"}});
  EXPECT_TRUE(big.enable);
  EXPECT_EQ(big.cpu_suppress_threshold_percent, 60);
  EXPECT_EQ(big.cpu_suppress_policy, CpuSuppressPolicy::kCfsQuota);
  EXPECT_EQ(big.memory_evict_threshold_percent, 90);
  EXPECT_EQ(big.memory_evict_lower_percent, 85);
  EXPECT_EQ(big.cpu_evict_be_usage_threshold_percent, 90);
  const auto& other = cfg->for_node({});
  EXPECT_EQ(other.memory_evict_threshold_percent, 80);
  EXPECT_FALSE(other.memory_evict_lower_percent.has_value());
  ResourceThresholdStrategy defaults;
  EXPECT_EQ(defaults.cpu_suppress_threshold_percent, 65);
  EXPECT_EQ(defaults.memory_evict_threshold_percent, 70);
}

TEST(ThresholdConfig, RejectsSwappedPairsEvenWhenOnlyTheNodeSideIsSet) {
  auto swapped = parse_threshold_config(
      R"({"clusterStrategy": {"cpuEvictBESatisfactionLowerPercent": 80,
                              "cpuEvictBESatisfactionUpperPercent": 60}})",
      "t");
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.error().message.find("cpuEvictBESatisfactionLowerPercent"), std::string::npos);
  // The node entry only lowers the threshold below the cluster's lower bound.
  auto merged = parse_threshold_config(
      R"({"clusterStrategy": {"memoryEvictLowerPercent": 60},
          "nodeStrategies": [{"nodeSelector": {}, "memoryEvictThresholdPercent": 55}]})",
      "t");
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.error().message.find("nodeStrategies[0].memoryEvictLowerPercent"),
            std::string::npos)
      << merged.error().message;
  EXPECT_FALSE(
      parse_threshold_config(R"({"clusterStrategy": {"cpuSuppressPolicy": "x"}})", "t").ok());
}

TEST(ThresholdConfig, SuppressModeDefaultsToAlwaysAndNodesMayOverrideIt) {
  auto cfg = parse_threshold_config(R"({
    "clusterStrategy": {"enable": true, "cpuSuppressMode": "onInterference"},
    "nodeStrategies": [{"nodeSelector": {"matchLabels": {"pool": "strict"}},
                        "cpuSuppressMode": "always"}]})",
                                    "resource-threshold-config");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->for_node({}).cpu_suppress_mode, CpuSuppressMode::kOnInterference);
  EXPECT_EQ(cfg->for_node({{"pool", "strict"}}).cpu_suppress_mode, CpuSuppressMode::kAlways);
  EXPECT_EQ(ResourceThresholdStrategy{}.cpu_suppress_mode, CpuSuppressMode::kAlways);
  auto bad = parse_threshold_config(R"({"clusterStrategy": {"cpuSuppressMode": "sometimes"}})",
                                    "resource-threshold-config");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("clusterStrategy.cpuSuppressMode"), std::string::npos)
      << bad.error().message;
}

TEST(ThresholdConfig, SuppressMinCpusDefaultsToTwoAndMustBeAtLeastOne) {
  EXPECT_EQ(ResourceThresholdStrategy{}.cpu_suppress_min_cpus, 2);
  auto cfg = parse_threshold_config(R"({"clusterStrategy": {"cpuSuppressMinCPUs": 1}})",
                                    "resource-threshold-config");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->for_node({}).cpu_suppress_min_cpus, 1);
  for (const char* bad : {R"({"clusterStrategy": {"cpuSuppressMinCPUs": 0}})",
                          R"({"clusterStrategy": {"cpuSuppressMinCPUs": "one"}})"}) {
    auto refused = parse_threshold_config(bad, "resource-threshold-config");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.error().message.find("clusterStrategy.cpuSuppressMinCPUs"), std::string::npos)
        << refused.error().message;
  }
}

TEST(QoSConfig, PerClassDefaultsAndMerge) {
  auto cfg = parse_qos_config(R"({
    "clusterStrategy": {"beClass": {"resctrlQOS": {"enable": true, "catRangeEndPercent": 50},
                                    "memoryQOS": {"enable": true, "throttlingPercent": 80}}},
    "nodeStrategies": [{"nodeSelector": {}, "beClass": {"resctrlQOS": {"mbaPercent": 40}}}]})",
                              "resource-qos-config");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  const auto& s = cfg->for_node({});
  EXPECT_TRUE(s.be.resctrl.enable);
  EXPECT_EQ(s.be.resctrl.cat_range_start_percent, 0);
  EXPECT_EQ(s.be.resctrl.cat_range_end_percent, 50);
  EXPECT_EQ(s.be.resctrl.mba_percent, 40);
  EXPECT_EQ(s.be.memory.throttling_percent, 80);
  EXPECT_EQ(s.be.memory.wmark_min_adj, 50);
  EXPECT_EQ(s.ls.cpu.group_identity, 2);
  EXPECT_EQ(s.ls.resctrl.cat_range_end_percent, 100);
  ResourceQoSStrategy defaults;
  EXPECT_EQ(defaults.be.resctrl.cat_range_end_percent, 30);
  EXPECT_EQ(defaults.be.cpu.group_identity, -1);

  auto bad = parse_qos_config(
      R"({"clusterStrategy": {"lsClass": {"resctrlQOS": {"catRangeStartPercent": 60,
                                                        "catRangeEndPercent": 40}}}})",
      "q");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("clusterStrategy.lsClass.resctrlQOS.catRangeStartPercent"),
            std::string::npos)
      << bad.error().message;
  EXPECT_FALSE(
      parse_qos_config(R"({"clusterStrategy": {"beClass": {"cpuQOS": {"groupIdentity": 5}}}})", "q")
          .ok());
}

TEST(SloConfigDir, MissingFilesMeanDefaultsAndBadKeysKeepPreviousValue) {
  testing::TempDir dir;
  dir.write("colocation-config", R"({"enable": true, "cpuReclaimThresholdPercent": 50})");
  dir.write("resource-threshold-config", R"({"clusterStrategy": {"enable": true}})");
  auto first = load_config_dir(dir.path());
  ASSERT_TRUE(first.errors.empty());
  EXPECT_EQ(first.config.colocation.cluster.cpu_reclaim_threshold_percent, 50);
  EXPECT_TRUE(first.config.threshold.cluster.enable);
  EXPECT_EQ(first.defaulted_keys.size(), 3u);

  dir.write("colocation-config", R"({"enable": true, "cpuReclaimThresholdPercent": -1)");
  dir.write("resource-threshold-config", R"({"clusterStrategy": {"enable": true,
      "cpuSuppressThresholdPercent": 10, "cpuSuppressMinPercent": 20}})");
  auto second = load_config_dir(dir.path(), first.config, first.good_keys);
  ASSERT_EQ(second.errors.size(), 2u);
  EXPECT_EQ(second.errors[0].key, kColocationKey);
  EXPECT_NE(second.errors[0].error.message.find(dir / "colocation-config"), std::string::npos);
  // Nothing of a rejected key is applied: the whole previous value stays.
  EXPECT_EQ(second.config.colocation.cluster.cpu_reclaim_threshold_percent, 50);
  EXPECT_EQ(second.config.threshold.cluster.cpu_suppress_threshold_percent, 65);
  EXPECT_EQ(second.errors[1].kept, KeptValue::kLastGood);
}

// Issue #60: a typo in an enum value rejects resource-threshold-config. Its defaults turn
// suppression and memory eviction off, while colocation-config still offers batch capacity:
// a key that never loaded gets the safe fallback instead, protection on.
TEST(SloConfigDir, AKeyRejectedAtStartGetsItsSafeFallbackNotProtectionOff) {
  testing::TempDir dir;
  dir.write("colocation-config", R"({"enable": true})");
  dir.write("resource-threshold-config",
            R"({"clusterStrategy": {"enable": true, "cpuSuppressPolicy": "cfsquota"}})");
  auto first = load_config_dir(dir.path());
  ASSERT_EQ(first.errors.size(), 1u);
  EXPECT_EQ(first.errors[0].key, kThresholdKey);
  EXPECT_EQ(first.errors[0].kept, KeptValue::kSafeFallback);
  EXPECT_NE(first.errors[0].error.message.find(dir / "resource-threshold-config"),
            std::string::npos);
  EXPECT_NE(first.errors[0].error.message.find("clusterStrategy.cpuSuppressPolicy: unknown value "
                                               "\"cfsquota\""),
            std::string::npos)
      << first.errors[0].error.message;
  EXPECT_TRUE(first.config.colocation.cluster.enable);
  EXPECT_TRUE(first.config.threshold.cluster.enable);
  EXPECT_EQ(first.config.threshold.cluster.cpu_suppress_threshold_percent, 65);
  EXPECT_EQ(first.config.threshold.cluster.memory_evict_threshold_percent, 70);
  EXPECT_FALSE(first.good_keys.contains(kThresholdKey));
  EXPECT_TRUE(first.good_keys.contains(kColocationKey));
  EXPECT_TRUE(first.good_keys.contains(kQoSKey));  // absent: its defaults, as written
}

// Once the key loaded, a later bad version keeps that version, not the safe fallback; the
// gauge and errors() show the key rejected for as long as its file is bad.
TEST(SloConfigDir, LoaderKeepsTheLastGoodVersionAndShowsTheKeyInvalid) {
  testing::TempDir dir;
  dir.write("resource-threshold-config", R"({"clusterStrategy": {"enable": true,
      "cpuSuppressPolicy": "cfsquota"}})");
  ConfigLoader loader(dir.path());
  ASSERT_EQ(loader.reload().size(), 1u);
  EXPECT_TRUE(loader.current().threshold.cluster.enable);
  EXPECT_EQ(loader.key_valid().at(kThresholdKey), 0u);
  EXPECT_EQ(loader.key_valid().at(kColocationKey), 1u);
  ASSERT_EQ(loader.errors().size(), 1u);
  EXPECT_EQ(loader.errors()[0].kept, KeptValue::kSafeFallback);

  dir.write("resource-threshold-config", R"({"clusterStrategy": {"enable": true,
      "cpuSuppressPolicy": "cfsQuota", "cpuSuppressThresholdPercent": 50}})");
  EXPECT_TRUE(loader.reload().empty());
  EXPECT_TRUE(loader.errors().empty());
  EXPECT_EQ(loader.key_valid().at(kThresholdKey), 1u);

  dir.write("resource-threshold-config", R"({"clusterStrategy": {"enable": fals}})");
  auto errors = loader.reload();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].kept, KeptValue::kLastGood);
  EXPECT_EQ(loader.key_valid().at(kThresholdKey), 0u);
  EXPECT_EQ(loader.current().threshold.cluster.cpu_suppress_policy, CpuSuppressPolicy::kCfsQuota);
  EXPECT_EQ(loader.current().threshold.cluster.cpu_suppress_threshold_percent, 50);
  EXPECT_EQ(loader.error_count(kThresholdKey), 2u);
}

TEST(SloConfigDir, LoaderCountsErrorsPerKeyAndDetectsChanges) {
  testing::TempDir dir;
  dir.mkdir("..2024_01_01");
  dir.write("..2024_01_01/colocation-config", R"({"enable": true})");
  ASSERT_EQ(::symlink("..2024_01_01", (dir / "..data").c_str()), 0);
  ASSERT_EQ(::symlink("..data/colocation-config", (dir / "colocation-config").c_str()), 0);

  ConfigLoader loader(dir.path());
  EXPECT_TRUE(loader.has_changed());
  EXPECT_TRUE(loader.reload().empty());
  EXPECT_TRUE(loader.current().colocation.cluster.enable);
  EXPECT_FALSE(loader.has_changed());

  // kubelet's update: a new timestamped dir, then an atomic swap of ..data.
  dir.mkdir("..2024_01_02");
  dir.write("..2024_01_02/colocation-config", R"({"enable": tru)");
  ASSERT_EQ(::symlink("..2024_01_02", (dir / "..data_tmp").c_str()), 0);
  ASSERT_EQ(::rename((dir / "..data_tmp").c_str(), (dir / "..data").c_str()), 0);
  EXPECT_TRUE(loader.has_changed());
  auto errors = loader.reload();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(loader.error_count(kColocationKey), 1u);
  EXPECT_EQ(loader.error_count(kThresholdKey), 0u);
  EXPECT_TRUE(loader.current().colocation.cluster.enable);  // last good value kept
  loader.reload();
  EXPECT_EQ(loader.error_count(kColocationKey), 2u);
}

}  // namespace
}  // namespace gleaner::agent::config
