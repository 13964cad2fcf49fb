// The frontier benchmark's report: a table per service with the run's A/A floor and baseline,
// the goal check, and the chart.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include <unistd.h>

#include "bench/frontier/frontier_points.h"

namespace gleaner::bench::frontier {
namespace {

std::vector<BeMix> mixes_of(const std::vector<Point>& points) {
  std::vector<BeMix> out;
  for (const auto& p : points)
    if (std::find(out.begin(), out.end(), p.mix) == out.end()) out.push_back(p.mix);
  return out;
}

// `text` as a single-quoted gnuplot string (a quote inside is written twice).
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

std::string interval(const RatioEstimate& r) {
  if (r.rounds == 0) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f [%.2f-%.2f]", r.ratio, r.low, r.high);
  return text;
}

std::string spread(const CostSignal& s) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f (%.1f-%.1f)", s.value, s.min, s.max);
  return text;
}

// Where a ratio lies against its own A/A floor: "up" or "down" only when its whole interval is
// on that side of 1 and the estimate is beyond the floor.
const char* movement(const RatioEstimate& r, const RatioEstimate& aa) {
  switch (judge(r, aa_floor(aa), true)) {
    case Verdict::kWorse:
      return "up";
    case Verdict::kBetter:
      return "down";
    case Verdict::kIndistinguishable:
      return "within A/A";
    case Verdict::kNoVerdict:
      break;
  }
  return "-";
}

std::string label_of(const Point& p) {
  std::string label = to_string(p.family);
  if (p.setting > 0) label.append(" ").append(setting_label(p));
  return label;
}

// The shipped mode's points: slo at the default target when measured, else any slo point.
std::vector<const Point*> shipped_points(const MixResult& m) {
  std::vector<const Point*> out;
  for (const auto& p : m.points)
    if (p.family == Family::kGleanerSlo) out.push_back(&p);
  return out;
}

void print_run_line(const MixResult& m) {
  std::printf(
      "- BE %s: seed %llu, %d rounds; LS-alone p99 %.2f-%.2f ms over its windows (%.2fx): %s",
      to_string(m.mix), static_cast<unsigned long long>(m.seed),
      m.points.empty() ? 0 : m.points.front().rounds, m.baseline.min_p99, m.baseline.max_p99,
      m.baseline.spread, m.baseline.valid ? "a baseline to judge by" : "INVALID RUN, no verdict");
  if (!m.baseline.valid) std::printf(" (%s)", m.baseline.why.c_str());
  std::printf(
      "; A/A (LS alone against LS alone) %s, so ratios within %.2fx of 1 are "
      "indistinguishable\n",
      interval(m.aa).c_str(), m.floor);
}

}  // namespace

void print_table(ServiceKind kind, const std::vector<MixResult>& mixes) {
  std::printf("### %s\n\n", to_string(kind));
  for (const auto& m : mixes)
    print_run_line(m);
  std::printf(
      "\n| BE | configuration | setting | LS p50 (ms) | LS p99 (ms, min-max) | p99 / alone "
      "[95%%] | BE share of idle CPU | p99 / kubelet only [95%%] | against kubelet only | BE "
      "throttled (periods/s, ms/s) | LS run-queue wait (us/request) | LS CPU/request (us, "
      "min-max) | CPU/request / alone [95%%] | LS CPU/run (us, min-max) | CPU/run / alone "
      "[95%%] | LS CPU/blocking run (us, min-max) | CPU/blocking run / alone [95%%] | LS "
      "runs/request | agent CPU (%% of a core) | knob writes/s | requests (late, "
      "failed) |\n");
  std::printf(
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& m : mixes) {
    for (const auto& p : m.points) {
      std::printf(
          "| %s | %s | %s | %.2f | %.2f (%.2f-%.2f) | %s | %.2f | %s | %s | %.1f, %.1f | %.1f | "
          "%s | %s | %s | %s | %s | %s | %.2f | %.2f | %.1f | %lld (%lld, %lld) |\n",
          to_string(m.mix), to_string(p.family), setting_label(p).c_str(), p.p50_ms, p.p99_ms,
          p.p99_min_ms, p.p99_max_ms, interval(p.vs_alone).c_str(), p.be_share_of_idle,
          interval(p.vs_kubelet).c_str(),
          p.family == Family::kKubelet ? "-" : to_string(p.verdict_vs_kubelet),
          p.be_throttled_per_s, p.be_throttled_ms_per_s, p.ls_wait_us_per_request,
          spread(p.cpu_us_per_request).c_str(), interval(p.cpu_us_per_request.vs_alone).c_str(),
          spread(p.cpu_us_per_run).c_str(), interval(p.cpu_us_per_run.vs_alone).c_str(),
          spread(p.cpu_us_per_block).c_str(), interval(p.cpu_us_per_block.vs_alone).c_str(),
          p.runs_per_request, p.agent_cpu_percent, p.writes_per_s, static_cast<long long>(p.sent),
          static_cast<long long>(p.late), static_cast<long long>(p.failed));
    }
  }
  std::printf("\n");
  for (const auto& m : mixes) {
    for (const Point* s : shipped_points(m)) {
      const Point* kubelet = nullptr;
      for (const auto& p : m.points)
        if (p.family == Family::kKubelet) kubelet = &p;
      std::printf("- BE %s, %s against kubelet only: LS p99 %s (%s), harvest %.0f%%",
                  to_string(m.mix), label_of(*s).c_str(), interval(s->vs_kubelet).c_str(),
                  to_string(s->verdict_vs_kubelet), 100 * s->be_share_of_idle);
      if (kubelet != nullptr) std::printf(" against %.0f%%", 100 * kubelet->be_share_of_idle);
      std::printf("\n");
    }
  }
  std::printf("\n");
}

