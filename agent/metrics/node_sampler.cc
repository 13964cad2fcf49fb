#include "agent/metrics/node_sampler.h"

#include <cmath>
#include <utility>

namespace gleaner::agent {

Result<int> count_cpus(const std::string& proc_root) {
  auto text = read_file(join_path(proc_root, "stat"));
  if (!text) return text.error();
  int cpus = 0;
  size_t pos = 0;
  while ((pos = text->find("\ncpu", pos)) != std::string::npos) {
    pos += 4;
    if (pos < text->size() && (*text)[pos] >= '0' && (*text)[pos] <= '9') ++cpus;
  }
  if (cpus == 0) return make_error(ErrorCode::kParse, proc_root + "/stat lists no CPUs");
  return cpus;
}

NodeSampler::NodeSampler(std::string proc_root, int cpus)
    : proc_root_(std::move(proc_root)), cpus_(cpus) {
  if (cpus_ <= 0) cpus_ = count_cpus(proc_root_).value_or(1);
}

bool NodeSampler::has_psi() const {
  return path_exists(join_path(proc_root_, "pressure/cpu"));
}

Result<NodeUsage> NodeSampler::sample() {
  if (!stat_.is_open()) {
    auto opened = OpenFile::open(join_path(proc_root_, "stat"));
    if (!opened) return opened.error();
    stat_ = std::move(*opened);
  }
  if (!meminfo_.is_open()) {
    auto opened = OpenFile::open(join_path(proc_root_, "meminfo"));
    if (!opened) return opened.error();
    meminfo_ = std::move(*opened);
  }
  auto stat_text = stat_.read();
  if (!stat_text) return stat_text.error();
  auto cpu = cgroup::parse_proc_stat_cpu(*stat_text);
  if (!cpu) return cpu.error();
  auto mem_text = meminfo_.read();
  if (!mem_text) return mem_text.error();
  auto mem = cgroup::parse_meminfo(*mem_text);
  if (!mem) return mem.error();

  NodeUsage out;
  out.memory_bytes = static_cast<int64_t>(mem->used_bytes());
  out.memory_total_bytes = static_cast<int64_t>(mem->total_bytes);
  if (last_ && cpu->total_ticks > last_->total_ticks) {
    // busy share of all CPUs' time since the last sample, scaled to millicores
    double busy = static_cast<double>(cpu->busy_ticks - last_->busy_ticks);
    double total = static_cast<double>(cpu->total_ticks - last_->total_ticks);
    out.cpu_milli = std::llround(busy / total * cpus_ * 1000.0);
    out.cpu_valid = true;
  }
  last_ = *cpu;
  if (auto psi_text = read_file(join_path(proc_root_, "pressure/cpu"))) {
    if (auto psi = cgroup::parse_psi(*psi_text)) out.cpu_pressure = *psi;
  }
  return out;
}

}  // namespace gleaner::agent
