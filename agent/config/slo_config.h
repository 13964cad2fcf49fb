#pragma once
// The ack-slo-config as kubelet mounts it: a directory with one file per data key.
// Loading is all-or-nothing per key: a key that fails to parse or validate keeps its
// last good value and is reported; a key that never loaded (a bad file at start-up) gets
// its safe fallback instead, which never leaves BE unprotected (safe_fallback below); a
// missing file means the defaults for that key. Reload triggers (the ..data symlink swap, SIGHUP)
// belong to the daemon; this file offers the pure loader and a cheap change check.

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/config/burst_system_config.h"
#include "agent/config/colocation_config.h"
#include "agent/config/qos_config.h"
#include "agent/config/threshold_config.h"
#include "common/result.h"

namespace gleaner::agent::config {

inline constexpr const char* kColocationKey = "colocation-config";
inline constexpr const char* kThresholdKey = "resource-threshold-config";
inline constexpr const char* kQoSKey = "resource-qos-config";
inline constexpr const char* kCpuBurstKey = "cpu-burst-config";
inline constexpr const char* kSystemKey = "system-config";
inline constexpr std::array<const char*, 5> kConfigKeys = {kColocationKey, kThresholdKey, kQoSKey,
                                                           kCpuBurstKey, kSystemKey};

struct SloConfig {
  ColocationConfig colocation;
  ResourceThresholdConfig threshold;
  ResourceQoSConfig qos;
  CpuBurstConfig cpu_burst;
  SystemConfig system;
};

// What a rejected key leaves in force.
enum class KeptValue { kLastGood, kSafeFallback };
const char* to_string(KeptValue kept);

struct KeyError {
  std::string key;
  Error error;  // message names the file and the field
  KeptValue kept = KeptValue::kLastGood;
};

// The value a key takes when its file is bad and no good version was ever loaded. For
// resource-threshold-config that is the defaults with enable: true (suppression at 65%,
// memory eviction at 70%, Koordinator's default thresholds): its plain defaults turn
// suppression and eviction off, which with a colocation-config that offers batch capacity
// is the one unsafe reading of a typo. The other keys' defaults are safe as they are:
// colocation-config's offers no batch capacity, the others leave kubelet's settings.
SloConfig safe_fallback();

using KeySet = std::set<std::string, std::less<>>;

struct LoadResult {
  SloConfig config;
  std::vector<KeyError> errors;
  // Loaded, but not all as written: fields not enforced by this version, unknown fields
  // (with the closest known name), node strategies that fell back to the cluster's.
  std::vector<KeyError> warnings;
  std::vector<std::string> defaulted_keys;  // keys whose file is absent
  // Keys that loaded as written (or absent, so defaults) in this load or one before it.
  KeySet good_keys;
};

// First load, nothing in force yet: a key that fails gets its safe fallback.
LoadResult load_config_dir(const std::string& dir);
// Reload: a key that fails keeps its value from `previous` when it is in `good_before`
// (it loaded once), else it gets its safe fallback.
LoadResult load_config_dir(const std::string& dir, const SloConfig& previous,
                           const KeySet& good_before);

// What a reload would see: the target of `..data` and each key file's mtime and size.
struct ConfigDirStamp {
  std::string data_target;
  std::vector<std::pair<int64_t, int64_t>> files;  // (mtime ns, size), -1 when absent
  friend bool operator==(const ConfigDirStamp&, const ConfigDirStamp&) = default;
};
ConfigDirStamp stamp_config_dir(const std::string& dir);

// Holds the current config of one directory and counts rejected loads per key (the
// daemon exports the counters as a Prometheus metric).
class ConfigLoader {
 public:
  // Every key's counter exists from the start at 0: a counter that first appears at 1
  // hides its first error from increase() (and so from the alert on it).
  explicit ConfigLoader(std::string dir) : dir_(std::move(dir)) {
    for (const char* key : kConfigKeys)
      errors_[key] = 0;
  }

  // Reloads from disk; returns the errors of this load (each is also counted).
  std::vector<KeyError> reload();
  // The errors of the last reload: the keys whose file is not what is in force.
  [[nodiscard]] const std::vector<KeyError>& errors() const { return errors_now_; }
  // 1 per key whose file is in force as written (or absent), 0 per key rejected now.
  [[nodiscard]] std::map<std::string, uint64_t> key_valid() const;
  // The warnings of the last reload (the config in force), and their count per key.
  [[nodiscard]] const std::vector<KeyError>& warnings() const { return warnings_; }
  [[nodiscard]] std::map<std::string, uint64_t> warning_counts() const;
  // True when the directory changed since the last reload (or none happened yet).
  [[nodiscard]] bool has_changed() const;

  [[nodiscard]] const SloConfig& current() const { return current_; }
  [[nodiscard]] uint64_t error_count(std::string_view key) const;
  [[nodiscard]] const std::map<std::string, uint64_t>& error_counts() const { return errors_; }

 private:
  std::string dir_;
  SloConfig current_;
  std::map<std::string, uint64_t> errors_;
  std::vector<KeyError> warnings_;
  std::vector<KeyError> errors_now_;
  KeySet good_keys_;
  ConfigDirStamp stamp_;
  bool loaded_ = false;
};

}  // namespace gleaner::agent::config