void print_signals(ServiceKind kind, const std::vector<MixResult>& mixes) {
  struct Named {
    const char* name;
    CostSignal Point::*signal;
  };
  constexpr Named kSignals[] = {{"CPU/request", &Point::cpu_us_per_request},
                                {"CPU/run", &Point::cpu_us_per_run},
                                {"CPU/blocking run", &Point::cpu_us_per_block}};
  for (const auto& m : mixes) {
    const Point* twin = nullptr;
    for (const auto& p : m.points)
      if (p.family == Family::kAloneTwin) twin = &p;
    if (twin == nullptr) continue;
    std::printf("- %s, BE %s%s, against LS alone (A/A floor): p99 %s (%.2fx)", to_string(kind),
                to_string(m.mix), m.baseline.valid ? "" : " (INVALID RUN)",
                interval(twin->vs_alone).c_str(), m.floor);
    for (const auto& [name, signal] : kSignals) {
      const RatioEstimate& aa = (twin->*signal).vs_alone;
      std::printf(", %s %s (%.2fx)", name, interval(aa).c_str(), aa_floor(aa));
    }
    for (const auto& p : m.points) {
      if (p.family == Family::kAlone || p.family == Family::kAloneTwin) continue;
      std::printf("; %s: p99 %s %s", label_of(p).c_str(), interval(p.vs_alone).c_str(),
                  movement(p.vs_alone, twin->vs_alone));
      for (const auto& [name, signal] : kSignals) {
        const RatioEstimate& r = (p.*signal).vs_alone;
        std::printf(", %s %s %s", name, interval(r).c_str(), movement(r, (twin->*signal).vs_alone));
      }
    }
    std::printf("\n");
  }
}

void print_summary(ServiceKind kind, const std::vector<MixResult>& mixes) {
  for (const auto& m : mixes) {
    double alone = 0;
    for (const auto& p : m.points)
      if (p.family == Family::kAlone) alone = p.p99_ms;
    std::printf(
        "- %s, BE %s (LS alone p99 %.2f ms, A/A floor %.2fx%s), best harvest at p99 <= 1.1x alone:",
        to_string(kind), to_string(m.mix), alone, m.floor, m.baseline.valid ? "" : ", INVALID RUN");
    for (Family family : kFamilies) {
      if (family == Family::kAlone || family == Family::kAloneTwin) continue;
      const Point* best = nullptr;
      bool measured = false;
      for (const auto& p : m.points) {
        if (p.family != family) continue;
        measured = true;
        if (p.vs_alone.ratio > 1.1) continue;
        if (best == nullptr || p.be_share_of_idle > best->be_share_of_idle) best = &p;
      }
      if (!measured) continue;
      if (best == nullptr) {
        std::printf(" %s none;", to_string(family));
      } else {
        std::printf(" %s %.0f%% (%s, node %.0f%%%s);", to_string(family),
                    100 * best->be_share_of_idle, interval(best->vs_alone).c_str(),
                    100 * best->node_utilisation,
                    best->setting > 0 ? (", " + setting_label(*best)).c_str() : "");
      }
    }
    if (m.floor > 1.1) std::printf(" (the A/A floor is above 1.1x: this run cannot resolve 1.1x)");
    std::printf("\n");
  }
}

