#include "agent/step/be_ceiling.h"

#include <charconv>

#include "cgroup/parsers.h"
#include "cgroup/resource.h"

namespace gleaner::agent::step {

BeCeiling be_ceiling_read(const qos::KnobSnapshot& knobs, const std::string& be_qos_dir) {
  return {knobs.integer(cgroup::Resource::kCpuQuota, be_qos_dir),
          knobs.integer(cgroup::Resource::kCpuPeriod, be_qos_dir),
          knobs.ids(cgroup::Resource::kCpusetCpus, be_qos_dir)};
}

void note_be_write(BeCeiling& ceiling, cgroup::Resource resource, std::string_view logical_value) {
  if (resource == cgroup::Resource::kCpuQuota) {
    int64_t quota = 0;
    const char* end = logical_value.data() + logical_value.size();
    if (std::from_chars(logical_value.data(), end, quota).ptr == end) ceiling.quota_us = quota;
  } else if (resource == cgroup::Resource::kCpusetCpus) {
    if (auto cpus = cgroup::parse_cpu_list(logical_value); cpus.ok()) ceiling.cpus = *cpus;
  }
}

void note_be_file_write(BeCeiling& ceiling, const BeCeilingFiles& files, std::string_view path,
                        std::string_view content) {
  for (const auto& [resource, file] : {std::pair{cgroup::Resource::kCpuQuota, &files.quota},
                                       std::pair{cgroup::Resource::kCpusetCpus, &files.cpus}}) {
    if (file->empty() || path != *file) continue;
    if (auto logical = cgroup::logical_from_file(resource, files.version, content))
      note_be_write(ceiling, resource, *logical);
  }
}

}  // namespace gleaner::agent::step
