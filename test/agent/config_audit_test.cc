// Every ack-slo-config field accounted for: enforced fields load quietly, Koordinator's
// fields this version does not enforce and unknown fields are reported (the unknown with
// the closest known name), and real ConfigMaps from ACK's documentation and Koordinator's
// chart load with each of their fields in one of those states.
#include "agent/config/config_audit.h"

#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "agent/config/colocation_config.h"
#include "agent/config/slo_config.h"
#include "common/file_io.h"
#include "common/json_util.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent::config {
namespace {

std::vector<std::string> messages(std::string_view key, const char* json) {
  std::vector<std::string> out;
  for (auto& n : audit_key(key, Json::parse(json)))
    out.push_back(n.message);
  return out;
}

bool any_contains(const std::vector<std::string>& all, const std::string& part) {
  return std::any_of(all.begin(), all.end(),
                     [&](const std::string& m) { return m.find(part) != std::string::npos; });
}

TEST(ConfigAudit, EnforcedFieldsLoadQuietly) {
  EXPECT_TRUE(messages("colocation-config", R"({"enable": true, "cpuReclaimThresholdPercent": 60,
      "nodeConfigs": [{"name": "a", "nodeSelector": {"matchLabels": {"x": "y"}},
                       "memoryReclaimThresholdPercent": 50}]})")
                  .empty());
  EXPECT_TRUE(messages("resource-qos-config", R"({"clusterStrategy": {"beClass": {
      "cpuQOS": {"enable": true}, "memoryQOS": {"enable": true, "minLimitPercent": 10},
      "resctrlQOS": {"enable": true, "catRangeEndPercent": 30}}}})")
                  .empty());
}

TEST(ConfigAudit, KoordinatorFieldsNotEnforcedAreNamed) {
  auto m = messages("system-config", R"({"clusterStrategy": {"watermarkScaleFactor": 200,
      "schedGroupIdentityEnabled": 1},
      "nodeStrategies": [{"nodeSelector": {}, "minFreeKbytesFactor": 150,
                          "pageCacheLimitEnabled": 1}]})");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_TRUE(
      any_contains(m, "clusterStrategy.schedGroupIdentityEnabled is Koordinator's but not"));
  EXPECT_TRUE(any_contains(m, "nodeStrategies[0].pageCacheLimitEnabled is Koordinator's"));
  // The CPU burst fields, the CFS quota burst's included, are all enforced.
  EXPECT_TRUE(messages("cpu-burst-config", R"({"clusterStrategy": {"policy": "auto",
      "cfsQuotaBurstPercent": 300, "cfsQuotaBurstPeriodSeconds": 60,
      "sharePoolThresholdPercent": 40}})")
                  .empty());
  // A whole sub-object Koordinator defines (blkioQOS) is one notice, not one per leaf.
  auto blkio = messages("resource-qos-config", R"({"clusterStrategy": {"lsClass": {
      "blkioQOS": {"enable": true, "blocks": [{"name": "/dev/vda", "type": "device"}]}}}})");
  ASSERT_EQ(blkio.size(), 1u);
  EXPECT_TRUE(any_contains(blkio, "clusterStrategy.lsClass.blkioQOS is Koordinator's"));
  // CPU QoS acts on BE only.
  EXPECT_TRUE(
      any_contains(messages("resource-qos-config",
                            R"({"clusterStrategy": {"lsClass": {"cpuQOS": {"enable": true}}}})"),
                   "lsClass.cpuQOS.enable is Koordinator's but not enforced"));
}

TEST(ConfigAudit, UnknownFieldsGetTheClosestKnownName) {
  auto m = messages("resource-threshold-config",
                    R"({"clusterStrategy": {"cpuSupressThresholdPercent": 60}})");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(any_contains(m,
                           "unknown field clusterStrategy.cpuSupressThresholdPercent (did "
                           "you mean cpuSuppressThresholdPercent?)"));
  // Nothing close: no guess.
  auto far = messages("colocation-config", R"({"somethingElseEntirely": 1})");
  ASSERT_EQ(far.size(), 1u);
  EXPECT_EQ(far[0].find("did you mean"), std::string::npos) << far[0];
}

TEST(ConfigAudit, NamesMatchIgnoringCaseAsKoordinatorsDecoderDoes) {
  EXPECT_TRUE(messages("resource-threshold-config",
                       R"({"clusterStrategy": {"CPUEvictTimeWindowSeconds": 30}})")
                  .empty());
  EXPECT_TRUE(
      lookup_field("resource-threshold-config", "clusterStrategy.cpuevicttimewindowseconds").known);
}

TEST(ConfigAudit, OtherDataKeysAreKoordinatorsOrUnknown) {
  EXPECT_NE(audit_other_key("host-application-config").find("not enforced"), std::string::npos);
  EXPECT_NE(audit_other_key("colocaton-config").find("did you mean colocation-config?"),
            std::string::npos);
}

TEST(ConfigAudit, ReadsCaseInsensitiveFieldsLikeKoordinator) {
  auto cfg = parse_colocation_config(R"({"Enable": true, "CPUReclaimThresholdPercent": 42})", "f");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_TRUE(cfg->cluster.enable);
  EXPECT_EQ(cfg->cluster.cpu_reclaim_threshold_percent, 42);
}

