#pragma once
// The ack-slo-config as kubelet mounts it: a directory with one file per data key.
// Loading is all-or-nothing per key: a key that fails to parse or validate keeps its
// previous value (the built-in defaults at start-up) and is reported; a missing file
// means the defaults for that key. Reload triggers (the ..data symlink swap, SIGHUP)
// belong to the daemon; this file offers the pure loader and a cheap change check.

#include <array>
#include <cstdint>
#include <map>
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

struct KeyError {
  std::string key;
  Error error;  // message names the file and the field
};

struct LoadResult {
  SloConfig config;
  std::vector<KeyError> errors;
  // Loaded, but not all as written: fields not enforced by this version, unknown fields
  // (with the closest known name), node strategies that fell back to the cluster's.
  std::vector<KeyError> warnings;
  std::vector<std::string> defaulted_keys;  // keys whose file is absent
};

// Loads every key from `dir`; a key that fails keeps its value from `previous`.
LoadResult load_config_dir(const std::string& dir, const SloConfig& previous);

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
  ConfigDirStamp stamp_;
  bool loaded_ = false;
};

}  // namespace gleaner::agent::config
