// docs/configuration.md against the audit's own table of Koordinator's fields: every field
// of every key is named on the page; each one this version does not enforce is listed in
// that key's row of "Not enforced by this version", and no enforced one is.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "agent/config/config_audit.h"

namespace gleaner::agent::config {
namespace {

std::string page() {
  std::ifstream in(std::string(GLEANER_SOURCE_DIR) + "/docs/configuration.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The row of `key` in the "Not enforced" table: "| `key` | fields |".
std::string not_enforced_row(const std::string& doc, const std::string& key) {
  const size_t table = doc.find("## Not enforced by this version");
  if (table == std::string::npos) return "";
  const size_t row = doc.find("| `" + key + "` |", table);
  if (row == std::string::npos) return "";
  return doc.substr(row, doc.find('\n', row) - row);
}

std::string leaf(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

TEST(ConfigDocs, EveryKoordinatorFieldIsOnThePageWithItsStatus) {
  const std::string doc = page();
  ASSERT_FALSE(doc.empty());
  const std::string tables = doc.substr(0, doc.find("## Not enforced by this version"));
  for (const char* key : {"colocation-config", "resource-threshold-config", "resource-qos-config",
                          "cpu-burst-config", "system-config"}) {
    const std::string row = not_enforced_row(doc, key);
    const auto fields = koordinator_fields(key);
    ASSERT_FALSE(fields.empty()) << key;
    for (const auto& [path, status] : fields) {
      const std::string name = leaf(path);
      if (status == FieldStatus::kNotEnforced) {
        EXPECT_NE(row.find(name), std::string::npos)
            << key << ": " << path << " is not enforced but not in its row: " << row;
      } else {
        EXPECT_NE(tables.find(name + "`"), std::string::npos)
            << key << ": " << path << " is enforced but the page does not describe it";
        EXPECT_EQ(row.find("`" + name + "`"), std::string::npos)
            << key << ": " << path << " is enforced but listed as not enforced";
      }
    }
  }
}

}  // namespace
}  // namespace gleaner::agent::config
