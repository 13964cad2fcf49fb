#include "agent/config/slo_config.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <string>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

#include "agent/config/config_audit.h"
#include "common/file_io.h"
#include "common/json_util.h"

namespace gleaner::agent::config {
namespace {

// Records the failure of `key`: `slot` keeps its last good value when the key ever had
// one, else it takes the key's safe fallback.
template <typename T>
void reject_key(const char* key, Error error, T& slot, const T& safe, LoadResult& out) {
  KeptValue kept = KeptValue::kLastGood;
  if (!out.good_keys.contains(key)) {
    slot = safe;
    kept = KeptValue::kSafeFallback;
  }
  out.errors.push_back({key, std::move(error), kept});
}

// Loads one key into `slot`: absent file -> defaults, failure -> reject_key.
template <typename T, typename Parse>
void load_key(const std::string& dir, const char* key, T& slot, const T& safe, Parse parse,
              LoadResult& out) {
  const std::string path = join_path(dir, key);
  auto text = read_file(path);
  if (!text) {
    if (text.error().code == ErrorCode::kNotFound) {
      slot = T{};
      out.defaulted_keys.emplace_back(key);
      out.good_keys.insert(key);
      return;
    }
    return reject_key(key, text.error(), slot, safe, out);
  }
  auto parsed = parse(*text, path);
  if (!parsed) return reject_key(key, parsed.error(), slot, safe, out);
  if constexpr (requires { parsed->warnings; }) {
    for (const auto& w : parsed->warnings)
      out.warnings.push_back({key, make_error(ErrorCode::kInvalidArgument, w)});
  }
  // Parsed, so the JSON is valid: every field accounted for.
  if (auto json = parse_json(*text, path)) {
    for (auto& notice : audit_key(key, *json)) {
      out.warnings.push_back(
          {key, make_error(ErrorCode::kInvalidArgument, path + ": " + notice.message)});
    }
  }
  slot = std::move(parsed).value();
  out.good_keys.insert(key);
}

}  // namespace

const char* to_string(KeptValue kept) {
  return kept == KeptValue::kLastGood ? "its last good version stays in force"
                                      : "never loaded: its safe fallback is in force";
}

SloConfig safe_fallback() {
  SloConfig safe;
  safe.threshold.cluster.enable = true;
  return safe;
}

LoadResult load_config_dir(const std::string& dir) {
  return load_config_dir(dir, SloConfig{}, {});
}

LoadResult load_config_dir(const std::string& dir, const SloConfig& previous,
                           const KeySet& good_before) {
  LoadResult out;
  out.config = previous;
  out.good_keys = good_before;
  const SloConfig safe = safe_fallback();
  load_key(dir, kColocationKey, out.config.colocation, safe.colocation, parse_colocation_config,
           out);
  load_key(dir, kThresholdKey, out.config.threshold, safe.threshold, parse_threshold_config, out);
  load_key(dir, kQoSKey, out.config.qos, safe.qos, parse_qos_config, out);
  load_key(dir, kCpuBurstKey, out.config.cpu_burst, safe.cpu_burst, parse_cpu_burst_config, out);
  load_key(dir, kSystemKey, out.config.system, safe.system, parse_system_config, out);
  // The other files of the mounted ConfigMap (kubelet's own entries start with "..").
  std::error_code ec;
  std::vector<std::string> others;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with("..") ||
        std::find(kConfigKeys.begin(), kConfigKeys.end(), name) != kConfigKeys.end())
      continue;
    others.push_back(std::move(name));
  }
  std::sort(others.begin(), others.end());
  for (const auto& name : others)
    out.warnings.push_back({name, make_error(ErrorCode::kInvalidArgument, audit_other_key(name))});
  return out;
}

ConfigDirStamp stamp_config_dir(const std::string& dir) {
  ConfigDirStamp stamp;
  std::array<char, 4096> buf{};
  const std::string data = join_path(dir, "..data");
  ssize_t n = ::readlink(data.c_str(), buf.data(), buf.size() - 1);
  if (n > 0) stamp.data_target.assign(buf.data(), static_cast<size_t>(n));
  for (const char* key : kConfigKeys) {
    struct stat st {};
    const std::string path = join_path(dir, key);
    if (::stat(path.c_str(), &st) != 0) {
      stamp.files.emplace_back(-1, -1);
      continue;
    }
    int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    stamp.files.emplace_back(mtime, static_cast<int64_t>(st.st_size));
  }
  return stamp;
}

std::vector<KeyError> ConfigLoader::reload() {
  // Stamp before reading: a change racing with the read is then seen by the next check.
  stamp_ = stamp_config_dir(dir_);
  LoadResult result = load_config_dir(dir_, current_, good_keys_);
  current_ = std::move(result.config);
  warnings_ = std::move(result.warnings);
  good_keys_ = std::move(result.good_keys);
  for (const auto& e : result.errors)
    ++errors_[e.key];
  loaded_ = true;
  errors_now_ = result.errors;
  return std::move(result.errors);
}

std::map<std::string, uint64_t> ConfigLoader::key_valid() const {
  std::map<std::string, uint64_t> valid;
  for (const char* key : kConfigKeys)
    valid[key] = 1;
  for (const auto& e : errors_now_)
    valid[e.key] = 0;
  return valid;
}

std::map<std::string, uint64_t> ConfigLoader::warning_counts() const {
  std::map<std::string, uint64_t> counts;
  for (const char* key : kConfigKeys)
    counts[key] = 0;
  for (const auto& w : warnings_)
    ++counts[w.key];
  return counts;
}

bool ConfigLoader::has_changed() const {
  return !loaded_ || stamp_config_dir(dir_) != stamp_;
}

uint64_t ConfigLoader::error_count(std::string_view key) const {
  auto it = errors_.find(std::string(key));
  return it == errors_.end() ? 0 : it->second;
}

}  // namespace gleaner::agent::config
