#include "agent/metrics/fast_sampler.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "cgroup/parsers.h"

namespace gleaner::agent {

FastSampler::FastSampler(cgroup::CgroupFs& fs, const cgroup::KubeletLayout& layout,
                         const std::string& proc_root, int cpus, std::chrono::milliseconds window)
    : fs_(fs),
      kubepods_(layout.kubepods_dir()),
      besteffort_(layout.qos_dir(cgroup::KubeQos::kBestEffort)),
      proc_stat_path_(join_path(proc_root, "stat")),
      cpus_(cpus),
      window_(window) {}

std::optional<FastSample> FastSampler::sample(std::chrono::steady_clock::time_point now) {
  auto current = read(now);
  if (!current) return std::nullopt;
  std::optional<FastSample> out;
  if (last_ && current->at > last_->at) {
    // cgroup CPU counters move in scheduler ticks on each CPU, so a figure over a few
    // milliseconds (a sample a wake-up brought forward) would be mostly tick noise: it is
    // taken over at least kMinNonBeSpan, from an earlier sample where needed.
    const Counters* base = &*last_;
    for (auto it = history_.rbegin();
         it != history_.rend() && current->at - base->at < kMinNonBeSpan; ++it) {
      base = &*it;
    }
    const double elapsed_ns =
        std::chrono::duration<double, std::nano>(current->at - base->at).count();
    const double non_be_ns = static_cast<double>((current->kubepods_ns - base->kubepods_ns) -
                                                 (current->besteffort_ns - base->besteffort_ns));
    if (current->at - base->at >= kMinNonBeSpan || base == &*last_) {
      non_be_.emplace_back(now, non_be_ns > 0 ? std::llround(non_be_ns / elapsed_ns * 1000.0) : 0);
    }
    while (!non_be_.empty() && now - non_be_.front().first > window_)
      non_be_.pop_front();
    while (history_.size() > 1 && now - history_[1].at >= window_)
      history_.pop_front();

    const Counters& oldest = history_.empty() ? *last_ : history_.front();
    if (current->total_ticks > oldest.total_ticks) {
      FastSample s;
      const double busy = static_cast<double>(current->busy_ticks - oldest.busy_ticks);
      const double total = static_cast<double>(current->total_ticks - oldest.total_ticks);
      s.node_cpu_milli = std::llround(busy / total * cpus_ * 1000.0);
      for (const auto& [at, milli] : non_be_)
        s.non_be_cpu_milli = std::max(s.non_be_cpu_milli, milli);
      s.non_be_counted_milli = s.non_be_cpu_milli;
      std::erase_if(noted_, [now](const auto& n) { return n.first <= now; });
      for (const auto& [until, milli] : noted_)
        s.non_be_cpu_milli = std::max(s.non_be_cpu_milli, milli);
      out = s;
    }
  }
  if (history_.empty() && last_) history_.push_back(*last_);
  history_.push_back(*current);
  last_ = current;
  return out;
}

void FastSampler::note_non_be(std::chrono::steady_clock::time_point now, int64_t millicores,
                              std::chrono::milliseconds hold) {
  noted_.emplace_back(now + hold, millicores);
}

std::optional<FastSampler::Counters> FastSampler::read(std::chrono::steady_clock::time_point now) {
  if (!proc_stat_.is_open()) {
    auto opened = OpenFile::open(proc_stat_path_);
    if (!opened) return std::nullopt;
    proc_stat_ = std::move(*opened);
  }
  auto stat = proc_stat_.read();
  if (!stat) return std::nullopt;
  auto cpu = cgroup::parse_proc_stat_cpu(*stat);
  auto kubepods = fs_.read_cpu_usage_ns(kubepods_);
  auto besteffort = fs_.read_cpu_usage_ns(besteffort_);
  if (!cpu || !kubepods || !besteffort) return std::nullopt;
  return Counters{cpu->busy_ticks, cpu->total_ticks, *kubepods, *besteffort, now};
}

}  // namespace gleaner::agent