Chart write_chart(ServiceKind kind, const std::vector<Point>& points, const std::string& dir) {
  const std::string name = std::string("frontier-") + to_string(kind);
  const std::string dat = dir + "/" + name + ".dat";
  std::ofstream out(dat);
  out << "# " << to_string(kind) << ": BE share of idle CPU, LS p99 / LS-alone p99, threshold\n";
  const auto mixes = mixes_of(points);
  for (BeMix mix : mixes) {
    for (Family family : kFamilies) {
      std::vector<const Point*> series;
      for (const auto& p : points)
        if (p.mix == mix && p.family == family) series.push_back(&p);
      std::sort(series.begin(), series.end(), [](const Point* a, const Point* b) {
        return a->be_share_of_idle < b->be_share_of_idle;
      });
      // Every point, then the family's frontier: the points no other of its points beats
      // on both harvest and latency.
      out << "# " << to_string(mix) << " / " << to_string(family) << ": points\n";
      for (const Point* p : series)
        out << p->be_share_of_idle << " " << p->vs_alone.ratio << " " << p->setting << "\n";
      if (series.empty()) out << "NaN NaN 0\n";  // keeps the index numbering
      out << "\n\n# " << to_string(mix) << " / " << to_string(family) << ": frontier\n";
      std::vector<const Point*> frontier;
      double best = 1e300;
      for (auto it = series.rbegin(); it != series.rend(); ++it) {
        if ((*it)->vs_alone.ratio < best) {
          best = (*it)->vs_alone.ratio;
          frontier.insert(frontier.begin(), *it);
        }
      }
      for (const Point* p : frontier)
        out << p->be_share_of_idle << " " << p->vs_alone.ratio << " " << p->setting << "\n";
      if (frontier.empty()) out << "NaN NaN 0\n";
      out << "\n\n";
    }
  }
  out.close();
  if (::access("/usr/bin/gnuplot", X_OK) != 0) {
    std::fprintf(stderr, "frontier_bench: gnuplot not installed; %s has the points\n", dat.c_str());
    return Chart::kNoGnuplot;
  }
  const std::string script = dir + "/" + name + ".gp";
  std::ofstream gp(script);
  gp << "set terminal pngcairo size " << 560 * mixes.size() << ",520 font 'sans,10'\n"
     << "set output " << quoted(dir + "/" + name + ".png") << "\n"
     << "set multiplot layout 1," << mixes.size() << " title "
     << quoted(std::string(to_string(kind)) +
               ": harvest against LS tail latency (lower right is better; lines: the frontier "
               "of each agent)")
     << "\n"
     << "set xlabel 'BE share of the CPU nobody else used'\nset ylabel 'LS p99 / LS-alone p99'\n"
     << "set key below\nset grid\nset xrange [0:1]\n";
  // One colour per family, in kFamilies' order; the configurations without an agent are
  // points, the agents' frontiers also lines.
  constexpr const char* kColours[] = {"black",     "gray60",    "gray40",     "purple", "brown",
                                      "orange",    "skyblue",   "dark-green", "red",    "magenta",
                                      "dark-cyan", "goldenrod", "dark-red"};
  static_assert(std::size(kColours) == std::size(kFamilies), "a colour for every family");
  for (size_t m = 0; m < mixes.size(); ++m) {
    gp << "set title 'BE: stress-ng " << to_string(mixes[m]) << "'\nplot ";
    for (size_t f = 0; f < std::size(kFamilies); ++f) {
      const size_t index = (m * std::size(kFamilies) + f) * 2;
      gp << (f ? ", " : "") << quoted(dat) << " index " << index << " using 1:2 with points "
         << "lw 2 pt " << 5 + 2 * (f % 6) << " ps 1.2 lc rgb '" << kColours[f] << "' title "
         << quoted(to_string(kFamilies[f]));
      if (runs_agent(kFamilies[f])) {  // the agents' frontiers as lines
        gp << ", " << quoted(dat) << " index " << index + 1 << " using 1:2 with lines lw 2 lc rgb '"
           << kColours[f] << "' notitle";
      }
    }
    gp << "\n";
  }
  gp << "unset multiplot\n";
  gp.close();
  const std::string cmd = "/usr/bin/gnuplot '" + script + "'";
  if (std::system(cmd.c_str()) != 0) {  // NOLINT(concurrency-mt-unsafe): no other thread forks
    std::fprintf(stderr, "frontier_bench: gnuplot failed on %s\n", script.c_str());
    return Chart::kFailed;
  }
  return Chart::kDrawn;
}

}  // namespace gleaner::bench::frontier