TEST(ConfigAudit, AnInvalidNodeConfigFallsBackToTheClusterStrategy) {
  // slo-controller: the nodes such an entry selects get the cluster strategy; colocation
  // stays on, and the rest of the key applies.
  auto cfg = parse_colocation_config(R"({"enable": true, "cpuReclaimThresholdPercent": 55,
      "nodeConfigs": [{"nodeSelector": {"matchLabels": {"pool": "a"}}, "degradeTimeMinutes": 0},
                      {"nodeSelector": {"matchLabels": {"pool": "b"}}, "cpuReclaimThresholdPercent": 70}]})",
                                     "/etc/slo/colocation-config");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  ASSERT_EQ(cfg->nodes.size(), 2u);
  EXPECT_EQ(cfg->nodes[0].strategy.cpu_reclaim_threshold_percent, 55);
  EXPECT_TRUE(cfg->nodes[0].strategy.enable);
  EXPECT_EQ(cfg->nodes[1].strategy.cpu_reclaim_threshold_percent, 70);
  ASSERT_EQ(cfg->warnings.size(), 1u);
  EXPECT_NE(cfg->warnings[0].find("nodeConfigs[0].degradeTimeMinutes"), std::string::npos);
  EXPECT_NE(cfg->warnings[0].find("cluster strategy"), std::string::npos);
}

// Every leaf field path of a JSON value ("a.b[0].c").
void leaves(const Json& v, const std::string& at, std::vector<std::string>& out) {
  if (v.is_object() && !v.empty()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      leaves(*it, at.empty() ? it.key() : at + "." + it.key(), out);
  } else if (v.is_array() && !v.empty()) {
    for (size_t i = 0; i < v.size(); ++i)
      leaves(v[i], at + "[" + std::to_string(i) + "]", out);
  } else {
    out.push_back(at);
  }
}

// Whether a notice names `field` or an object holding it (" a.b " or " a.b;").
bool names_field_or_parent(const std::string& message, std::string field) {
  while (!field.empty()) {
    for (const char* end : {" ", ";"})
      if (message.find(" " + field + end) != std::string::npos) return true;
    const size_t dot = field.find_last_of('.');
    if (dot == std::string::npos) break;
    field.resize(dot);
  }
  return false;
}

// Each fixture directory is a ConfigMap as kubelet mounts it. Every key loads or is rejected
// as a whole (with the file named); every field of a loaded key is enforced or reported.
TEST(ConfigAudit, RealConfigMapsLoadWithEveryFieldAccountedFor) {
  const std::string root = testing::fixture_path("koordinator-config");
  int dirs = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().extension() == ".md") continue;
    const std::string dir = entry.path().parent_path().string();
    const std::string key = entry.path().filename().string();
    SCOPED_TRACE(dir + "/" + key);
    ++dirs;
    LoadResult loaded = load_config_dir(dir);
    const bool rejected = std::any_of(loaded.errors.begin(), loaded.errors.end(),
                                      [&](const KeyError& e) { return e.key == key; });
    if (dir.ends_with("basic-invalid-json")) {
      EXPECT_TRUE(rejected) << "a comment inside the JSON must reject the key";
      continue;
    }
    ASSERT_FALSE(rejected) << loaded.errors.front().error.message;
    std::vector<std::string> warned;
    for (const auto& w : loaded.warnings)
      if (w.key == key) warned.push_back(w.error.message);
    auto text = read_file(entry.path().string());
    ASSERT_TRUE(text.ok());
    std::vector<std::string> fields;
    leaves(Json::parse(*text), "", fields);
    for (const auto& field : fields) {
      std::string norm = field;
      for (size_t b = norm.find('['); b != std::string::npos; b = norm.find('[', b + 1))
        norm.replace(b, norm.find(']', b) - b + 1, "[]");
      const FieldLookup f = lookup_field(key, norm);
      const bool enforced = f.known && f.status == FieldStatus::kEnforced;
      const bool reported = std::any_of(warned.begin(), warned.end(), [&](const std::string& m) {
        return names_field_or_parent(m, field);
      });
      EXPECT_TRUE(enforced || reported) << field << " is neither enforced nor reported";
    }
  }
  EXPECT_GE(dirs, 10);
}

TEST(ConfigAudit, TheAckMemoryLocalityFieldIsUnknownToKoordinatorAndReported) {
  auto loaded =
      load_config_dir(testing::fixture_path("koordinator-config/ack-feature-docs/memory-locality"));
  ASSERT_EQ(loaded.warnings.size(), 1u);
  EXPECT_NE(
      loaded.warnings[0].error.message.find("unknown field clusterStrategy.lsClass.memoryLocality"),
      std::string::npos);
}

TEST(ConfigAudit, OtherFilesOfTheMountAreReportedButKubeletsOwnAreNot) {
  testing::TempDir dir;
  dir.write("colocation-config", R"({"enable": true})");
  dir.write("cpu-normalization-config", "{}");
  dir.write("..data", "");
  auto loaded = load_config_dir(dir.path());
  ASSERT_EQ(loaded.warnings.size(), 1u);
  EXPECT_EQ(loaded.warnings[0].key, "cpu-normalization-config");
}

}  // namespace
}  // namespace gleaner::agent::config
